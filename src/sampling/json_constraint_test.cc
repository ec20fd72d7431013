#include "sampling/json_constraint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "sampling/token_trie.h"

namespace herd {
namespace {

using ::testing::ElementsAreArray;

// A hand-made vocabulary; token 0 is the end token, 18 a control token (empty piece).
std::vector<std::string> SmallPieces() {
  return {
      "",          // 0  <eos>
      "{",         // 1
      "}",         // 2
      "\"",        // 3
      "a",         // 4
      "\":",       // 5
      "1",         // 6
      " ",         // 7
      ",",         // 8
      "{\"",       // 9
      "\"}",       // 10
      "\xc3",      // 11  first byte of U+00E9
      "\xa9",      // 12  its second byte
      "\xc3\xa9",  // 13  U+00E9
      "[",         // 14
      "]",         // 15
      "\\",        // 16
      "n",         // 17
      "",          // 18  a control token
      "true",      // 19
      "\n",        // 20
      "}}",        // 21
      "12",        // 22
      ".5",        // 23
      "\"\n",      // 24
      "   ",       // 25
      "a\"",       // 26
  };
}

// The allowed set after accepting `prefix` (token ids of SmallPieces()).
std::vector<int32_t> AllowedAfter(const std::vector<int32_t>& prefix, const JsonLimits& limits = {}) {
  JsonConstraint c(JsonVocabulary::Create(SmallPieces()), {0}, limits);
  for (int32_t id : prefix) EXPECT_TRUE(c.Accept(id)) << id;
  return c.Allowed();
}

TEST(JsonConstraintTest, MaskOnASmallVocabularyIsExactlyTheValidTokens) {
  EXPECT_THAT(AllowedAfter({}), ElementsAreArray({1, 7, 9, 20, 25}));
  EXPECT_THAT(AllowedAfter({1}), ElementsAreArray({2, 3, 5, 7, 10, 20, 25}));  // ": opens a key ":...
  // In a key: every token that stays in or properly ends the string; not '"}' (a ':' is due),
  // not a lone continuation byte, not a newline, never the control or end token.
  EXPECT_THAT(AllowedAfter({9}),
              ElementsAreArray({1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 14, 15, 16, 17, 19, 21, 22, 23, 24, 25, 26}));
  EXPECT_THAT(AllowedAfter({9, 4, 5, 6}), ElementsAreArray({2, 6, 7, 8, 20, 22, 23, 25}));
  EXPECT_THAT(AllowedAfter({9, 4, 5, 6, 2}), ElementsAreArray({0}));  // complete: only the end token
  EXPECT_THAT(AllowedAfter({9, 4, 5, 3, 11}), ElementsAreArray({12}));
  EXPECT_THAT(AllowedAfter({9, 4, 5, 3, 16}), ElementsAreArray({3, 5, 10, 16, 17, 19}));  // \t of "true"
  EXPECT_THAT(AllowedAfter({9, 4, 5, 14}),
              ElementsAreArray({1, 3, 5, 6, 7, 9, 10, 14, 15, 17, 19, 20, 22, 25}));  // 17: n of null
  JsonLimits limits;
  limits.max_whitespace = 3;
  EXPECT_THAT(AllowedAfter({1, 7}, limits), ElementsAreArray({2, 3, 5, 7, 10, 20}));
  EXPECT_THAT(AllowedAfter({1, 25}, limits), ElementsAreArray({2, 3, 5, 10}));
}

TEST(JsonConstraintTest, MaskBansWithMinusInfinityAndKeepsAllowedLogits) {
  const std::vector<std::vector<int32_t>> prefixes = {{}, {9}, {1, 3, 4, 5, 6}, {9, 5, 3, 11}};
  for (const auto& prefix : prefixes) {
    JsonConstraint c(JsonVocabulary::Create(SmallPieces()), {0});
    for (int32_t id : prefix) ASSERT_TRUE(c.Accept(id));
    const std::vector<int32_t> allowed = c.Allowed();
    ASSERT_FALSE(allowed.empty());
    std::vector<float> row(SmallPieces().size());
    for (size_t i = 0; i < row.size(); ++i) row[i] = 0.25f * static_cast<float>(i) - 3.0f;
    const std::vector<float> before = row;
    EXPECT_EQ(c.Mask(row.data()), static_cast<int32_t>(allowed.size()));
    for (size_t i = 0; i < row.size(); ++i) {
      if (std::find(allowed.begin(), allowed.end(), static_cast<int32_t>(i)) != allowed.end()) {
        EXPECT_EQ(row[i], before[i]) << "token " << i;
      } else {
        EXPECT_TRUE(std::isinf(row[i]) && row[i] < 0) << "token " << i;
      }
    }
  }
}

TEST(JsonConstraintTest, AcceptRefusesDisallowedTokensAndKeepsTheState) {
  JsonConstraint c(JsonVocabulary::Create(SmallPieces()), {0});
  EXPECT_FALSE(c.Accept(0));   // end token before completion
  EXPECT_FALSE(c.Accept(18));  // control token
  EXPECT_FALSE(c.Accept(2));
  EXPECT_FALSE(c.Accept(-1));
  EXPECT_FALSE(c.Accept(1000));
  ASSERT_TRUE(c.Accept(9));    // {"
  ASSERT_TRUE(c.Accept(4));    // a
  EXPECT_FALSE(c.Accept(10));  // "} : a ':' is due
  ASSERT_TRUE(c.Accept(5));    // ":
  ASSERT_TRUE(c.Accept(22));   // 12
  EXPECT_FALSE(c.IsComplete());
  auto fork = c.Clone();
  ASSERT_TRUE(c.Accept(21) == false);  // }} closes one level too many
  ASSERT_TRUE(c.Accept(2));
  EXPECT_TRUE(c.IsComplete());
  EXPECT_FALSE(c.Accept(7));  // nothing after the object
  EXPECT_TRUE(c.Accept(0));
  // The fork kept its own state.
  EXPECT_FALSE(fork->IsComplete());
  EXPECT_TRUE(fork->Accept(23));  // .5
  EXPECT_TRUE(fork->Accept(2));
  EXPECT_TRUE(fork->IsComplete());
}

TEST(JsonConstraintTest, NoEndTokenMeansNothingIsAllowedAtCompletion) {
  JsonConstraint c(JsonVocabulary::Create(SmallPieces()), {});
  ASSERT_TRUE(c.Accept(1));
  ASSERT_TRUE(c.Accept(2));
  std::vector<float> row(SmallPieces().size(), 1.0f);
  EXPECT_EQ(c.Mask(row.data()), 0);
}

TEST(TokenTrieTest, SharedPrefixesDuplicatesAndExcludedTokens) {
  const std::vector<std::string> pieces = {"ab", "a", "", "abc", "b", "ab", "\xff", "x"};
  const std::vector<bool> include = {true, true, true, true, true, true, true, false};
  const TokenTrie t = TokenTrie::Build(pieces, include);
  EXPECT_EQ(t.n_nodes(), 5u);  // a, ab, abc, b, \xff
  EXPECT_EQ(t.n_tokens(), 6u);
  EXPECT_EQ(t.max_depth(), 3);
  // A walk that accepts only 'a' and 'b' bytes, counting depth in the state.
  std::vector<int> stack;
  std::vector<std::pair<int32_t, int>> got;
  t.Walk(
      0, [](int& s, uint8_t c) { return ++s, c == 'a' || c == 'b'; },
      [&](int32_t id, const int& s) { got.emplace_back(id, s); }, stack);
  EXPECT_THAT(got, ElementsAreArray({std::pair<int32_t, int>{1, 1}, {0, 2}, {5, 2}, {4, 1}}));
}

// A vocabulary of every single byte, JSON-ish fragments and random byte strings over an
// alphabet that exercises every state (escapes, surrogates, UTF-8 pieces, numbers, literals).
std::vector<std::string> RandomPieces(std::mt19937& rng) {
  std::vector<std::string> p = {"", ""};  // 0: end, 1: control
  for (int b = 0; b < 256; ++b) p.emplace_back(1, static_cast<char>(b));
  for (const char* s : {"{\"",
                        "\":",
                        "\",",
                        "\"}",
                        "}}",
                        "]}",
                        "},",
                        "],",
                        "true",
                        "false",
                        "null",
                        "\\u",
                        "\\n",
                        "\\\"",
                        "\":\"",
                        "\", \"",
                        "  ",
                        "\n  ",
                        "    ",
                        "\xc3\xa9",
                        "\xe4\xb8\xad",
                        "\xf0\x9f\x98\x80",
                        "ud83d",
                        "\\ud83d",
                        "\\ude00",
                        "1.5",
                        "e+",
                        "-0",
                        "00",
                        "123",
                        "hello",
                        " world",
                        "\"name\"",
                        "[{",
                        "}]",
                        "[]",
                        "{}",
                        ": ",
                        ", "}) {
    p.emplace_back(s);
  }
  const std::string alphabet = "{}[]\":,\\ 0123456789eE.-+trufalsnxDdCcBb\n\t/\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\xed\xa0";
  for (int i = 0; i < 300; ++i) {
    std::string s;
    const int len = 2 + static_cast<int>(rng() % 5);
    for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
    p.push_back(s);
  }
  return p;
}

// The allowed set by brute force: each token's bytes fed to a copy of the recognizer.
std::vector<int32_t> BruteForce(const JsonRecognizer& state, const std::vector<std::string>& pieces,
                                int32_t end_token) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const int32_t id = static_cast<int32_t>(i);
    if (id == end_token) {
      if (state.complete()) out.push_back(id);
      continue;
    }
    JsonRecognizer r = state;
    if (!pieces[i].empty() && r.Feed(pieces[i])) out.push_back(id);
  }
  return out;
}

