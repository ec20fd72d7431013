// Tests of `herd inspect`'s printing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "cli/commands.h"
#include "io/gguf.h"


namespace herd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::unique_ptr<GgufFile> TinyModel() {
  GgufWriter w;
  w.Set("general.architecture", GgufValue::Str("llama"));
  w.Set("llama.block_count", GgufValue::U32(2));
  w.Set("tokenizer.ggml.tokens", GgufValue::StrArray({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}));
  w.AddTensor("token_embd.weight", DType::kQ4_0, {64, 10}, nullptr);  // 10 rows of 2 blocks * 18 bytes
  w.AddTensor("output_norm.weight", DType::kF32, {64}, nullptr);
  auto r = GgufFile::FromBytes(w.WriteToBytes(), "tiny.gguf");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).value();
}

TEST(Inspect, PrintsHeaderMetadataTensorsSummary) {
  auto f = TinyModel();
  std::ostringstream out;
  cli::PrintGgufSummary(*f, out, true);
  const std::string s = out.str();
  EXPECT_THAT(s, HasSubstr("file:       tiny.gguf\n"));
  EXPECT_THAT(s, HasSubstr("version:    3\n"));
  EXPECT_THAT(s, HasSubstr("alignment:  32\n"));
  EXPECT_THAT(s, HasSubstr("metadata (3 keys):\n"));
  EXPECT_THAT(s, HasSubstr("  general.architecture   str          \"llama\"\n"));
  EXPECT_THAT(s, HasSubstr("  llama.block_count      u32          2\n"));
  EXPECT_THAT(s, HasSubstr("  tokenizer.ggml.tokens  arr[str,10]  [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\", ... (10 items)]\n"));
  EXPECT_THAT(s, HasSubstr("tensors (2):\n"));
  EXPECT_THAT(s, HasSubstr("  token_embd.weight   Q4_0   [10, 64]  360\n"));
  EXPECT_THAT(s, HasSubstr("  output_norm.weight  F32    [64]      256\n"));
  EXPECT_THAT(s, HasSubstr("  tensors:          2\n"));
  EXPECT_THAT(s, HasSubstr("  parameters:       704 (704)\n"));
  EXPECT_THAT(s, HasSubstr("  tensor bytes:     616 (616 B)\n"));
  EXPECT_THAT(s, HasSubstr("  bits per weight:  7.000\n"));  // 616 * 8 / 704
  EXPECT_THAT(s, HasSubstr("  types:            F32: 1, Q4_0: 1\n"));
}

TEST(Inspect, NoTensorsOmitsTheTableButKeepsTheSummary) {
  auto f = TinyModel();
  std::ostringstream out;
  cli::PrintGgufSummary(*f, out, false);
  EXPECT_THAT(out.str(), Not(HasSubstr("token_embd.weight")));
  EXPECT_THAT(out.str(), HasSubstr("  tensors:          2\n"));
}

}  // namespace
}  // namespace herd
