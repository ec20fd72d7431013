#include "tokenizer/regex.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/unicode.h"

namespace herd {
namespace {

// All non-empty matches, left to right, as strings.
std::vector<std::string> FindAll(const std::string& pattern, const std::string& text) {
  auto re = Regex::Compile(pattern);
  EXPECT_TRUE(re.ok()) << re.status().ToString();
  if (!re.ok()) return {};
  std::vector<uint32_t> cps = unicode::DecodeAll(text);
  std::vector<std::string> out;
  size_t pos = 0, b, e;
  while (re->Search(cps.data(), cps.size(), pos, &b, &e)) {
    std::string s;
    for (size_t i = b; i < e; ++i) unicode::AppendUtf8(cps[i], &s);
    out.push_back(s);
    pos = e;
  }
  return out;
}

using V = std::vector<std::string>;

TEST(Regex, LiteralsAndAlternationPriority) {
  EXPECT_EQ(FindAll("ab|a", "abab a"), (V{"ab", "ab", "a"}));
  EXPECT_EQ(FindAll("a|ab", "ab"), (V{"a"}));  // first alternative wins, not the longest
}

TEST(Regex, GreedyAndLazyQuantifiers) {
  EXPECT_EQ(FindAll("a+", "caaab"), (V{"aaa"}));
  EXPECT_EQ(FindAll("a+?", "aa"), (V{"a", "a"}));
  EXPECT_EQ(FindAll("a{2}", "aaaaa"), (V{"aa", "aa"}));
  EXPECT_EQ(FindAll("a{1,3}", "aaaaa"), (V{"aaa", "aa"}));
  EXPECT_EQ(FindAll("ba{2,}", "ba baa baaaa"), (V{"baa", "baaaa"}));
  EXPECT_EQ(FindAll("x?y", "xy y"), (V{"xy", "y"}));
  EXPECT_EQ(FindAll("[0-9][0-9][0-9]", "1234567"), (V{"123", "456"}));
}

TEST(Regex, BacktrackingIntoGreedyRuns) {
  EXPECT_EQ(FindAll("a*ab", "aaab"), (V{"aaab"}));
  EXPECT_EQ(FindAll(R"(\s*[\r\n]+)", "  \n \n  x"), (V{"  \n \n"}));
}

TEST(Regex, NegativeLookahead) {
  // The GPT-2 whitespace rule: a run of spaces leaves its last one for the next word.
  EXPECT_EQ(FindAll(R"(\s+(?!\S))", "a   b"), (V{"  "}));
  EXPECT_EQ(FindAll(R"(\s+(?!\S))", "a   "), (V{"   "}));
  EXPECT_EQ(FindAll("a(?=b)", "ab ac"), (V{"a"}));
}

TEST(Regex, UnicodeClasses) {
  EXPECT_EQ(FindAll(R"(\p{L}+)", "héllo wörld 42"), (V{"héllo", "wörld"}));
  EXPECT_EQ(FindAll(R"(\p{N}+)", "a½b٣4"), (V{"½", "٣4"}));
  EXPECT_EQ(FindAll(R"([^\s\p{L}\p{N}]+)", "a,.! b🦙"), (V{",.!", "🦙"}));
  EXPECT_EQ(FindAll(R"(\P{L}+)", "ab12cd"), (V{"12"}));
  EXPECT_EQ(FindAll(R"([\p{Lu}]+)", "abCDe"), (V{"CD"}));
  EXPECT_EQ(FindAll(R"(\pN)", "a1"), (V{"1"}));
  EXPECT_EQ(FindAll(R"(\s)",
                    "a\xE3\x80\x80"
                    "b"),
            (V{"\xE3\x80\x80"}));  // ideographic space
}

TEST(Regex, ClassesWithRangesAndEscapes) {
  EXPECT_EQ(FindAll(R"([\p{P}\$\+<=>\^~\|`]+)", "a$+<=>^~|`b,c"), (V{"$+<=>^~|`", ","}));
  EXPECT_EQ(FindAll(R"([!-/:-~])", "a!b"), (V{"a", "!", "b"}));
  EXPECT_EQ(FindAll(R"([^(\s|.,!?)]+)", "ab|c d.e"), (V{"ab", "c", "d", "e"}));
  EXPECT_EQ(FindAll(R"([一-龥]+)", "x我想y"), (V{"我想"}));
  EXPECT_EQ(FindAll(R"([\x{1F7D}]+)", "\xE1\xBD\xBD"), (V{"\xE1\xBD\xBD"}));
  EXPECT_EQ(FindAll(R"(\x41)", "BAB"), (V{"A"}));
}

TEST(Regex, CaseInsensitiveGroup) {
  EXPECT_EQ(FindAll("(?i:'s|'ll)", "'S 'Ll 's"), (V{"'S", "'Ll", "'s"}));
  EXPECT_EQ(FindAll("'s", "'S 's"), (V{"'s"}));
}

TEST(Regex, EndAnchor) {
  EXPECT_EQ(FindAll(R"(\s+$)", "a  "), (V{"  "}));
  EXPECT_EQ(FindAll(R"(\s+$)", "a  b"), (V{}));
}

TEST(Regex, MatchAtReportsEnd) {
  auto re = Regex::Compile("ab+");
  ASSERT_TRUE(re.ok());
  std::vector<uint32_t> cps = unicode::DecodeAll("xabbb");
  EXPECT_EQ(re->MatchAt(cps.data(), cps.size(), 1), 5);
  EXPECT_EQ(re->MatchAt(cps.data(), cps.size(), 0), -1);
}

TEST(Regex, CompileErrorsNameThePattern) {
  for (const char* bad : {"(ab", "ab)", "[abc", R"(\p{Nope})", "[z-a]", "*a", "(?<x>a)", R"(\q)"}) {
    auto re = Regex::Compile(bad);
    ASSERT_FALSE(re.ok()) << bad;
    EXPECT_NE(re.status().message().find(bad), std::string::npos) << re.status().message();
  }
}

}  // namespace
}  // namespace herd
