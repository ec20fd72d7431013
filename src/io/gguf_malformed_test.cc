// Malformed GGUF input: every case must return an error whose message starts with the file
// name and names the problem; none may crash. Files are built byte by byte here (not with
// GgufWriter) so the reader is checked against the format, not against our own writer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "io/gguf.h"

namespace herd {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Little-endian byte builder for hand-made GGUF files.
struct Raw {
  std::vector<uint8_t> b;
  template <typename T>
  Raw& Put(T x) {
    const auto* p = reinterpret_cast<const uint8_t*>(&x);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  Raw& U32(uint32_t x) { return Put(x); }
  Raw& U64(uint64_t x) { return Put(x); }
  Raw& Str(const std::string& s) {
    U64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Raw& Header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return U32(version).U64(n_tensors).U64(n_kv);
  }
  Raw& KvU32(const std::string& key, uint32_t v) { return Str(key).U32(4).U32(v); }
  Raw& TensorInfo(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    Str(name).U32(static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) U64(n);
    return U32(type).U64(offset);
  }
  Raw& PadTo(size_t a) {
    b.resize((b.size() + a - 1) / a * a, 0);
    return *this;
  }
  Raw& Zeros(size_t n) {
    b.resize(b.size() + n, 0);
    return *this;
  }
};

constexpr uint32_t kF32 = 0, kQ4_0 = 2;

std::string ErrorOf(const std::vector<uint8_t>& bytes) {
  auto r = GgufFile::FromBytes(bytes, "bad.gguf");
  if (r.ok()) return "<no error>";
  EXPECT_THAT(r.status().message(), StartsWith("bad.gguf: "));
  return r.status().message();
}

// A small valid file: two metadata entries (a string, an array of strings) and two tensors.
std::vector<uint8_t> SmallValidFile() {
  Raw r;
  r.Header(2, 2).Str("general.name").U32(8).Str("tiny");
  r.Str("tok").U32(9).U32(8).U64(2).Str("ab").Str("c");
  r.TensorInfo("a", {8, 2}, kF32, 0).TensorInfo("b", {32}, 8 /*Q8_0*/, 64);
  r.PadTo(32).Zeros(64 + 34);
  return r.b;
}

TEST(GgufMalformed, SmallValidFileIsValid) {
  auto r = GgufFile::FromBytes(SmallValidFile());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->tensors().size(), 2u);
  EXPECT_EQ((*r)->tensors()[1].bytes, 34u);
}

TEST(GgufMalformed, EmptyAndBadMagic) {
  EXPECT_EQ(ErrorOf({}), "bad.gguf: truncated while reading magic at offset 0");
  std::vector<uint8_t> b = SmallValidFile();
  b[0] = 'P';
  b[3] = 0x01;
  EXPECT_THAT(ErrorOf(b), HasSubstr("bad magic \"PGU\\x01\" (expected \"GGUF\")"));
}

TEST(GgufMalformed, Versions) {
  EXPECT_THAT(ErrorOf(Raw().Header(0, 0, 1).b), HasSubstr("unsupported version 1"));
  EXPECT_THAT(ErrorOf(Raw().Header(0, 0, 7).b), HasSubstr("unsupported version 7"));
  EXPECT_TRUE(GgufFile::FromBytes(Raw().Header(0, 0, 2).b).ok());
  // A big-endian writer stores version 3 as 00 00 00 03.
  EXPECT_THAT(ErrorOf(Raw().Header(0, 0, 0x03000000).b), HasSubstr("big-endian (version reads as 0x03000000)"));
}

TEST(GgufMalformed, TruncationAtEveryOffset) {
  const std::vector<uint8_t> full = SmallValidFile();
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> prefix(full.begin(), full.begin() + n);
    std::string msg = ErrorOf(prefix);
    EXPECT_THAT(msg, AnyOf(HasSubstr("truncated while reading"), HasSubstr("extends past end of file"),
                           HasSubstr("does not fit in the remaining")))
        << "prefix of " << n << " bytes";
  }
  // Spot checks that the message says what and where.
  EXPECT_EQ(ErrorOf(std::vector<uint8_t>(full.begin(), full.begin() + 40)),
            "bad.gguf: metadata count 2 does not fit in the remaining 16 bytes of the file");
  EXPECT_EQ(ErrorOf(std::vector<uint8_t>(full.begin(), full.begin() + 6)),
            "bad.gguf: truncated while reading version at offset 4");
  EXPECT_EQ(ErrorOf(Raw().Header(0, 1).U64(12).Zeros(6).b),
            "bad.gguf: truncated while reading key (12 bytes) of metadata entry 0 at offset 32");
}

TEST(GgufMalformed, CorruptedValueType) {
  Raw r;
  r.Header(0, 1).Str("k").U32(13).U32(0);
  EXPECT_THAT(ErrorOf(r.b), HasSubstr("key 'k' has unknown value type 13 at offset 33"));
  Raw a;
  a.Header(0, 1).Str("arr").U32(9).U32(99).U64(1);
  EXPECT_THAT(ErrorOf(a.b), HasSubstr("key 'arr': array has unknown element type 99"));
}

