#include "model/make_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "io/gguf.h"
#include "model/model_shapes.h"
#include "model/test_models.h"

namespace herd {
namespace {

DType TypeOf(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.FindTensor(name);
  EXPECT_NE(t, nullptr) << name;
  return t ? t->type : DType::kF32;
}

TEST(ModelShapesTest, Q4KMRecipeFollowsTheUsualLayerRule) {
  const FileType ft = *FindFileType("q4_k_m");
  // 16 layers: more bits for layers 0,1 (first eighth), 14,15 (last eighth), 4,7,10,13.
  std::vector<int> more;
  for (int i = 0; i < 16; ++i) {
    if (TensorTypeFor(ft, "blk." + std::to_string(i) + ".ffn_down.weight", 16, true) == DType::kQ6_K) more.push_back(i);
  }
  EXPECT_EQ(more, (std::vector<int>{0, 1, 4, 7, 10, 13, 14, 15}));
  EXPECT_EQ(TensorTypeFor(ft, "blk.3.attn_q.weight", 16, true), DType::kQ4_K);
  EXPECT_EQ(TensorTypeFor(ft, "token_embd.weight", 16, true), DType::kQ6_K);   // tied: it is the output
  EXPECT_EQ(TensorTypeFor(ft, "token_embd.weight", 16, false), DType::kQ4_K);
  EXPECT_EQ(TensorTypeFor(ft, "output.weight", 16, false), DType::kQ6_K);
}

TEST(ModelShapesTest, Llama3RopeFactors) {
  const ModelShape s = *FindModelShape("llama-3.2-1b");
  const auto f = Llama3RopeFactors(s, 64);
  ASSERT_EQ(f.size(), 32u);
  EXPECT_FLOAT_EQ(f[0], 1.0f);    // high frequencies untouched
  EXPECT_FLOAT_EQ(f[31], 32.0f);  // low frequencies divided by the factor
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
}

TEST(MakeModelTest, WritesExactShapeAndIsDeterministic) {
  const std::string path = testing::TestModelPath("small", "Q4_K_M");
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(*(*f)->GetString("general.architecture"), "llama");
  EXPECT_EQ(*(*f)->GetU32("llama.block_count"), 4u);
  EXPECT_EQ(*(*f)->GetU32("general.file_type"), 15u);
  EXPECT_EQ(TypeOf(**f, "blk.2.attn_v.weight"), DType::kQ6_K);  // 4 layers: layers 2 and 3 get more bits
  EXPECT_EQ(TypeOf(**f, "blk.1.attn_v.weight"), DType::kQ4_K);
  EXPECT_EQ(TypeOf(**f, "output.weight"), DType::kQ6_K);
  EXPECT_EQ(TypeOf(**f, "blk.0.attn_norm.weight"), DType::kF32);
  EXPECT_NE((*f)->FindTensor("rope_freqs.weight"), nullptr);
  const GgufTensorInfo* q = (*f)->FindTensor("blk.2.attn_k.weight");
  EXPECT_EQ(q->ne, (std::vector<int64_t>{512, 128}));  // [n_kv_heads * head_dim, n_embd]

  MakeModelOptions o;
  o.shape = "small";
  o.file_type = "Q4_K_M";
  o.seed = 1234;
  o.output_path = path + ".again";
  ASSERT_TRUE(MakeRandomModel(o).ok());
  std::ifstream a(path, std::ios::binary), b(o.output_path, std::ios::binary);
  std::string da((std::istreambuf_iterator<char>(a)), {}), db((std::istreambuf_iterator<char>(b)), {});
  EXPECT_EQ(da, db);
}

TEST(MakeModelTest, ClearErrors) {
  MakeModelOptions o;
  o.shape = "llama-9000";
  o.output_path = "/tmp/x.gguf";
  EXPECT_THAT(MakeRandomModel(o).message(), ::testing::HasSubstr("unknown shape 'llama-9000'"));
  o.shape = "tiny";
  o.file_type = "Q7";
  EXPECT_THAT(MakeRandomModel(o).message(), ::testing::HasSubstr("unknown file type 'Q7'"));
  o.file_type = "Q8_0";
  o.vocab_path = "/nonexistent/vocab.gguf";
  EXPECT_THAT(MakeRandomModel(o).message(), ::testing::HasSubstr("/nonexistent/vocab.gguf"));
}

}  // namespace
}  // namespace herd
