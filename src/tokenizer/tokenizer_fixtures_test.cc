// Every case of every vocabulary fixture in ../shared/testdata/vocab must tokenize to exactly
// the ids the original Hugging Face tokenizer produced (no BOS/EOS, specials not parsed).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace herd {
namespace {

namespace fs = std::filesystem;

fs::path VocabDir() { return fs::path(HERD_SHARED_DIR) / "testdata" / "vocab"; }

std::vector<std::string> FixtureNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(VocabDir(), ec)) {
    if (e.path().extension() == ".gguf" && fs::exists(e.path().string() + ".inp")) names.push_back(e.path().stem());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The cases of a .inp file: separated (and terminated) by "\n__ggml_vocab_test__\n".
std::vector<std::string> ReadCases(const fs::path& p) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::string all = ReadFile(p);
  std::vector<std::string> cases;
  size_t start = 0;
  for (size_t pos = all.find(sep); pos != std::string::npos; pos = all.find(sep, start)) {
    cases.push_back(all.substr(start, pos - start));
    start = pos + sep.size();
  }
  if (start < all.size()) cases.push_back(all.substr(start));
  return cases;
}

std::vector<std::vector<TokenId>> ReadExpected(const fs::path& p) {
  std::vector<std::vector<TokenId>> out;
  std::istringstream in(ReadFile(p));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<TokenId> ids;
    for (long v; ls >> v;) ids.push_back(static_cast<TokenId>(v));
    out.push_back(std::move(ids));
  }
  return out;
}

std::string Join(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) {
    if (!s.empty()) s.push_back(' ');
    s.append(std::to_string(id));
  }
  return s;
}

class VocabFixture : public ::testing::TestWithParam<std::string> {};

TEST(VocabFixtures, DirectoryHasFixtures) { EXPECT_GE(FixtureNames().size(), 6u) << VocabDir(); }

TEST_P(VocabFixture, EveryCaseExact) {
  const fs::path gguf = VocabDir() / (GetParam() + ".gguf");
  auto file = GgufFile::Open(gguf.string());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();

  std::vector<std::string> cases = ReadCases(gguf.string() + ".inp");
  std::vector<std::vector<TokenId>> expected = ReadExpected(gguf.string() + ".out");
  ASSERT_EQ(cases.size(), expected.size()) << "case and expectation counts differ";
  ASSERT_FALSE(cases.empty());
  size_t passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<TokenId> got = (*tok)->Encode(cases[i], /*add_special=*/false, /*parse_special=*/false);
    EXPECT_EQ(Join(got), Join(expected[i])) << "case " << i << ": '" << cases[i] << "'";
    passed += got == expected[i];
  }
  std::printf("[ fixture  ] %s: %zu/%zu cases exact\n", GetParam().c_str(), passed, cases.size());
}

// Decoding the expected ids gives back the input text wherever the tokenizer is lossless
// (byte-level BPE and SentencePiece with byte fallback; not WordPiece, which lowercases).
TEST_P(VocabFixture, DecodeRoundTrip) {
  const fs::path gguf = VocabDir() / (GetParam() + ".gguf");
  auto file = GgufFile::Open(gguf.string());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  if ((*tok)->vocab().model == TokenizerModel::kWordPiece) GTEST_SKIP() << "WordPiece is lossy";
  std::vector<std::string> cases = ReadCases(gguf.string() + ".inp");
  std::vector<std::vector<TokenId>> expected = ReadExpected(gguf.string() + ".out");
  ASSERT_EQ(cases.size(), expected.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ((*tok)->Decode(expected[i]), cases[i]) << "case " << i;
    // Streaming gives the same text, and never a broken character.
    StreamingDetokenizer stream(**tok);
    std::string streamed;
    for (TokenId id : expected[i]) {
      std::string delta = stream.Push(id);
      EXPECT_EQ(SanitizeUtf8(delta), delta) << "case " << i << ": delta splits a character";
      streamed += delta;
    }
    streamed += stream.Finish();
    EXPECT_EQ(streamed, cases[i]) << "case " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(All, VocabFixture, ::testing::ValuesIn(FixtureNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace herd
