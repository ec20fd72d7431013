#include "sampling/json_recognizer.h"

#include <gtest/gtest.h>

#include <string>

namespace herd {
namespace {

// Index of the first byte the recognizer refuses; -1 if it accepts every byte.
int FirstRefused(const std::string& doc, const JsonLimits& limits = {}) {
  JsonRecognizer r(limits);
  for (size_t i = 0; i < doc.size(); ++i) {
    if (!r.Step(static_cast<uint8_t>(doc[i]))) return static_cast<int>(i);
  }
  return -1;
}

TEST(JsonRecognizerTest, AcceptsValidObjectsAndIsCompleteOnlyAtTheEnd) {
  const std::string docs[] = {
      "{}",
      " \n\t\r{}",
      R"({"a":1})",
      R"({ "a" : { "b" : [ ] , "c" : [ 1 , 2 ] } })",
      R"({"a":[0,-0,1,-12,0.5,-0.0e+10,12.34E-2,1e5,7E+0,true,false,null,"x",{},[],[[]]]})",
      R"({"k":"\u00e9\ud83d\ude00\n\"\\\/\b\f\r\t","":""})",
      "{\"utf8\":\"\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80 \xef\xbf\xbf \xf4\x8f\xbf\xbf \xe0\xa0\x80\"}",
      R"({"\u0000":"\uFFFF\uD7FF\uE000\uDBFF\uDFFF"})",
      "{\"pretty\": {\n    \"nested\": [\n        1,\n        2\n    ]\n}\n}",
  };
  for (const std::string& doc : docs) {
    JsonRecognizer r;
    for (size_t i = 0; i < doc.size(); ++i) {
      EXPECT_FALSE(r.complete()) << doc << " at " << i;
      ASSERT_TRUE(r.Step(static_cast<uint8_t>(doc[i]))) << doc << " refused at " << i;
    }
    EXPECT_TRUE(r.complete()) << doc;
    EXPECT_FALSE(r.Step(' ')) << "nothing may follow the object: " << doc;
    EXPECT_EQ(r.depth(), 0);
  }
}

TEST(JsonRecognizerTest, RefusesInvalidDocumentsAtTheFirstImpossibleByte) {
  struct Case {
    std::string doc;
    int refused_at;
  };
  const Case cases[] = {
      {"[]", 0},  // the top level must be an object
      {R"("a")", 0},
      {"1", 0},
      {R"({"a":01})", 6},
      {R"({"a":1.})", 7},
      {R"({"a":.5})", 5},
      {R"({"a":-})", 6},
      {R"({"a":+1})", 5},
      {R"({"a":1e})", 7},
      {R"({"a":1e+})", 8},
      {R"({"a":--1})", 6},
      {R"({"a":-01})", 7},
      {R"({"a":1.5.})", 8},
      {R"({"a":0x1})", 6},
      {R"({"a":tru})", 8},
      {R"({"a":True})", 5},
      {R"({"a":nul})", 8},
      {R"({"a":truex})", 9},
      {R"({,})", 1},
      {R"({a:1})", 1},
      {R"({"a"})", 4},
      {R"({"a"::1})", 5},
      {R"({"a":1,})", 7},
      {R"({"a":[1,]})", 8},
      {R"({"a":[,1]})", 6},
      {R"({"a":[1})", 7},
      {R"({"a":1])", 6},
      {R"({"a":1 2})", 7},
      {R"({"a":1}})", 7},
      {"{} ", 2},
      {"{}{}", 2},
      {"{'a':1}", 1},
      {"{\"a\x01\"", 3},
      {"{\"a\n\"", 3},
      {"{\"a\x7f\":1}", -1},  // DEL is allowed unescaped
      {R"({"\q")", 3},
      {R"({"\x41")", 3},
      {R"({"\u12G4")", 6},
      {R"({"\uDC00")", 5},  // a lone low surrogate is refused at its second digit
      {R"({"\uDFFF")", 5},
      {R"({"\uD800")", 8},  // a high surrogate must be followed by \u
      {R"({"\uD800\n")", 9},
      {R"({"\uD800\u0041")", 10},  // ... and the \u must be a low surrogate
      {R"({"\uD800\uDBFF")", 11},
      {R"({"\uD800\uE000")", 10},
      {"{\"\xc0\x80\"", 2},  // overlong lead bytes
      {"{\"\xc1\xbf\"", 2},
      {"{\"\x80\"", 2},  // a stray continuation byte
      {"{\"\xc3\"", 3},  // a truncated character
      {"{\"\xc3\xa9\xa9\"", 4},
      {"{\"\xe0\x80\x80\"", 3},  // overlong 3-byte form
      {"{\"\xe0\x9f\xbf\"", 3},
      {"{\"\xed\xa0\x80\"", 3},  // an encoded surrogate
      {"{\"\xf0\x80\x80\x80\"", 3},
      {"{\"\xf4\x90\x80\x80\"", 3},  // above U+10FFFF
      {"{\"\xf5\x80\x80\x80\"", 2},
      {"{\"\xff\"", 2},
      {R"({"a":[1,2)", -1},  // valid prefixes
      {R"({"a":{"b":"c)", -1},
      {R"({"a":-)", -1},
      {R"({"\uD83D\uDE)", -1},
  };
  for (const Case& c : cases) EXPECT_EQ(FirstRefused(c.doc), c.refused_at) << c.doc;
}

