// GGUF writer -> reader round trips, typed getters, value rendering, and the real vocabulary
// files in ../shared/testdata/vocab (expected values read from those files independently).
#include "io/gguf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

namespace herd {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

GgufValue Scalar(GgufType type) {
  GgufValue v;
  v.type = type;
  return v;
}

GgufValue UnsignedV(GgufType type, uint64_t u) {
  GgufValue v = Scalar(type);
  v.u = u;
  return v;
}

GgufValue SignedV(GgufType type, int64_t i) {
  GgufValue v = Scalar(type);
  v.i = i;
  return v;
}

GgufValue FloatV(GgufType type, double f) {
  GgufValue v = Scalar(type);
  v.f = f;
  return v;
}

GgufValue ArrayV(GgufType elem, std::vector<GgufValue> items) {
  GgufValue v = Scalar(GgufType::kArray);
  v.array_type = elem;
  v.array = std::move(items);
  return v;
}

// Deep equality of the members that `type` uses.
void ExpectSameValue(const GgufValue& a, const GgufValue& b, const std::string& where) {
  ASSERT_EQ(a.type, b.type) << where;
  switch (a.type) {
    case GgufType::kUint8:
    case GgufType::kUint16:
    case GgufType::kUint32:
    case GgufType::kUint64: EXPECT_EQ(a.u, b.u) << where; break;
    case GgufType::kInt8:
    case GgufType::kInt16:
    case GgufType::kInt32:
    case GgufType::kInt64: EXPECT_EQ(a.i, b.i) << where; break;
    case GgufType::kFloat32:
    case GgufType::kFloat64: EXPECT_EQ(a.f, b.f) << where; break;
    case GgufType::kBool: EXPECT_EQ(a.b, b.b) << where; break;
    case GgufType::kString: EXPECT_EQ(a.str, b.str) << where; break;
    case GgufType::kArray:
      EXPECT_EQ(a.array_type, b.array_type) << where;
      ASSERT_EQ(a.array.size(), b.array.size()) << where;
      for (size_t k = 0; k < a.array.size(); ++k)
        ExpectSameValue(a.array[k], b.array[k], where + "[" + std::to_string(k) + "]");
      break;
  }
}

std::vector<std::pair<std::string, GgufValue>> EveryValueType() {
  std::vector<std::pair<std::string, GgufValue>> kv;
  kv.emplace_back("u8", UnsignedV(GgufType::kUint8, 255));
  kv.emplace_back("i8", SignedV(GgufType::kInt8, -128));
  kv.emplace_back("u16", UnsignedV(GgufType::kUint16, 65535));
  kv.emplace_back("i16", SignedV(GgufType::kInt16, -32768));
  kv.emplace_back("u32", GgufValue::U32(4294967295u));
  kv.emplace_back("i32", GgufValue::I32(std::numeric_limits<int32_t>::min()));
  kv.emplace_back("f32", GgufValue::F32(1e-5f));
  kv.emplace_back("bool", GgufValue::Bool(true));
  kv.emplace_back("str", GgufValue::Str(std::string("h\xc3\xa9llo\0w\n", 9)));
  kv.emplace_back("empty_str", GgufValue::Str(""));
  kv.emplace_back("u64", GgufValue::U64(std::numeric_limits<uint64_t>::max()));
  kv.emplace_back("i64", SignedV(GgufType::kInt64, std::numeric_limits<int64_t>::min()));
  kv.emplace_back("f64", FloatV(GgufType::kFloat64, M_PI));
  kv.emplace_back("arr_u8", ArrayV(GgufType::kUint8, {UnsignedV(GgufType::kUint8, 1), UnsignedV(GgufType::kUint8, 2)}));
  kv.emplace_back("arr_i16", ArrayV(GgufType::kInt16, {SignedV(GgufType::kInt16, -7)}));
  kv.emplace_back("arr_f64",
                  ArrayV(GgufType::kFloat64, {FloatV(GgufType::kFloat64, 0.25), FloatV(GgufType::kFloat64, -1e300)}));
  kv.emplace_back("arr_bool", ArrayV(GgufType::kBool, {GgufValue::Bool(false), GgufValue::Bool(true)}));
  kv.emplace_back("arr_u64", ArrayV(GgufType::kUint64, {GgufValue::U64(1ull << 40)}));
  kv.emplace_back("arr_i64", ArrayV(GgufType::kInt64, {SignedV(GgufType::kInt64, -(1ll << 40))}));
  kv.emplace_back("arr_str", GgufValue::StrArray({"a", "", "c d"}));
  kv.emplace_back("arr_f32", GgufValue::F32Array({0.5f, -2.0f}));
  kv.emplace_back("arr_i32", GgufValue::I32Array({1, -1, 7}));
  kv.emplace_back("arr_empty", ArrayV(GgufType::kUint32, {}));
  kv.emplace_back("arr_arr_i32", ArrayV(GgufType::kArray, {GgufValue::I32Array({1, 2}), GgufValue::I32Array({}),
                                                           GgufValue::I32Array({3})}));
  kv.emplace_back("arr_arr_arr_str",
                  ArrayV(GgufType::kArray, {ArrayV(GgufType::kArray, {GgufValue::StrArray({"x", "y"})})}));
  return kv;
}

TEST(GgufRoundTrip, EveryValueType) {
  GgufWriter w;
  auto kv = EveryValueType();
  for (const auto& [k, v] : kv) w.Set(k, v);
  auto file = GgufFile::FromBytes(w.WriteToBytes(), "rt.gguf");
  ASSERT_TRUE(file.ok()) << file.status().message();
  const GgufFile& f = **file;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_TRUE(f.tensors().empty());
  ASSERT_EQ(f.metadata().size(), kv.size());
  for (size_t k = 0; k < kv.size(); ++k) {
    EXPECT_EQ(f.metadata()[k].first, kv[k].first);  // order preserved
    ExpectSameValue(f.metadata()[k].second, kv[k].second, kv[k].first);
    ASSERT_NE(f.Find(kv[k].first), nullptr);
  }
  EXPECT_EQ(f.Find("nope"), nullptr);
  EXPECT_FALSE(f.Has("nope"));
}

TEST(GgufRoundTrip, SetReplacesExistingKey) {
  GgufWriter w;
  w.Set("a", GgufValue::U32(1));
  w.Set("b", GgufValue::U32(2));
  w.Set("a", GgufValue::Str("x"));
  auto file = GgufFile::FromBytes(w.WriteToBytes());
  ASSERT_TRUE(file.ok()) << file.status().message();
  ASSERT_EQ((*file)->metadata().size(), 2u);
  EXPECT_EQ((*file)->metadata()[0].first, "a");
  EXPECT_EQ(*(*file)->GetString("a"), "x");
}

struct TensorSpec {
  std::string name;
  DType type;
  std::vector<int64_t> ne;
};

uint8_t Pattern(size_t tensor, uint64_t k) { return static_cast<uint8_t>(k * 31 + tensor * 7 + 1); }

void CheckTensorRoundTrip(uint32_t alignment, bool through_file) {
  const std::vector<TensorSpec> specs = {
      {"f32", DType::kF32, {3, 5}},          {"f16", DType::kF16, {7}},
      {"bf16", DType::kBF16, {2, 3}},        {"q4_0", DType::kQ4_0, {64, 3}},
      {"q8_0", DType::kQ8_0, {32, 2, 2, 2}}, {"q4_k", DType::kQ4_K, {256, 2}},
      {"q6_k", DType::kQ6_K, {512, 1, 3}},   {"q5_1", DType::kQ5_1, {32}},
  };
  GgufWriter w;
  w.Set("general.architecture", GgufValue::Str("llama"));
  if (alignment != 0) w.SetAlignment(alignment);
  for (size_t t = 0; t < specs.size(); ++t) {
    w.AddTensor(specs[t].name, specs[t].type, specs[t].ne, [t](uint8_t* dst, uint64_t bytes) {
      for (uint64_t k = 0; k < bytes; ++k) dst[k] = Pattern(t, k);
    });
  }
  std::unique_ptr<GgufFile> file;
  if (through_file) {
    std::string path = ::testing::TempDir() + "/herd_gguf_rt_" + std::to_string(alignment) + ".gguf";
    Status s = w.Write(path);
    ASSERT_TRUE(s.ok()) << s.message();
    auto r = GgufFile::Open(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    file = std::move(r).value();
    EXPECT_EQ(file->path(), path);
    std::remove(path.c_str());  // the mapping stays valid
  } else {
    auto r = GgufFile::FromBytes(w.WriteToBytes());
    ASSERT_TRUE(r.ok()) << r.status().message();
    file = std::move(r).value();
  }
  const uint64_t align = alignment == 0 ? 32 : alignment;
  EXPECT_EQ(file->alignment(), align);
  EXPECT_EQ(file->data_offset() % align, 0u);
  if (alignment != 0) {
    EXPECT_EQ(*file->GetU32("general.alignment"), alignment);
  }
  ASSERT_EQ(file->tensors().size(), specs.size());
  uint64_t last_end = 0;
  for (size_t t = 0; t < specs.size(); ++t) {
    const GgufTensorInfo& info = file->tensors()[t];
    EXPECT_EQ(info.name, specs[t].name);
    EXPECT_EQ(info.type, specs[t].type);
    EXPECT_EQ(info.ne, specs[t].ne);
    EXPECT_EQ(info.offset % align, 0u);
    int64_t rows = 1;
    for (size_t d = 1; d < specs[t].ne.size(); ++d) rows *= specs[t].ne[d];
    const DTypeTraits& tr = Traits(specs[t].type);
    EXPECT_EQ(info.bytes, static_cast<uint64_t>(rows * (specs[t].ne[0] / tr.block_size)) * tr.type_size);
    EXPECT_EQ(file->FindTensor(specs[t].name), &info);
    const uint8_t* data = file->TensorData(info);
    for (uint64_t k = 0; k < info.bytes; ++k) ASSERT_EQ(data[k], Pattern(t, k)) << info.name << " byte " << k;
    TensorView v = file->View(info);
    EXPECT_EQ(v.type, info.type);
    EXPECT_EQ(v.data, data);
    EXPECT_EQ(v.bytes(), info.bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % std::min<uint64_t>(align, 16), 0u);
    last_end = file->data_offset() + info.offset + info.bytes;
  }
  EXPECT_EQ(last_end, file->file_size());  // the last tensor ends the file
  EXPECT_EQ(file->View(*file->FindTensor("q6_k")).ShapeString(), "[3, 1, 512]");
  EXPECT_EQ(file->View(*file->FindTensor("f16")).ShapeString(), "[7]");
  EXPECT_EQ(file->FindTensor("missing"), nullptr);
}

TEST(GgufRoundTrip, TensorsDefaultAlignmentInMemory) { CheckTensorRoundTrip(0, false); }
TEST(GgufRoundTrip, TensorsAlignment64ThroughFile) { CheckTensorRoundTrip(64, true); }
TEST(GgufRoundTrip, TensorsAlignment1) { CheckTensorRoundTrip(1, false); }
TEST(GgufRoundTrip, TensorsDefaultAlignmentThroughFile) { CheckTensorRoundTrip(0, true); }

TEST(GgufOpen, MissingFileIsNotFound) {
  auto r = GgufFile::Open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), StartsWith("/nonexistent/dir/model.gguf"));
}

