// The client side of the serving APIs `herd bench serve` speaks: the path and JSON body of a
// streamed generation request, and a decoder that turns the streamed response body into content
// deltas, usage and the finish reason.
//
//   openai       POST /v1/chat/completions   SSE, "data: {chunk}" ... "data: [DONE]";
//                                            stream_options.include_usage for the usage chunk
//   completions  POST /v1/completions        same framing, choices[0].text
//   anthropic    POST /v1/messages           SSE events message_start (input usage),
//                                            content_block_delta, message_delta (output usage,
//                                            stop_reason), message_stop; error events
//   ollama       POST /api/chat              NDJSON, message.content; the last line has
//                                            done: true, prompt_eval_count, eval_count
//
// Output length is forced with max_tokens (OpenAI, Anthropic) or options.num_predict (Ollama);
// `ignore_eos: true` is sent on the OpenAI routes only (herd, vLLM and llama.cpp accept it there;
// Anthropic and Ollama have no such field).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/http_message.h"

namespace herd::bench {

enum class Api { kOpenAiChat, kOpenAiCompletions, kAnthropic, kOllama };

// "openai", "completions", "anthropic", "ollama" (also "openai-chat", "openai-completions").
std::optional<Api> ParseApi(std::string_view name);
const char* ApiName(Api api);

struct Message {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

struct RequestOptions {
  Api api = Api::kOpenAiChat;
  std::string model;
  bool ignore_eos = false;                // sent on the OpenAI routes only
  std::optional<double> temperature = 0;  // nullopt: the server's default
  std::string api_key;                    // Bearer (OpenAI, Ollama) or x-api-key (Anthropic)
};

// The request path under the server's base URL ("/v1/chat/completions", ...).
const char* RequestPath(Api api);
// Headers of every request of `api` (Content-Type, the key, anthropic-version).
Headers RequestHeaders(const RequestOptions& o);
// A streamed generation request body. For the completions API the messages are joined into one
// prompt text (contents separated by blank lines).
std::string RequestBody(const RequestOptions& o, const std::vector<Message>& messages, int max_tokens);
// Whether `api` can be told to ignore end-of-generation tokens.
bool SupportsIgnoreEos(Api api);

// What a decoded response stream said. Token counts are -1 when the server did not report them.
struct StreamOutcome {
  int64_t usage_prompt_tokens = -1;  // prompt tokens (Anthropic: input + cache read + cache creation)
  int64_t usage_output_tokens = -1;
  int64_t deltas = 0;         // content deltas with non-empty text (incl. reasoning text)
  std::string text;           // the content, concatenated
  std::string finish_reason;  // as the server spelled it ("length", "max_tokens", "stop", ...)
  std::string error;          // an error the stream itself carried (an error event / object)
  bool complete = false;      // the stream's end marker arrived ([DONE], message_stop, done: true)
  std::string parse_error;    // non-empty: the body was not what the API promises
};

// Incremental decoder of one response body. Feed() takes bytes as they arrive (any split) and
// calls on_delta() once per non-empty content delta, in order; after the body ended, Finish()
// takes a final unterminated line. Once parse_error is set the rest is ignored.
class StreamDecoder {
 public:
  explicit StreamDecoder(Api api) : api_(api) {}
  void Feed(std::string_view bytes, const std::function<void()>& on_delta);
  void Finish(const std::function<void()>& on_delta);
  const StreamOutcome& outcome() const { return out_; }

 private:
  void Line(std::string_view line, const std::function<void()>& on_delta);
  void SseEvent(const std::function<void()>& on_delta);
  void Json(std::string_view event, std::string_view data, const std::function<void()>& on_delta);

  Api api_;
  StreamOutcome out_;
  std::string pending_;    // an incomplete line
  std::string sse_event_;  // the current SSE event's name
  std::string sse_data_;   // and its data lines joined
  bool sse_has_data_ = false;
};

// The message of an error body ({"error": {"message"}} / {"error": "..."} / the text), cut to
// 200 bytes.
std::string ErrorMessageOf(std::string_view body);

}  // namespace herd::bench
