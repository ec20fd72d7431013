#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

namespace herd {
namespace {

// Feeds pieces, returns everything emitted (with Flush when no stop matched).
std::string Feed(StopMatcher& m, const std::vector<std::string>& pieces, std::vector<std::string>* emitted = nullptr) {
  std::string all;
  for (const auto& p : pieces) {
    std::string out = m.Push(p);
    if (emitted) emitted->push_back(out);
    all += out;
  }
  if (!m.matched()) all += m.Flush();
  return all;
}

TEST(StopMatcherTest, NoStopsPassesTextThrough) {
  StopMatcher m({});
  std::vector<std::string> e;
  EXPECT_EQ(Feed(m, {"a", "bc"}, &e), "abc");
  EXPECT_EQ(e, (std::vector<std::string>{"a", "bc"}));
  EXPECT_FALSE(m.matched());
}

TEST(StopMatcherTest, StopSpanningPiecesIsHeldBackAndNeverEmitted) {
  StopMatcher m({"</end>"});
  std::vector<std::string> e;
  EXPECT_EQ(Feed(m, {"hello </", "en", "d> tail"}, &e), "hello ");
  EXPECT_EQ(e, (std::vector<std::string>{"hello ", "", ""}));
  EXPECT_TRUE(m.matched());
  EXPECT_EQ(m.matched_string(), "</end>");
  EXPECT_EQ(m.Push("more"), "");
}

TEST(StopMatcherTest, FalseStartIsReleasedWhenTheNextPieceRulesItOut) {
  StopMatcher m({"STOP"});
  std::vector<std::string> e;
  EXPECT_EQ(Feed(m, {"a ST", "OX b", "S"}, &e), "a STOX bS");
  EXPECT_EQ(e, (std::vector<std::string>{"a ", "STOX b", ""}));
  EXPECT_FALSE(m.matched());
}

TEST(StopMatcherTest, EarliestMatchWinsAcrossSeveralStops) {
  StopMatcher m({"world", "o w"});
  EXPECT_EQ(Feed(m, {"hello world"}), "hell");
  EXPECT_EQ(m.matched_string(), "o w");
}

TEST(StopMatcherTest, OverlappingPrefixesHoldTheLongestCandidate) {
  StopMatcher m({"aab"});
  std::vector<std::string> e;
  EXPECT_EQ(Feed(m, {"xa", "a", "a", "b"}, &e), "xa");
  EXPECT_EQ(e, (std::vector<std::string>{"x", "", "a", ""}));
  EXPECT_TRUE(m.matched());
}

TEST(StopMatcherTest, MultiByteCharactersAreNeverSplit) {
  StopMatcher m({"é!"});  // "é" is 2 bytes
  std::vector<std::string> e;
  EXPECT_EQ(Feed(m, {"caf\xC3\xA9", "?"}, &e), "caf\xC3\xA9?");
  EXPECT_EQ(e[0], "caf");
}

}  // namespace
}  // namespace herd