TEST(GgufOpen, DirectoryIsAnError) {
  auto r = GgufFile::Open(::testing::TempDir());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("not a regular file"));
}

TEST(GgufWriter, WriteToUnwritablePathFails) {
  GgufWriter w;
  Status s = w.Write("/nonexistent/dir/out.gguf");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), StartsWith("/nonexistent/dir/out.gguf: cannot create"));
}

class GgufGetters : public ::testing::Test {
 protected:
  void SetUp() override {
    GgufWriter w;
    for (auto& [k, v] : EveryValueType()) w.Set(k, v);
    w.Set("small_i64", SignedV(GgufType::kInt64, 1234));
    w.Set("neg_i32", GgufValue::I32(-3));
    w.Set("u32_array_big", ArrayV(GgufType::kUint32, {GgufValue::U32(5), GgufValue::U32(3000000000u)}));
    w.Set("u8_array", ArrayV(GgufType::kUint8, {UnsignedV(GgufType::kUint8, 200)}));
    auto r = GgufFile::FromBytes(w.WriteToBytes(), "g.gguf");
    ASSERT_TRUE(r.ok()) << r.status().message();
    f_ = std::move(r).value();
  }
  std::unique_ptr<GgufFile> f_;
};

TEST_F(GgufGetters, Integers) {
  EXPECT_EQ(*f_->GetU32("u8"), 255u);
  EXPECT_EQ(*f_->GetU32("u32"), 4294967295u);
  EXPECT_EQ(*f_->GetU32("small_i64"), 1234u);
  EXPECT_THAT(f_->GetU32("neg_i32").status().message(), HasSubstr("key 'neg_i32' value -3 does not fit in u32"));
  EXPECT_THAT(f_->GetU32("u64").status().message(), HasSubstr("does not fit in u32"));
  EXPECT_THAT(f_->GetU32("str").status().message(), HasSubstr("g.gguf: key 'str' has type str, expected an integer"));
  EXPECT_THAT(f_->GetU32("f32").status().message(), HasSubstr("has type f32"));
  EXPECT_EQ(*f_->GetI64("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*f_->GetI64("u32"), 4294967295);
  EXPECT_EQ(*f_->GetI64("i8"), -128);
  EXPECT_THAT(f_->GetI64("u64").status().message(), HasSubstr("does not fit in i64"));
  auto missing = f_->GetU32("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "g.gguf: missing key 'nope'");
  EXPECT_EQ(*f_->GetU32Or("nope", 77), 77u);
  EXPECT_EQ(*f_->GetU32Or("u16", 77), 65535u);
  EXPECT_FALSE(f_->GetU32Or("str", 77).ok());  // present with the wrong type is still an error
}

TEST_F(GgufGetters, FloatsBoolsStrings) {
  EXPECT_EQ(*f_->GetF32("f32"), 1e-5f);
  EXPECT_EQ(*f_->GetF32("f64"), static_cast<float>(M_PI));
  EXPECT_EQ(*f_->GetF32("neg_i32"), -3.0f);
  EXPECT_THAT(f_->GetF32("bool").status().message(), HasSubstr("has type bool, expected a number"));
  EXPECT_EQ(*f_->GetF32Or("nope", 0.5f), 0.5f);
  EXPECT_EQ(*f_->GetF32Or("f32", 0.5f), 1e-5f);
  EXPECT_TRUE(*f_->GetBool("bool"));
  EXPECT_THAT(f_->GetBool("u8").status().message(), HasSubstr("has type u8, expected bool"));
  EXPECT_EQ(*f_->GetString("str"), std::string("h\xc3\xa9llo\0w\n", 9));
  EXPECT_EQ(*f_->GetString("empty_str"), "");
  EXPECT_THAT(f_->GetString("arr_str").status().message(), HasSubstr("has type arr[str,3], expected str"));
}

TEST_F(GgufGetters, Arrays) {
  EXPECT_EQ(*f_->GetStringArray("arr_str"), (std::vector<std::string>{"a", "", "c d"}));
  EXPECT_THAT(f_->GetStringArray("arr_i32").status().message(), HasSubstr("expected arr[str]"));
  EXPECT_EQ(*f_->GetF32Array("arr_f32"), (std::vector<float>{0.5f, -2.0f}));
  EXPECT_EQ(*f_->GetF32Array("arr_i32"), (std::vector<float>{1, -1, 7}));
  EXPECT_THAT(f_->GetF32Array("arr_str").status().message(), HasSubstr("expected an array of numbers"));
  EXPECT_THAT(f_->GetF32Array("u32").status().message(), HasSubstr("expected an array of numbers"));
  EXPECT_EQ(*f_->GetI32Array("arr_i32"), (std::vector<int32_t>{1, -1, 7}));
  EXPECT_EQ(*f_->GetI32Array("u8_array"), (std::vector<int32_t>{200}));
  EXPECT_TRUE(f_->GetI32Array("arr_empty")->empty());
  EXPECT_THAT(f_->GetI32Array("u32_array_big").status().message(),
              HasSubstr("key 'u32_array_big' item 1 value 3000000000 does not fit in i32"));
  EXPECT_THAT(f_->GetI32Array("arr_f32").status().message(), HasSubstr("expected an array of integers"));
  EXPECT_THAT(f_->GetI32Array("arr_arr_i32").status().message(), HasSubstr("has type arr[arr[i32,2],3]"));
}

TEST(GgufValueText, ScalarsAndStrings) {
  EXPECT_EQ(GgufValue::U32(7).ToString(), "7");
  EXPECT_EQ(GgufValue::I32(-7).ToString(), "-7");
  EXPECT_EQ(GgufValue::F32(1e-5f).ToString(), "1e-05");
  EXPECT_EQ(GgufValue::F32(0.1f).ToString(), "0.1");
  EXPECT_EQ(FloatV(GgufType::kFloat64, 0.1).ToString(), "0.1");
  EXPECT_EQ(GgufValue::Bool(false).ToString(), "false");
  EXPECT_EQ(GgufValue::Str("a\"b\\c\n\x01").ToString(), "\"a\\\"b\\\\c\\n\\x01\"");
  EXPECT_EQ(GgufValue::Str("abcdef").ToString(8, 3), "\"abc\"... (6 bytes)");
  EXPECT_EQ(GgufValue::Str("h\xc3\xa9").ToString(), "\"h\xc3\xa9\"");
}

TEST(GgufValueText, ArraysAreAbbreviated) {
  std::vector<int32_t> ten = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(GgufValue::I32Array(ten).ToString(3), "[0, 1, 2, ... (10 items)]");
  EXPECT_EQ(GgufValue::I32Array(ten).ToString(10), "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]");
  EXPECT_EQ(GgufValue::I32Array(ten).ToString(0), "[... (10 items)]");
  EXPECT_EQ(GgufValue::I32Array({}).ToString(), "[]");
  EXPECT_EQ(GgufValue::StrArray({"a", "b"}).ToString(), "[\"a\", \"b\"]");
  GgufValue nested = ArrayV(GgufType::kArray, {GgufValue::I32Array({1, 2}), GgufValue::I32Array({3, 4})});
  EXPECT_EQ(nested.ToString(), "[[1, 2], [3, 4]]");
  EXPECT_EQ(nested.TypeString(), "arr[arr[i32,2],2]");
  EXPECT_EQ(GgufValue::StrArray({"a"}).TypeString(), "arr[str,1]");
  EXPECT_EQ(ArrayV(GgufType::kUint16, {}).TypeString(), "arr[u16,0]");
  EXPECT_EQ(GgufValue::U64(1).TypeString(), "u64");
}

// Values below were read from the files with an independent Python parser.
struct VocabCase {
  const char* file;
  const char* model;
  size_t tokens;
  size_t n_kv;
};

TEST(GgufVocabFiles, ReadRealVocabularies) {
  const VocabCase cases[] = {
      {"ggml-vocab-bert-bge.gguf", "bert", 30522, 20},   {"ggml-vocab-deepseek-llm.gguf", "gpt2", 102400, 23},
      {"ggml-vocab-falcon.gguf", "gpt2", 65024, 18},     {"ggml-vocab-gpt-2.gguf", "gpt2", 50257, 16},
      {"ggml-vocab-llama-spm.gguf", "llama", 32000, 22}, {"ggml-vocab-phi-3.gguf", "llama", 32064, 26},
  };
  for (const VocabCase& c : cases) {
    SCOPED_TRACE(c.file);
    std::string path = std::string(HERD_SHARED_DIR) + "/testdata/vocab/" + c.file;
    auto r = GgufFile::Open(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const GgufFile& f = **r;
    EXPECT_EQ(f.version(), 3u);
    EXPECT_TRUE(f.tensors().empty());
    EXPECT_EQ(f.metadata().size(), c.n_kv);
    EXPECT_EQ(*f.GetString("tokenizer.ggml.model"), c.model);
    auto tokens = f.GetStringArray("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.ok()) << tokens.status().message();
    EXPECT_EQ(tokens->size(), c.tokens);
    auto types = f.GetI32Array("tokenizer.ggml.token_type");
    ASSERT_TRUE(types.ok()) << types.status().message();
    EXPECT_EQ(types->size(), c.tokens);
  }
}

TEST(GgufVocabFiles, SpecificValues) {
  auto gpt2 = GgufFile::Open(std::string(HERD_SHARED_DIR) + "/testdata/vocab/ggml-vocab-gpt-2.gguf");
  ASSERT_TRUE(gpt2.ok()) << gpt2.status().message();
  auto merges = (*gpt2)->GetStringArray("tokenizer.ggml.merges");
  ASSERT_TRUE(merges.ok());
  ASSERT_EQ(merges->size(), 50000u);
  EXPECT_EQ((*merges)[0], "\xc4\xa0 t");  // "Ġ t"
  EXPECT_EQ(*(*gpt2)->GetU32("tokenizer.ggml.bos_token_id"), 50256u);
  EXPECT_EQ(*(*gpt2)->GetF32("gpt2.attention.layer_norm_epsilon"), 1e-5f);
  EXPECT_EQ((*(*gpt2)->GetStringArray("tokenizer.ggml.tokens"))[0], "!");

  auto phi3 = GgufFile::Open(std::string(HERD_SHARED_DIR) + "/testdata/vocab/ggml-vocab-phi-3.gguf");
  ASSERT_TRUE(phi3.ok()) << phi3.status().message();
  auto scores = (*phi3)->GetF32Array("tokenizer.ggml.scores");
  ASSERT_TRUE(scores.ok());
  ASSERT_EQ(scores->size(), 32064u);
  EXPECT_EQ((*scores)[0], -1000.0f);
  EXPECT_EQ((*(*phi3)->GetStringArray("tokenizer.ggml.tokens"))[2], "</s>");
  EXPECT_TRUE(*(*phi3)->GetBool("tokenizer.ggml.add_bos_token"));
  EXPECT_FALSE(*(*phi3)->GetBool("tokenizer.ggml.add_eos_token"));
  EXPECT_THAT(*(*phi3)->GetString("tokenizer.chat_template"), StartsWith("{{ bos_token }}{% for message in message"));
}

}  // namespace
}  // namespace herd
