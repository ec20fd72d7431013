#include "http/http_message.h"

#include <gtest/gtest.h>

namespace herd {
namespace {

TEST(HeadersTest, CaseInsensitiveLookupSetAddRemove) {
  Headers h;
  h.Add("Content-Type", "text/plain");
  h.Add("X-Multi", "a");
  h.Add("x-multi", "b");
  EXPECT_EQ(h.Get("content-type").value(), "text/plain");
  EXPECT_EQ(h.Get("CONTENT-TYPE").value(), "text/plain");
  EXPECT_EQ(h.Get("X-MULTI").value(), "a");
  EXPECT_FALSE(h.Get("missing").has_value());
  EXPECT_EQ(h.GetOr("missing", "d"), "d");
  h.Set("X-Multi", "c");
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(h.Get("x-multi").value(), "c");
  h.Remove("CONTENT-type");
  EXPECT_FALSE(h.Has("Content-Type"));
  EXPECT_EQ(h.size(), 1u);
}

TEST(HttpMessageTest, PercentDecode) {
  EXPECT_EQ(PercentDecode("llama3%3A8b", false), "llama3:8b");
  EXPECT_EQ(PercentDecode("a+b%20c", true), "a b c");
  EXPECT_EQ(PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(PercentDecode("bad%zz%4", false), "bad%zz%4");
  EXPECT_EQ(PercentDecode("%", false), "%");
}

TEST(HttpMessageTest, QueryParam) {
  HttpRequest r;
  r.query = "a=1&name=x%2By+z&flag&a=2";
  EXPECT_EQ(r.QueryParam("a").value(), "1");
  EXPECT_EQ(r.QueryParam("name").value(), "x+y z");
  EXPECT_EQ(r.QueryParam("flag").value(), "");
  EXPECT_FALSE(r.QueryParam("none").has_value());
}

TEST(HttpMessageTest, ResponsesAndErrors) {
  HttpResponse t = HttpResponse::Text(201, "hi");
  EXPECT_EQ(t.status, 201);
  EXPECT_EQ(t.headers.Get("content-type").value(), "text/plain; charset=utf-8");
  HttpResponse j = HttpResponse::Json(200, "{}");
  EXPECT_EQ(j.headers.Get("Content-Type").value(), "application/json");
  EXPECT_EQ(GenericErrorJson(413, "too \"big\"\n"), "{\"error\":{\"code\":413,\"message\":\"too \\\"big\\\"\\n\"}}");
  EXPECT_EQ(JsonEscape(std::string("\x01", 1)), "\\u0001");
  EXPECT_EQ(StatusReason(404), "Not Found");
  EXPECT_EQ(StatusReason(431), "Request Header Fields Too Large");
  EXPECT_EQ(StatusReason(299), "Unknown");
}

}  // namespace
}  // namespace herd
