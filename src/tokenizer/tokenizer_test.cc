#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace herd {
namespace {

using Ids = std::vector<TokenId>;

std::unique_ptr<Tokenizer> FromFixture(const std::string& name) {
  std::string path = std::string(HERD_SHARED_DIR) + "/testdata/vocab/" + name + ".gguf";
  auto file = GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::FromGguf(**file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

// A byte-level BPE vocabulary: the 256 byte characters, then the given merges' results.
Vocab TinyBpe(const std::vector<std::string>& merges, const std::string& pre = "gpt-2") {
  Vocab v;
  v.model = TokenizerModel::kBpe;
  v.pre = pre;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(unicode::ToUtf8(byte_level::ByteToCodePoint(uint8_t(b))));
  for (const std::string& m : merges) {
    size_t sp = m.find(' ');
    v.tokens.push_back(m.substr(0, sp) + m.substr(sp + 1));
  }
  v.merges = merges;
  v.types.assign(v.tokens.size(), TokenType::kNormal);
  return v;
}

TokenId Id(const Tokenizer& t, const std::string& text) { return t.TextToToken(text); }

TEST(Bpe, MergesByRankThenLeftmost) {
  auto tok = Tokenizer::Create(TinyBpe({"b c", "a b", "a bc", "a a", "aa aa"}));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const Tokenizer& t = **tok;
  // (b,c) has the lowest rank, so "abc" becomes a + bc, then abc.
  EXPECT_EQ(t.Encode("abc"), (Ids{Id(t, "abc")}));
  EXPECT_EQ(t.Encode("ab"), (Ids{Id(t, "ab")}));
  // Equal ranks: leftmost first, so "aaa" -> aa + a; "aaaa" -> aa + aa -> aaaa.
  EXPECT_EQ(t.Encode("aaa"), (Ids{Id(t, "aa"), Id(t, "a")}));
  EXPECT_EQ(t.Encode("aaaa"), (Ids{Id(t, "aaaa")}));
  // Words never merge across the pre-tokenizer's boundaries ("ab" | "ca"); a space is 'Ġ'.
  EXPECT_EQ(t.Encode("abca"), (Ids{Id(t, "abc"), Id(t, "a")}));
  EXPECT_EQ(t.Encode("ab ab"), (Ids{Id(t, "ab"), Id(t, "\xC4\xA0"), Id(t, "ab")}));
  EXPECT_EQ(t.Encode("ab,bc"), (Ids{Id(t, "ab"), Id(t, ","), Id(t, "bc")}));
}

TEST(Bpe, IgnoreMergesTakesWholeWords) {
  Vocab v = TinyBpe({"a b", "c d"}, "llama-bpe");
  v.tokens.push_back("abcd");  // a token no merge sequence reaches
  v.types.push_back(TokenType::kNormal);
  v.SetModelDefaults();
  ASSERT_TRUE(v.ignore_merges);
  v.bos = 'a';  // any id: llama-bpe adds BOS by default
  auto tok = Tokenizer::Create(v);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ((*tok)->Encode("abcd"), (Ids{static_cast<TokenId>(v.tokens.size() - 1)}));
  EXPECT_EQ((*tok)->Encode("abc"), (Ids{Id(**tok, "ab"), Id(**tok, "c")}));
}

TEST(Bpe, ArbitraryBytesRoundTrip) {
  auto t = FromFixture("ggml-vocab-gpt-2");
  ASSERT_TRUE(t);
  std::mt19937 rng(7);
  for (int iter = 0; iter < 300; ++iter) {
    std::string s;
    int len = static_cast<int>(rng() % 40);
    for (int i = 0; i < len; ++i) s.push_back(static_cast<char>(rng() % 256));
    EXPECT_EQ(t->Decode(t->Encode(s)), s);
  }
}

// A SentencePiece vocabulary with byte fallback.
Vocab TinySpm() {
  Vocab v;
  v.model = TokenizerModel::kSpm;
  auto add = [&v](const std::string& text, float score, TokenType type) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    add(name, 0, TokenType::kByte);
  }
  add("\xE2\x96\x81", -1, TokenType::kNormal);  // ▁
  add("a", -2, TokenType::kNormal);
  add("b", -3, TokenType::kNormal);
  add("ab", -4, TokenType::kNormal);
  add("\xE2\x96\x81"
      "a",
      -5, TokenType::kNormal);  // ▁a: lower score than ab
  add("\xE2\x96\x81"
      "ab",
      -6, TokenType::kNormal);
  add("<tool>", 0, TokenType::kUserDefined);
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  v.SetModelDefaults();
  v.CollectEog();
  return v;
}

TEST(Spm, MergesByScoreWithDummyPrefix) {
  auto tok = Tokenizer::Create(TinySpm());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const Tokenizer& t = **tok;
  // "ab" (score -4) merges before "▁a" (-5); then ▁ + ab -> ▁ab.
  EXPECT_EQ(t.Encode("ab"), (Ids{Id(t,
                                    "\xE2\x96\x81"
                                    "ab")}));
  EXPECT_EQ(t.Encode("ba"), (Ids{Id(t, "\xE2\x96\x81"), Id(t, "b"), Id(t, "a")}));
  EXPECT_EQ(t.Decode(t.Encode("ab ba")), "ab ba");
}

TEST(Spm, ByteFallbackForUnknownCharacters) {
  auto tok = Tokenizer::Create(TinySpm());
  ASSERT_TRUE(tok.ok());
  const Tokenizer& t = **tok;
  // é is not a token: its two UTF-8 bytes become <0xC3> <0xA9>.
  EXPECT_EQ(t.Encode("\xC3\xA9"), (Ids{Id(t, "\xE2\x96\x81"), Id(t, "<0xC3>"), Id(t, "<0xA9>")}));
  EXPECT_EQ(t.Decode(t.Encode("a\xC3\xA9 b")), "a\xC3\xA9 b");
}

TEST(SpecialTokens, ControlOnlyWhenParsingUserDefinedAlways) {
  auto tok = Tokenizer::Create(TinySpm());
  ASSERT_TRUE(tok.ok());
  const Tokenizer& t = **tok;
  const TokenId sp = Id(t, "\xE2\x96\x81"), tool = Id(t, "<tool>");
  // Parsed: <s> is the control token, and the text after it gets the dummy prefix again.
  EXPECT_EQ(t.Encode("<s>ab", false, true), (Ids{1, Id(t,
                                                       "\xE2\x96\x81"
                                                       "ab")}));
  // Not parsed: <s> is plain text (bytes, as '<', 's', '>' are not tokens here).
  Ids plain = t.Encode("<s>ab", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(plain.front(), sp);
  // User-defined tokens are matched either way.
  EXPECT_EQ(t.Encode("a<tool>b", false, false), (Ids{Id(t,
                                                        "\xE2\x96\x81"
                                                        "a"),
                                                     tool, sp, Id(t, "b")}));
  // add_special: BOS by default for SPM, no EOS.
  EXPECT_EQ(t.Encode("ab", true, false), (Ids{1, Id(t,
                                                    "\xE2\x96\x81"
                                                    "ab")}));
}

TEST(SpecialTokens, LeftmostLongest) {
  Vocab v = TinyBpe({});
  for (const char* s : {"<|a|>", "<|a|><|b|>", "|><|b"}) {
    v.tokens.push_back(s);
    v.types.push_back(TokenType::kControl);
  }
  auto tok = Tokenizer::Create(v);
  ASSERT_TRUE(tok.ok());
  const TokenId a = 256, ab = 257;
  EXPECT_EQ((*tok)->Encode("<|a|><|b|>", false, true), (Ids{ab}));
  Ids got = (*tok)->Encode("<|a|>x<|a|>", false, true);
  EXPECT_EQ(got, (Ids{a, Id(**tok, "x"), a}));
}

TEST(RealVocab, SpecialHandling) {
  auto spm = FromFixture("ggml-vocab-llama-spm");
  ASSERT_TRUE(spm);
  EXPECT_EQ(spm->Encode("<s>Hello", false, true), (Ids{1, 15043}));
  EXPECT_EQ(spm->Encode("Hello", true, false), (Ids{1, 15043}));
  EXPECT_TRUE(spm->IsEog(2));
  EXPECT_FALSE(spm->IsEog(1));
  EXPECT_EQ(spm->TokenToPiece(15043), " Hello");
  EXPECT_EQ(spm->TokenToPiece(13), "\n");  // <0x0A>
  EXPECT_EQ(spm->TokenToPiece(1), "");
  EXPECT_EQ(spm->TokenToPiece(1, /*render_special=*/true), "<s>");
  EXPECT_EQ(spm->Decode({1, 15043}, {.render_special = true}), "<s> Hello");

  auto phi3 = FromFixture("ggml-vocab-phi-3");
  ASSERT_TRUE(phi3);
  Ids user = phi3->Encode("a</s>b");  // '</s>' is user-defined in Phi-3: always matched
  EXPECT_EQ(std::count(user.begin(), user.end(), 2), 1);
  Ids chat = phi3->Encode("<|user|>\nHi<|end|>", false, true);
  EXPECT_EQ(chat.front(), 32010);
  EXPECT_EQ(chat.back(), 32007);
  Ids unparsed = phi3->Encode("<|user|>", false, false);
  EXPECT_EQ(std::count(unparsed.begin(), unparsed.end(), 32010), 0);
  EXPECT_TRUE(phi3->IsEog(32000));
  EXPECT_TRUE(phi3->IsEog(32007));

  auto gpt2 = FromFixture("ggml-vocab-gpt-2");
  ASSERT_TRUE(gpt2);
  EXPECT_EQ(gpt2->Encode("a<|endoftext|>", false, true), (Ids{64, 50256}));
  Ids text = gpt2->Encode("a<|endoftext|>", false, false);
  EXPECT_GT(text.size(), 2u);
  EXPECT_EQ(std::count(text.begin(), text.end(), 50256), 0);
  EXPECT_EQ(gpt2->Encode("a", true, false), (Ids{64}));  // GPT-2 adds no BOS

  auto bert = FromFixture("ggml-vocab-bert-bge");
  ASSERT_TRUE(bert);
  EXPECT_EQ(bert->Encode("Hello world", true, false), (Ids{101, 7592, 2088, 102}));
  EXPECT_EQ(bert->Decode({101, 7592, 2088, 102}), "hello world");

  auto ds = FromFixture("ggml-vocab-deepseek-llm");
  ASSERT_TRUE(ds);
  EXPECT_EQ(ds->Encode("Hi", true, false).front(), 100000);
}

TEST(RealVocab, SpmRoundTripRandomText) {
  auto t = FromFixture("ggml-vocab-llama-spm");
  ASSERT_TRUE(t);
  const std::vector<std::string> alphabet = {"a", "b",  "the",  " ",      "  ", "\n",   "\t",  "é",
                                             "ß", "我", "🦙", "Привет", "1",  "23",   ".",   ",",
                                             "'", "\"", "<",    ">",      "s",  "\xFF", "\xC3"};
  std::mt19937 rng(3);
  for (int iter = 0; iter < 300; ++iter) {
    std::string s;
    int len = static_cast<int>(rng() % 20);
    for (int i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
    EXPECT_EQ(t->Decode(t->Encode(s)), s) << "'" << s << "'";
  }
  // The one lossy input: a literal '▁' is SentencePiece's space and decodes as ' '.
  EXPECT_EQ(t->Decode(t->Encode("a\xE2\x96\x81"
                                "b")),
            "a b");
}

// Encoding word by word (the fast path) gives the same ids as merging over the whole text.
TEST(Spm, WordSplitIsExact) {
  auto file = GgufFile::Open(std::string(HERD_SHARED_DIR) + "/testdata/vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(file.ok());
  auto vocab = LoadVocab(**file);
  ASSERT_TRUE(vocab.ok());
  TokenLookup lookup(*vocab);
  auto spm = SpmModel::Build(*vocab, lookup);
  ASSERT_TRUE(spm.ok());
  ASSERT_TRUE(spm->splits_words());
  const std::vector<std::string> alphabet = {
      "a", "b", "the", "\xE2\x96\x81", "\xE2\x96\x81\xE2\x96\x81", "\n", "in", "é", "我", "🦙", "1", "ing",
      ".", "'", "er",  "▁▁▁"};
  std::mt19937 rng(5);
  for (int iter = 0; iter < 500; ++iter) {
    std::string s;
    int len = static_cast<int>(rng() % 30);
    for (int i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
    Ids split, whole;
    spm->Encode(s, &split, true);
    spm->Encode(s, &whole, false);
    ASSERT_EQ(split, whole) << "'" << s << "'";
  }
}

// --- Vocab loading ------------------------------------------------------------------------

Result<Vocab> LoadFromWriter(const GgufWriter& w) {
  auto f = GgufFile::FromBytes(w.WriteToBytes(), "test.gguf");
  if (!f.ok()) return f.status();
  return LoadVocab(**f);
}

GgufWriter MinimalWriter() {
  GgufWriter w;
  w.Set("tokenizer.ggml.model", GgufValue::Str("llama"));
  w.Set("tokenizer.ggml.tokens", GgufValue::StrArray({"<unk>", "<s>", "</s>", "a"}));
  w.Set("tokenizer.ggml.scores", GgufValue::F32Array({0, 0, 0, -1}));
  w.Set("tokenizer.ggml.token_type", GgufValue::I32Array({2, 3, 3, 1}));
  w.Set("tokenizer.ggml.bos_token_id", GgufValue::U32(1));
  w.Set("tokenizer.ggml.eos_token_id", GgufValue::U32(2));
  return w;
}

TEST(LoadVocab, ReadsKeysAndDefaults) {
  auto v = LoadFromWriter(MinimalWriter());
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->model, TokenizerModel::kSpm);
  EXPECT_EQ(v->bos, 1);
  EXPECT_EQ(v->eos, 2);
  EXPECT_TRUE(v->add_bos);
  EXPECT_FALSE(v->add_eos);
  EXPECT_TRUE(v->add_space_prefix);
  GgufWriter w = MinimalWriter();
  w.Set("tokenizer.ggml.add_space_prefix", GgufValue::Bool(false));
  w.Set("tokenizer.ggml.add_bos_token", GgufValue::Bool(false));
  auto v2 = LoadFromWriter(w);
  ASSERT_TRUE(v2.ok());
  EXPECT_FALSE(v2->add_space_prefix);
  EXPECT_FALSE(v2->add_bos);
}

TEST(LoadVocab, ErrorsNameTheProblem) {
  struct Case {
    const char* key;
    GgufValue value;
    const char* expect;
  } cases[] = {
      {"tokenizer.ggml.model", GgufValue::Str("t5"), "'t5' is not supported"},
      {"tokenizer.ggml.bos_token_id", GgufValue::U32(99), "bos_token_id = 99"},
      {"tokenizer.ggml.token_type", GgufValue::I32Array({1, 1}), "token_type has 2 entries"},
      {"tokenizer.ggml.scores", GgufValue::F32Array({0}), "scores has 1 entries"},
      {"tokenizer.ggml.tokens", GgufValue::U32(3), "tokenizer.ggml.tokens"},
  };
  for (const Case& c : cases) {
    GgufWriter w = MinimalWriter();
    w.Set(c.key, c.value);
    auto v = LoadFromWriter(w);
    ASSERT_FALSE(v.ok()) << c.key;
    EXPECT_NE(v.status().message().find(c.expect), std::string::npos) << v.status().message();
    EXPECT_NE(v.status().message().find("test.gguf"), std::string::npos) << v.status().message();
  }
  GgufWriter bpe_without_merges;
  bpe_without_merges.Set("tokenizer.ggml.model", GgufValue::Str("gpt2"));
  bpe_without_merges.Set("tokenizer.ggml.tokens", GgufValue::StrArray({"a"}));
  auto v = LoadFromWriter(bpe_without_merges);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("tokenizer.ggml.merges"), std::string::npos) << v.status().message();
}

}  // namespace
}  // namespace herd