TEST(JsonRecognizerTest, WhitespaceRunsAreLimitedOutsideStrings) {
  JsonLimits limits;
  limits.max_whitespace = 3;
  EXPECT_EQ(FirstRefused("   {   \"a\"   :   1   ,   \"b\"   :   [   2   ]   }", limits), -1);
  EXPECT_EQ(FirstRefused("    {}", limits), 3);
  EXPECT_EQ(FirstRefused("{\"a\":1 \n\t\r}", limits), 9);
  EXPECT_EQ(FirstRefused("{\"a\":\"          \"}", limits), -1);  // inside strings: any length
  limits.max_whitespace = 0;
  EXPECT_EQ(FirstRefused("{ }", limits), 1);
  EXPECT_EQ(FirstRefused("{\"a\":[1,2]}", limits), -1);
}

TEST(JsonRecognizerTest, NumbersStayFiniteDoubles) {
  EXPECT_EQ(FirstRefused(R"({"a":[1e99,-1E-99,1e+99,0.000000000000000001e-99]})"), -1);
  EXPECT_EQ(FirstRefused(R"({"a":1e100})"), 9);
  EXPECT_EQ(FirstRefused(R"({"a":1.5e-123})"), 12);
  EXPECT_EQ(FirstRefused("{\"a\":-" + std::string(100, '9') + "}"), -1);
  EXPECT_EQ(FirstRefused("{\"a\":-" + std::string(101, '9') + "}"), 106);
  EXPECT_EQ(FirstRefused("{\"a\":0." + std::string(300, '9') + "}"), -1);  // fraction digits: any number
  JsonLimits limits;
  limits.max_integer_digits = 3;
  limits.max_exponent_digits = 1;
  EXPECT_EQ(FirstRefused(R"({"a":[999,1e9,0e0,1000]})", limits), 21);
  EXPECT_EQ(FirstRefused(R"({"a":1e10})", limits), 8);
}

TEST(JsonRecognizerTest, NestingIsLimited) {
  JsonLimits limits;
  limits.max_depth = 3;
  EXPECT_EQ(FirstRefused(R"({"a":{"b":[1]}})", limits), -1);
  EXPECT_EQ(FirstRefused(R"({"a":{"b":{"c":1}}})", limits), -1);
  EXPECT_EQ(FirstRefused(R"({"a":{"b":{"c":{}}}})", limits), 15);
  EXPECT_EQ(FirstRefused(R"({"a":[[[1]]]})", limits), 7);
  limits.max_depth = 128;
  std::string deep = "{\"a\":";
  for (int i = 1; i < 128; ++i) deep += "[";
  for (int i = 1; i < 128; ++i) deep += "]";
  deep += "}";
  JsonRecognizer r(limits);
  ASSERT_TRUE(r.Feed(deep.substr(0, 5 + 127)));
  EXPECT_EQ(r.depth(), 128);
  EXPECT_FALSE(JsonRecognizer(r).Step('['));  // the stack has 128 levels, all tracked
  ASSERT_TRUE(r.Feed(deep.substr(5 + 127)));
  EXPECT_TRUE(r.complete());
}

TEST(JsonRecognizerTest, ClosersMustMatchAcrossTheWholeStack) {
  // Alternate objects and arrays past 64 levels (the second stack word).
  std::string open = "{\"k\":", close;
  for (int i = 1; i < 100; ++i) {
    if (i % 2 == 1) {
      open += "[";
      close = "]" + close;
    } else {
      open += "{\"k\":";
      close = "}" + close;
    }
  }
  JsonLimits limits;
  limits.max_depth = 128;
  JsonRecognizer r(limits);
  ASSERT_TRUE(r.Feed(open + "0"));
  for (char c : close) {
    const char wrong = c == ']' ? '}' : ']';
    EXPECT_FALSE(JsonRecognizer(r).Step(static_cast<uint8_t>(wrong)));
    ASSERT_TRUE(r.Step(static_cast<uint8_t>(c)));
  }
  EXPECT_FALSE(r.complete());
  EXPECT_TRUE(r.Step('}'));
  EXPECT_TRUE(r.complete());
}

TEST(JsonRecognizerTest, PlainStringStateIsReportedOnlyWithNothingPending) {
  JsonRecognizer r;
  ASSERT_TRUE(r.Feed("{\"a"));
  EXPECT_TRUE(r.in_plain_string());
  ASSERT_TRUE(r.Feed("\\"));
  EXPECT_FALSE(r.in_plain_string());
  ASSERT_TRUE(r.Feed("u00"));
  EXPECT_FALSE(r.in_plain_string());
  ASSERT_TRUE(r.Feed("e9\xc3"));
  EXPECT_FALSE(r.in_plain_string());
  ASSERT_TRUE(r.Feed("\xa9"));
  EXPECT_TRUE(r.in_plain_string());
  ASSERT_TRUE(r.Feed("\""));
  EXPECT_FALSE(r.in_plain_string());
}

}  // namespace
}  // namespace herd
