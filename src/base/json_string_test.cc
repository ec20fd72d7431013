#include "base/json_string.h"

#include <gtest/gtest.h>

namespace herd {
namespace {

std::string Escaped(std::string_view s) {
  std::string out = "<";
  AppendJsonEscaped(s, &out);
  return out;
}

TEST(JsonStringTest, EscapesLikePythonJsonDumpsWithoutEnsureAscii) {
  // Expected strings from json.dumps(s, ensure_ascii=False)[1:-1].
  EXPECT_EQ(Escaped("a\"b\\c"), "<a\\\"b\\\\c");
  EXPECT_EQ(Escaped("\n\r\t\b\f"), "<\\n\\r\\t\\b\\f");
  EXPECT_EQ(Escaped(std::string("\x01\x1f\x7f", 3)), "<\\u0001\\u001f\x7f");
  EXPECT_EQ(Escaped("caf\xC3\xA9 \xE2\x82\xAC"), "<caf\xC3\xA9 \xE2\x82\xAC");
  EXPECT_EQ(Escaped(std::string("\0", 1)), "<\\u0000");
}

}  // namespace
}  // namespace herd
