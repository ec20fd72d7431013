#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace herd::unicode {
namespace {

TEST(Unicode, VersionIsRecorded) { EXPECT_NE(std::string(UnicodeVersion()), ""); }

TEST(Unicode, Categories) {
  EXPECT_EQ(GetCategory('A'), kLu);
  EXPECT_EQ(GetCategory('z'), kLl);
  EXPECT_EQ(GetCategory('7'), kNd);
  EXPECT_EQ(GetCategory(' '), kZs);
  EXPECT_EQ(GetCategory('\n'), kCc);
  EXPECT_EQ(GetCategory('!'), kPo);
  EXPECT_EQ(GetCategory('$'), kSc);
  EXPECT_EQ(GetCategory('+'), kSm);
  EXPECT_EQ(GetCategory('`'), kSk);
  EXPECT_EQ(GetCategory(0x00BD), kNo);    // ½
  EXPECT_EQ(GetCategory(0x0439), kLl);    // й
  EXPECT_EQ(GetCategory(0x17B6), kMc);    // Khmer vowel sign AA
  EXPECT_EQ(GetCategory(0x0301), kMn);    // combining acute
  EXPECT_EQ(GetCategory(0x200D), kCf);    // zero width joiner
  EXPECT_EQ(GetCategory(0x4E00), kLo);    // 一
  EXPECT_EQ(GetCategory(0x1F999), kSo);   // 🦙
  EXPECT_EQ(GetCategory(0x1F600), kSo);   // 😀
  EXPECT_EQ(GetCategory(0x10400), kLu);   // Deseret capital long I
  EXPECT_EQ(GetCategory(0xE000), kCo);    // private use
  EXPECT_EQ(GetCategory(0xD800), kCs);    // surrogate
  EXPECT_EQ(GetCategory(0x0378), kCn);    // unassigned
  EXPECT_EQ(GetCategory(0x110000), kCn);  // past the end
  EXPECT_TRUE(InMask(0x01C5, kLetter));   // Dž (Lt)
  EXPECT_TRUE(InMask(0xFF10, kNumber));   // fullwidth 0
}

TEST(Unicode, WhiteSpaceProperty) {
  for (uint32_t cp : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x200Au, 0x2028u,
                      0x2029u, 0x202Fu, 0x205Fu, 0x3000u}) {
    EXPECT_TRUE(IsWhitespace(cp)) << std::hex << cp;
  }
  // Not White_Space although some libraries call them spaces.
  for (uint32_t cp : {0x1Cu, 0x1Fu, 0x200Bu, 0x180Eu, 0xFEFFu, 0x61u}) EXPECT_FALSE(IsWhitespace(cp)) << std::hex << cp;
}

TEST(Unicode, Utf8DecodeValid) {
  const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\xA6\x99";  // a é € 🦙
  std::vector<uint32_t> cps = DecodeAll(s);
  EXPECT_EQ(cps, (std::vector<uint32_t>{'a', 0xE9, 0x20AC, 0x1F999}));
  std::string back;
  for (uint32_t cp : cps) AppendUtf8(cp, &back);
  EXPECT_EQ(back, s);
}

TEST(Unicode, Utf8DecodeRejectsMalformed) {
  auto decode = [](const std::string& s, size_t* len) { return DecodeUtf8(s.data(), s.size(), len); };
  size_t len = 0;
  EXPECT_EQ(decode("\x80", &len), kInvalid);  // lone continuation
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(decode("\xC0\xAF", &len), kInvalid);          // overlong '/'
  EXPECT_EQ(decode("\xE0\x80\xAF", &len), kInvalid);      // overlong
  EXPECT_EQ(decode("\xED\xA0\x80", &len), kInvalid);      // surrogate
  EXPECT_EQ(decode("\xF4\x90\x80\x80", &len), kInvalid);  // > U+10FFFF
  EXPECT_EQ(decode("\xF0\x9F\xA6", &len), kInvalid);      // truncated
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(decode("\xFF", &len), kInvalid);
  EXPECT_EQ(DecodeAll("a\xFFz"), (std::vector<uint32_t>{'a', 0xFFFD, 'z'}));
}

TEST(Unicode, CompleteUtf8Prefix) {
  EXPECT_EQ(CompleteUtf8Prefix(""), 0u);
  EXPECT_EQ(CompleteUtf8Prefix("abc"), 3u);
  EXPECT_EQ(CompleteUtf8Prefix("ab\xF0"), 2u);  // lead byte of a 4-byte character
  EXPECT_EQ(CompleteUtf8Prefix("ab\xF0\x9F"), 2u);
  EXPECT_EQ(CompleteUtf8Prefix("ab\xF0\x9F\xA6"), 2u);
  EXPECT_EQ(CompleteUtf8Prefix("ab\xF0\x9F\xA6\x99"), 6u);  // complete
  EXPECT_EQ(CompleteUtf8Prefix("\xC3"), 0u);
  EXPECT_EQ(CompleteUtf8Prefix("\xC3\xA9"), 2u);
  EXPECT_EQ(CompleteUtf8Prefix("a\x80"), 2u);      // stray continuation: never completes
  EXPECT_EQ(CompleteUtf8Prefix("a\xE0\x80"), 3u);  // E0 80 can never become valid
  EXPECT_EQ(CompleteUtf8Prefix("a\xFF"), 2u);
}

TEST(Unicode, Nfd) {
  EXPECT_EQ(Nfd({0xC4}), (std::vector<uint32_t>{'A', 0x308}));           // Ä
  EXPECT_EQ(Nfd({0x1EED}), (std::vector<uint32_t>{'u', 0x31B, 0x309}));  // ử: horn before hook
  EXPECT_EQ(Nfd({0xAC00}), (std::vector<uint32_t>{0x1100, 0x1161}));     // 가
  EXPECT_EQ(Nfd({0xAC01}), (std::vector<uint32_t>{0x1100, 0x1161, 0x11A8}));
  // Canonical ordering: dot below (220) moves before acute (230).
  EXPECT_EQ(Nfd({'a', 0x301, 0x323}), (std::vector<uint32_t>{'a', 0x323, 0x301}));
  EXPECT_EQ(Nfd({'x'}), (std::vector<uint32_t>{'x'}));
}

TEST(Unicode, Lowercase) {
  EXPECT_EQ(ToLowerSimple('A'), uint32_t{'a'});
  EXPECT_EQ(ToLowerSimple('a'), uint32_t{'a'});
  EXPECT_EQ(ToLowerSimple(0x411), 0x431u);  // Б
  EXPECT_EQ(ToLowerSimple(0x100), 0x101u);  // Ā (stride-2 run)
  EXPECT_EQ(ToLowerSimple(0x101), 0x101u);
  EXPECT_EQ(ToLowerSimple(0x3A3), 0x3C3u);  // Σ
  EXPECT_EQ(ToLowerSimple(0x10400), 0x10428u);
  std::vector<uint32_t> out;
  AppendLower(0x130, &out);  // İ -> i + combining dot above
  EXPECT_EQ(out, (std::vector<uint32_t>{'i', 0x307}));
}

}  // namespace
}  // namespace herd::unicode