TEST(GgufMalformed, UnknownTensorType) {
  Raw r;
  r.Header(1, 0).TensorInfo("x", {4}, 42, 0).PadTo(32).Zeros(16);
  EXPECT_THAT(ErrorOf(r.b), HasSubstr("tensor 'x' has unknown type 42"));
  Raw q81;  // Q8_1 is an activation format, never a stored weight type
  q81.Header(1, 0).TensorInfo("x", {32}, 9, 0).PadTo(32).Zeros(64);
  EXPECT_THAT(ErrorOf(q81.b), HasSubstr("tensor 'x' has unknown type 9"));
}

TEST(GgufMalformed, TensorOutOfBounds) {
  Raw r;
  r.Header(1, 0).TensorInfo("w", {16}, kF32, 0).PadTo(32);
  const size_t data = r.b.size();
  r.Zeros(60);  // 64 needed
  EXPECT_THAT(ErrorOf(r.b), HasSubstr("tensor 'w' (64 bytes at data offset 0, data section at " + std::to_string(data) +
                                      ") extends past end of file (size " + std::to_string(data + 60) + ")"));
  Raw far;  // an offset near 2^64 must not wrap around, in the check or the message
  far.Header(1, 0).TensorInfo("w", {16}, kF32, 0xFFFFFFFFFFFFFFE0ull).PadTo(32).Zeros(64);
  EXPECT_THAT(ErrorOf(far.b), HasSubstr("tensor 'w' (64 bytes at data offset 18446744073709551584, data section at"));
  EXPECT_THAT(ErrorOf(far.b), HasSubstr("extends past end of file"));
}

TEST(GgufMalformed, OverlappingTensors) {
  Raw r;
  r.Header(2, 0).TensorInfo("a", {16}, kF32, 0).TensorInfo("b", {8}, kF32, 32).PadTo(32).Zeros(128);
  EXPECT_THAT(ErrorOf(r.b), HasSubstr("tensors 'a' (data bytes 0..64) and 'b' (data bytes 32..64) overlap"));
  Raw same;  // listed in reverse order, same offset
  same.Header(2, 0).TensorInfo("b", {8}, kF32, 64).TensorInfo("a", {8}, kF32, 64).PadTo(32).Zeros(128);
  EXPECT_THAT(ErrorOf(same.b), HasSubstr("overlap"));
}

TEST(GgufMalformed, MisalignedOffset) {
  Raw r;
  r.Header(1, 0).TensorInfo("w", {4}, kF32, 16).PadTo(32).Zeros(64);
  EXPECT_THAT(ErrorOf(r.b), HasSubstr("tensor 'w' offset 16 is not a multiple of the alignment 32"));
  Raw ok;  // with general.alignment = 16 the same offset is fine
  ok.Header(1, 1).KvU32("general.alignment", 16).TensorInfo("w", {4}, kF32, 16).PadTo(16).Zeros(32);
  auto f = GgufFile::FromBytes(ok.b);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->alignment(), 16u);
}

TEST(GgufMalformed, BadAlignmentValue) {
  EXPECT_THAT(ErrorOf(Raw().Header(0, 1).KvU32("general.alignment", 48).b),
              HasSubstr("general.alignment 48 is not a non-zero power of two"));
  EXPECT_THAT(ErrorOf(Raw().Header(0, 1).KvU32("general.alignment", 0).b),
              HasSubstr("general.alignment 0 is not a non-zero power of two"));
  EXPECT_THAT(ErrorOf(Raw().Header(0, 1).Str("general.alignment").U32(5).U32(32).b),
              HasSubstr("general.alignment has type i32, expected u32"));
}

TEST(GgufMalformed, HugeCounts) {
  EXPECT_THAT(ErrorOf(Raw().Header(0, 1ull << 60).b), HasSubstr("metadata count 1152921504606846976 does not fit"));
  EXPECT_THAT(ErrorOf(Raw().Header(1ull << 62, 0).b), HasSubstr("tensor count 4611686018427387904 does not fit"));
  EXPECT_THAT(
      ErrorOf(Raw().Header(0, 1).Str("k").U32(9).U32(4).U64(1ull << 61).b),
      HasSubstr("key 'k': array length 2305843009213693952 at offset 41 does not fit in the remaining 0 bytes"));
  EXPECT_THAT(ErrorOf(Raw().Header(0, 1).Str("k").U32(8).U64(~0ull).b),
              HasSubstr("truncated while reading string (18446744073709551615 bytes) of key 'k'"));
  EXPECT_THAT(ErrorOf(Raw().Header(0, 1).U64(1ull << 40).Zeros(16).b),
              HasSubstr("truncated while reading key (1099511627776 bytes)"));
  // Arrays of empty arrays are cheap to encode (12 bytes) but each item costs memory: capped.
  Raw many;
  many.Header(0, 1).Str("k").U32(9).U32(0).U64((1ull << 24) + 1).Zeros((1ull << 24) + 1);
  EXPECT_THAT(ErrorOf(many.b), HasSubstr("metadata arrays hold more than 16777216 items in total"));
}

