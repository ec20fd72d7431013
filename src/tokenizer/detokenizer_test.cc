#include "tokenizer/detokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "io/gguf.h"

namespace herd {
namespace {

std::unique_ptr<Tokenizer> FromFixture(const std::string& name) {
  auto file = GgufFile::Open(std::string(HERD_SHARED_DIR) + "/testdata/vocab/" + name + ".gguf");
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::FromGguf(**file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

std::vector<std::string> Deltas(const Tokenizer& t, const std::vector<TokenId>& ids, DecodeOptions opts = {}) {
  StreamingDetokenizer d(t, opts);
  std::vector<std::string> out;
  for (TokenId id : ids) out.push_back(d.Push(id));
  out.push_back(d.Finish());
  return out;
}

TEST(StreamingDetokenizer, HoldsBackSpmByteTokensUntilTheCharacterIsComplete) {
  auto t = FromFixture("ggml-vocab-llama-spm");
  ASSERT_TRUE(t);
  // 🦙 is not in the Llama 2 vocabulary: four byte-fallback tokens.
  const TokenId f0 = t->TextToToken("<0xF0>"), b9f = t->TextToToken("<0x9F>"), a6 = t->TextToToken("<0xA6>"),
                b99 = t->TextToToken("<0x99>");
  std::vector<TokenId> ids = t->Encode("🦙");
  ASSERT_EQ(ids, (std::vector<TokenId>{29871, f0, b9f, a6, b99}));
  StreamingDetokenizer d(*t);
  EXPECT_EQ(d.Push(29871), "");  // the dummy-prefix space is stripped at the start
  EXPECT_EQ(d.Push(f0), "");
  EXPECT_EQ(d.pending_bytes(), 1u);
  EXPECT_EQ(d.Push(b9f), "");
  EXPECT_EQ(d.Push(a6), "");
  EXPECT_EQ(d.pending_bytes(), 3u);
  EXPECT_EQ(d.Push(b99), "🦙");
  EXPECT_EQ(d.pending_bytes(), 0u);
  EXPECT_EQ(d.Finish(), "");
}

TEST(StreamingDetokenizer, ByteLevelBpePiecesSplitCharacters) {
  auto t = FromFixture("ggml-vocab-gpt-2");
  ASSERT_TRUE(t);
  // " 🦙" is 5 bytes in 3 tokens, none of them a whole character after the space.
  std::vector<TokenId> ids = {428, 318, 12520, 99, 247, 13, 20322};
  std::vector<std::string> d = Deltas(*t, ids);
  EXPECT_EQ(d, (std::vector<std::string>{" this", " is", " ", "", "🦙", ".", "cpp", ""}));
}

TEST(StreamingDetokenizer, MalformedBytesBecomeReplacementCharacters) {
  auto t = FromFixture("ggml-vocab-llama-spm");
  ASSERT_TRUE(t);
  const TokenId f0 = t->TextToToken("<0xF0>"), x80 = t->TextToToken("<0x80>"), a = t->TextToToken("a");
  // A stray continuation byte can never complete: replaced at once.
  EXPECT_EQ(Deltas(*t, {x80, a}), (std::vector<std::string>{"\xEF\xBF\xBD", "a", ""}));
  // A lead byte followed by ASCII: the broken sequence is replaced, the ASCII kept.
  EXPECT_EQ(Deltas(*t, {f0, a}), (std::vector<std::string>{"",
                                                           "\xEF\xBF\xBD"
                                                           "a",
                                                           ""}));
  // An incomplete character at the end comes out of Finish as U+FFFD.
  EXPECT_EQ(Deltas(*t, {a, f0}), (std::vector<std::string>{"a", "", "\xEF\xBF\xBD"}));
}

TEST(StreamingDetokenizer, LeadingSpaceAndSpecialTokens) {
  auto t = FromFixture("ggml-vocab-llama-spm");
  ASSERT_TRUE(t);
  // From the start of a text the SPM dummy prefix is removed; mid-text it is a real space.
  EXPECT_EQ(Deltas(*t, {1, 15043, 3186}), (std::vector<std::string>{"", "Hello", " world", ""}));
  EXPECT_EQ(Deltas(*t, {15043}, {.strip_leading_space = false}), (std::vector<std::string>{" Hello", ""}));
  EXPECT_EQ(Deltas(*t, {1, 15043}, {.render_special = true}), (std::vector<std::string>{"<s>", " Hello", ""}));
}

// For any text: the deltas are whole characters and add up to Decode.
TEST(StreamingDetokenizer, DeltasConcatenateToDecode) {
  for (const char* name : {"ggml-vocab-llama-spm", "ggml-vocab-gpt-2", "ggml-vocab-phi-3", "ggml-vocab-falcon"}) {
    auto t = FromFixture(name);
    ASSERT_TRUE(t);
    const std::vector<std::string> alphabet = {"a", " the",   "  ", "\n", "é", "ß", "我想", "🦙", "😶‍🌫️",
                                               "ក", "Привет", "ử",  "1",  "'", "~"};
    std::mt19937 rng(11);
    for (int iter = 0; iter < 200; ++iter) {
      std::string s;
      int len = static_cast<int>(rng() % 12);
      for (int i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
      std::vector<TokenId> ids = t->Encode(s);
      std::string joined;
      for (const std::string& delta : Deltas(*t, ids)) {
        EXPECT_EQ(SanitizeUtf8(delta), delta) << name << ": '" << s << "'";
        joined += delta;
      }
      EXPECT_EQ(joined, t->Decode(ids)) << name << ": '" << s << "'";
      EXPECT_EQ(joined, s) << name;
    }
  }
}

}  // namespace
}  // namespace herd
