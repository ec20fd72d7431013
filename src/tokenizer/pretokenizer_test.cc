#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace herd {
namespace {

using V = std::vector<std::string>;

PreTokenizer Make(const char* name) {
  auto pt = PreTokenizer::ForName(name);
  EXPECT_TRUE(pt.ok()) << pt.status().ToString();
  return std::move(pt).value();
}

TEST(PreTokenizer, Gpt2Splits) {
  PreTokenizer pt = Make("gpt-2");
  EXPECT_EQ(pt.SplitToStrings("Hello world's   end!!\n\n x"),
            (V{"Hello", " world", "'s", "  ", " end", "!!", "\n\n", " x"}));
  EXPECT_EQ(pt.SplitToStrings(" 123abc"), (V{" 123", "abc"}));
  EXPECT_EQ(pt.SplitToStrings("a \tb"), (V{"a", " ", "\t", "b"}));
  EXPECT_EQ(pt.SplitToStrings("tail  "), (V{"tail", "  "}));
  EXPECT_EQ(pt.SplitToStrings("'S"), (V{"'", "S"}));  // contractions are case-sensitive in GPT-2
}

TEST(PreTokenizer, Llama3Splits) {
  PreTokenizer pt = Make("llama-bpe");
  EXPECT_EQ(pt.SplitToStrings("Hello world's 1234567 x"), (V{"Hello", " world", "'s", " ", "123", "456", "7", " x"}));
  EXPECT_EQ(pt.SplitToStrings("I'LL go"), (V{"I", "'LL", " go"}));
  EXPECT_EQ(pt.SplitToStrings("  \n\n  x"), (V{"  \n\n", " ", " x"}));
  EXPECT_EQ(pt.SplitToStrings("a,b ...\n\nc"), (V{"a", ",b", " ...\n\n", "c"}));
  EXPECT_EQ(pt.SplitToStrings("\tword"), (V{"\tword"}));
}

TEST(PreTokenizer, Qwen2SplitsDigitsSingly) {
  PreTokenizer pt = Make("qwen2");
  EXPECT_EQ(pt.SplitToStrings("x 123"), (V{"x", " ", "1", "2", "3"}));
}

TEST(PreTokenizer, SequenceOfPatterns) {
  // Falcon: punctuation runs first, then GPT-2 inside each piece, then digit triples.
  PreTokenizer falcon = Make("falcon");
  EXPECT_EQ(falcon.SplitToStrings("a+b 12345"), (V{"a", "+", "b", " ", "123", "45"}));
  // Starcoder: every digit on its own.
  PreTokenizer star = Make("starcoder");
  EXPECT_EQ(star.SplitToStrings("x 42"), (V{"x", " ", "4", "2"}));
  // DeepSeek LLM: newlines alone, CJK runs, digit runs.
  PreTokenizer ds = Make("deepseek-llm");
  EXPECT_EQ(ds.SplitToStrings("Hi\n我想 99"), (V{"Hi", "\n", "我想", " ", "99"}));
}

TEST(PreTokenizer, PiecesCoverTheTextEvenWhenMalformed) {
  PreTokenizer pt = Make("llama3");
  std::string text = "ok \xFF\xC3 bad\x80";
  std::string joined;
  for (const std::string& s : pt.SplitToStrings(text)) joined += s;
  EXPECT_EQ(joined, text);
}

TEST(PreTokenizer, EveryFamilyCompiles) {
  for (const char* name :
       {"default",     "gpt-2",      "llama3",      "llama-bpe", "qwen2",      "deepseek-llm", "deepseek-coder",
        "deepseek-v3", "falcon",     "starcoder",   "refact",    "mpt",        "gpt-neox",     "command-r",
        "olmo",        "smollm",     "stablelm2",   "dbrx",      "poro-chat",  "viking",       "tekken",
        "gpt-4o",      "llama4",     "chameleon",   "bloom",     "jais",       "exaone",       "superbpe",
        "bailingmoe",  "seed-coder", "chatglm-bpe", "codeshell", "minerva-7b", "smaug-bpe"}) {
    auto pt = PreTokenizer::ForName(name);
    ASSERT_TRUE(pt.ok()) << name << ": " << pt.status().ToString();
    std::string joined;
    for (const std::string& s : pt->SplitToStrings("Hello, World! It's 2024: 12345 \n\n 你好 ünï")) joined += s;
    EXPECT_EQ(joined, "Hello, World! It's 2024: 12345 \n\n 你好 ünï") << name;
  }
  EXPECT_FALSE(PreTokenizer::ForName("no-such-family").ok());
}

TEST(PreTokenizer, Gpt4oAndTekkenSplitCamelCase) {
  EXPECT_EQ(Make("gpt-4o").SplitToStrings("HelloWorld's"), (V{"Hello", "World's"}));
  EXPECT_EQ(Make("tekken").SplitToStrings("HelloWorld"), (V{"Hello", "World"}));
}

TEST(PreTokenizer, SuperBpeSplitsDigitsInTriplesFromTheRight) {
  EXPECT_EQ(Make("superbpe").SplitToStrings("1234567"), (V{"1", "234", "567"}));
}

// The hand-written scanners must match the regex engine on the same published pattern.
class ScannerVsRegex : public ::testing::TestWithParam<const char*> {};

TEST_P(ScannerVsRegex, SameSplits) {
  auto fast = PreTokenizer::ForName(GetParam());
  ASSERT_TRUE(fast.ok());
  ASSERT_EQ(fast->patterns().size(), 1u);
  auto slow = PreTokenizer::FromPatterns(fast->patterns(), /*use_scanners=*/false);
  ASSERT_TRUE(slow.ok());
  // Random strings over an alphabet with every character class the patterns distinguish.
  const std::vector<std::string> alphabet = {
      "a",    "Z",        "é",    "й",    "我", "1",  "٣",  "½",  " ", " ", "  ", "\t", "\n", "\r", "\xE3\x80\x80",
      "'",    "s",        "S",    "t",    "re", "RE", "ll", "ve", "m", "d", ",",  ".",  "!",  "-",  "$",
      "🦙", "\xCC\x81", "\xFF", "\xC3", "/"};
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text;
    int len = static_cast<int>(rng() % 24);
    for (int i = 0; i < len; ++i) text += alphabet[rng() % alphabet.size()];
    ASSERT_EQ(fast->SplitToStrings(text), slow->SplitToStrings(text)) << "text: '" << text << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(Families, ScannerVsRegex, ::testing::Values("gpt-2", "llama3", "qwen2"));

}  // namespace
}  // namespace herd
