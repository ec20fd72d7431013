#include "protocols/anthropic/messages.h"

#include <gtest/gtest.h>

namespace herd::anthropic {
namespace {

using nlohmann::json;

json Minimal() {
  return json::parse(R"({"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]})");
}

TEST(AnthropicMessagesTest, ParsesSystemBlocksStopsAndCacheControl) {
  const json body = json::parse(R"({
    "model": "claude-ish", "max_tokens": 100, "stream": true, "temperature": 0.3, "top_p": 0.9, "top_k": 5,
    "stop_sequences": ["\n\nHuman:"], "metadata": {"user_id": "u7"},
    "system": [{"type": "text", "text": "You are terse. "},
               {"type": "text", "text": "Tools: none.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "long context", "cache_control": {"type": "ephemeral"}}]},
      {"role": "assistant", "content": "ok"},
      {"role": "user", "content": "question"}]})");
  api::ChatRequest r;
  api::ApiError e;
  ASSERT_TRUE(ParseMessagesRequest(body, false, &r, &e)) << e.message;
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "You are terse. Tools: none.");
  EXPECT_EQ(r.messages[1].content, "long context");
  EXPECT_EQ(r.messages[3].role, "user");
  ASSERT_EQ(r.cache_breakpoints.size(), 2u);
  EXPECT_EQ(r.cache_breakpoints[0].message_index, 0);
  EXPECT_EQ(r.cache_breakpoints[0].content_bytes, 27u);
  EXPECT_EQ(r.cache_breakpoints[0].ttl_seconds, 3600);
  EXPECT_EQ(r.cache_breakpoints[1].message_index, 1);
  EXPECT_EQ(r.cache_breakpoints[1].ttl_seconds, 300);
  EXPECT_EQ(r.options.max_tokens, 100);
  EXPECT_EQ(r.options.stop, std::vector<std::string>{"\n\nHuman:"});
  EXPECT_EQ(r.options.top_k, 5);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.user, "u7");
}

TEST(AnthropicMessagesTest, ErrorsAreClearAndShapedLikeAnthropics) {
  const char* bad[] = {
      R"({"max_tokens": null})",  // merge_patch null removes: max_tokens missing
      R"({"max_tokens": 0})",
      R"({"temperature": 1.5})",
      R"({"tools": []})",
      R"({"thinking": {"type": "enabled"}})",
      R"({"frobnicate": true})",
      R"({"messages": []})",
      R"({"messages": [{"role": "system", "content": "x"}]})",
      R"({"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]})",
      R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": "2d"}}]}]})",
      R"({"stop_sequences": "x"})",
  };
  for (const char* patch : bad) {
    json body = Minimal();
    body.merge_patch(json::parse(patch));
    api::ChatRequest r;
    api::ApiError e;
    EXPECT_FALSE(ParseMessagesRequest(body, false, &r, &e)) << patch;
    EXPECT_FALSE(e.message.empty());
    const json eb = ErrorBody(e);
    EXPECT_EQ(eb["type"], "error");
    EXPECT_EQ(eb["error"]["type"], "invalid_request_error");
    EXPECT_EQ(HttpStatus(e), 400);
  }
  // count_tokens needs no max_tokens.
  json count = Minimal();
  count.erase("max_tokens");
  api::ChatRequest r;
  api::ApiError e;
  EXPECT_TRUE(ParseMessagesRequest(count, true, &r, &e)) << e.message;
  api::ApiError overloaded = api::FromStatus(ResourceExhausted("queue full"));
  EXPECT_EQ(HttpStatus(overloaded), 529);
  EXPECT_EQ(ErrorBody(overloaded)["error"]["type"], "overloaded_error");
  EXPECT_EQ(ErrorBody(api::FromStatus(NotFound("model")))["error"]["type"], "not_found_error");
}

TEST(AnthropicMessagesTest, ResponsesAndStreamEvents) {
  MessageUsage u{10, 3, 0, 96};
  const json m = Message("msg_1", "m", "Hello", StopReason("stop", ""), "", u);
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["content"][0]["text"], "Hello");
  EXPECT_EQ(m["stop_reason"], "end_turn");
  EXPECT_TRUE(m["stop_sequence"].is_null());
  EXPECT_EQ(m["usage"]["cache_read_input_tokens"], 96);
  EXPECT_EQ(StopReason("length", ""), "max_tokens");
  EXPECT_EQ(StopReason("stop", "END"), "stop_sequence");
  EXPECT_EQ(SseEvent(Ping()), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
  const json start = MessageStart("msg_1", "m", u);
  EXPECT_EQ(start["message"]["content"], json::array());
  EXPECT_TRUE(start["message"]["stop_reason"].is_null());
  EXPECT_EQ(TextDelta(0, "Hi")["delta"], json({{"type", "text_delta"}, {"text", "Hi"}}));
  EXPECT_EQ(ContentBlockStart(0)["content_block"], json({{"type", "text"}, {"text", ""}}));
  const json md = MessageDelta("stop_sequence", "END", 3);
  EXPECT_EQ(md["delta"]["stop_sequence"], "END");
  EXPECT_EQ(md["usage"]["output_tokens"], 3);
  EXPECT_EQ(SseEvent(MessageStop()), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
}

}  // namespace
}  // namespace herd::anthropic