TEST(GgufMalformed, DeeplyNestedArrays) {
  Raw r;
  r.Header(0, 1).Str("k").U32(9);
  for (int d = 0; d < 40; ++d) r.U32(9).U64(1);
  r.U32(4).U64(0);
  EXPECT_THAT(ErrorOf(r.b), HasSubstr("key 'k': arrays nested more than 16 levels deep"));
}

TEST(GgufMalformed, TensorShapes) {
  EXPECT_THAT(ErrorOf(Raw().Header(1, 0).TensorInfo("w", {1, 1, 1, 1, 1}, kF32, 0).Zeros(64).b),
              HasSubstr("tensor 'w' has 5 dimensions (herd reads 1 to 4)"));
  EXPECT_THAT(ErrorOf(Raw().Header(1, 0).TensorInfo("w", {}, kF32, 0).Zeros(64).b),
              HasSubstr("tensor 'w' has 0 dimensions"));
  EXPECT_THAT(ErrorOf(Raw().Header(1, 0).TensorInfo("w", {4, 0}, kF32, 0).Zeros(64).b),
              HasSubstr("tensor 'w' has invalid size 0 in dimension 1"));
  EXPECT_THAT(ErrorOf(Raw().Header(1, 0).TensorInfo("w", {33}, kQ4_0, 0).Zeros(64).b),
              HasSubstr("tensor 'w' has ne[0] = 33, not a multiple of the Q4_0 block size 32"));
  EXPECT_THAT(ErrorOf(Raw().Header(1, 0).TensorInfo("w", {1ull << 32, 1ull << 32}, kF32, 0).Zeros(64).b),
              HasSubstr("tensor 'w' has too many elements"));
  EXPECT_THAT(ErrorOf(Raw().Header(1, 0).TensorInfo("w", {1ull << 62}, kF32, 0).Zeros(64).b),
              HasSubstr("tensor 'w' has too many elements (its byte size overflows"));
}

TEST(GgufMalformed, Duplicates) {
  EXPECT_THAT(ErrorOf(Raw().Header(0, 2).KvU32("a", 1).KvU32("a", 2).b), HasSubstr("duplicate key 'a'"));
  Raw r;
  r.Header(2, 0).TensorInfo("w", {8}, kF32, 0).TensorInfo("w", {8}, kF32, 32).PadTo(32).Zeros(64);
  EXPECT_THAT(ErrorOf(r.b), HasSubstr("duplicate tensor name 'w'"));
}

// Deterministic random corruption of a valid file written by GgufWriter: never a crash; when a
// corrupted file still parses, every value renders and every tensor byte lies inside the file.
TEST(GgufMalformed, RandomByteFlipsNeverCrash) {
  GgufWriter w;
  w.Set("general.name", GgufValue::Str("fuzz"));
  w.Set("list", GgufValue::StrArray({"x", "yy", "zzz"}));
  w.Set("nums", GgufValue::F32Array({1, 2, 3}));
  w.Set("n", GgufValue::U32(3));
  w.AddTensor("t0", DType::kF32, {4, 2}, nullptr);
  w.AddTensor("t1", DType::kQ4_K, {256}, nullptr);
  const std::vector<uint8_t> base = w.WriteToBytes();
  const size_t header_end = base.size() - 144 - 32;  // flips land mostly in the header
  std::mt19937 rng(12345);
  int parsed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint8_t> b = base;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      size_t pos = rng() % header_end;
      b[pos] = (rng() % 2) ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>(b[pos] ^ (1u << (rng() % 8)));
    }
    if (rng() % 8 == 0) b.resize(rng() % b.size());
    auto r = GgufFile::FromBytes(b, "fuzz.gguf");
    if (!r.ok()) {
      EXPECT_THAT(r.status().message(), StartsWith("fuzz.gguf: "));
      continue;
    }
    ++parsed;
    for (const auto& [k, v] : (*r)->metadata()) EXPECT_FALSE(v.ToString().empty());
    for (const GgufTensorInfo& t : (*r)->tensors()) {
      ASSERT_LE((*r)->data_offset() + t.offset + t.bytes, (*r)->file_size());
      const uint8_t* p = (*r)->TensorData(t);
      volatile uint8_t sink = 0;
      for (uint64_t k = 0; k < t.bytes; ++k) sink = sink + p[k];
    }
  }
  EXPECT_GT(parsed, 0);  // some flips land in values and leave the file valid
}

}  // namespace
}  // namespace herd