TEST(JsonConstraintTest, RandomGenerationAlwaysParsesAsAnObjectAndEndsOnlyWhenComplete) {
  std::mt19937 rng(1234);
  const std::vector<std::string> pieces = RandomPieces(rng);
  const auto vocab = JsonVocabulary::Create(pieces);
  const std::vector<int32_t> closers = {2 + '"', 2 + '}', 2 + ']'};  // single-byte token ids
  std::normal_distribution<float> normal(0.0f, 2.0f);
  int completed = 0;
  for (int trial = 0; trial < 300; ++trial) {
    JsonLimits limits;
    limits.max_whitespace = 1 + trial % 8;
    limits.max_depth = 1 + trial % 10;
    JsonConstraint c(vocab, {0}, limits);
    std::string text;
    const bool greedy = trial % 2 == 0;
    bool ended = false;
    for (int step = 0; step < 3000 && !ended; ++step) {
      std::vector<float> row(pieces.size());
      for (float& x : row) x = normal(rng);
      // After a while, favour closing quotes and brackets so that documents finish.
      if (step > 40) {
        for (int32_t id : closers) row[id] += 4.0f;
      }
      const std::vector<int32_t> want = BruteForce(c.state(), pieces, 0);
      const int32_t n_allowed = c.Mask(row.data());
      std::vector<int32_t> got;
      for (size_t i = 0; i < row.size(); ++i) {
        if (!std::isinf(row[i])) got.push_back(static_cast<int32_t>(i));
      }
      ASSERT_EQ(got, want) << "trial " << trial << " after " << text;
      ASSERT_EQ(n_allowed, static_cast<int32_t>(got.size()));
      ASSERT_GT(n_allowed, 0) << text;  // every byte is a token: never a dead end
      int32_t pick = got[0];
      if (greedy) {
        for (int32_t id : got) {
          if (row[id] > row[pick]) pick = id;
        }
      } else {  // a draw from softmax(row) over the allowed tokens
        std::vector<double> w;
        for (int32_t id : got) w.push_back(std::exp(static_cast<double>(row[id])));
        pick = got[std::discrete_distribution<size_t>(w.begin(), w.end())(rng)];
      }
      if (c.IsComplete()) {
        ASSERT_EQ(got, std::vector<int32_t>{0});
      }
      ASSERT_EQ(pick == 0, c.IsComplete()) << "the end token comes exactly at completion";
      ASSERT_TRUE(c.Accept(pick));
      if (pick == 0) {
        ended = true;
      } else {
        text += pieces[pick];
      }
    }
    if (!ended) continue;
    ++completed;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      FAIL() << e.what() << "\n" << text;
    }
    EXPECT_TRUE(j.is_object()) << text;
    EXPECT_TRUE(c.IsComplete());
  }
  EXPECT_GT(completed, 250);
}

}  // namespace
}  // namespace herd
