// How a handler answers one request: a complete response, or a stream of chunks.
//
// Both interfaces are thread-safe: a handler may answer from any thread (e.g. the engine
// thread pushing tokens), now or later. Calls never block on the network: data is queued and
// the connection's own executor writes it; each Write is flushed as soon as the socket takes
// it (while one write is in flight, later writes are coalesced into the next one).
//
// Exactly one of Respond / StartStream takes effect per request; later calls are ignored.
// A Responder dropped without answering sends a 500.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "http/http_message.h"

namespace herd {

// A chunked (Transfer-Encoding: chunked) response body in progress.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;

  // Queues `data` as body bytes. Returns false (and drops the data) once the stream is
  // cancelled or finished. Never blocks.
  virtual bool Write(std::string_view data) = 0;

  // Ends the body (terminating chunk); the connection then serves its next request.
  virtual void Finish() = 0;

  // True once the client disconnected, a write failed or timed out, the stream's queued bytes
  // exceeded the server's limit (a client not reading), or the server shut down.
  virtual bool cancelled() const = 0;

  // Server-Sent Events framing. `data` may hold newlines (each line becomes a data: field).
  bool WriteSse(std::string_view event, std::string_view data);  // "event: E\ndata: D\n\n"
  bool WriteSseData(std::string_view data);                      // "data: D\n\n"
  bool WriteSseComment(std::string_view text);                   // ": text\n\n" (keep-alive ping)
  // NDJSON: `json` (one line, no newline inside) followed by "\n".
  bool WriteNdjson(std::string_view json);
};

class Responder {
 public:
  virtual ~Responder() = default;

  // Sends a complete response (Content-Length framing).
  virtual void Respond(HttpResponse response) = 0;

  // Sends status + headers now and returns the stream for the body. The server adds
  // Transfer-Encoding: chunked and Connection; for HEAD requests Write() data is discarded.
  virtual std::shared_ptr<ResponseStream> StartStream(int status, Headers headers) = 0;

  // `callback` runs once when the request is cancelled before its response completed: the
  // client disconnected, a write failed, or the server is shutting down. It runs on an I/O
  // thread (or at once on the caller's thread if already cancelled); it must be quick and must
  // not call back into this Responder under a lock it holds. Replaces an earlier callback.
  virtual void OnCancel(std::function<void()> callback) = 0;

  virtual bool cancelled() const = 0;

  // Helpers: StartStream with Content-Type text/event-stream (+ Cache-Control: no-cache) or
  // application/x-ndjson; `extra` headers are added.
  std::shared_ptr<ResponseStream> StartSse(int status = 200, Headers extra = {});
  std::shared_ptr<ResponseStream> StartNdjson(int status = 200, Headers extra = {});
};

}  // namespace herd
