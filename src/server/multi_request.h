// Routes whose one HTTP request becomes several engine requests (OpenAI completions with an
// array of prompts, embeddings of several inputs): submitting them all or none, and wiring them
// to one exchange object.
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"
#include "http/responder.h"

namespace herd::server {

// Submits every request through `submit` (a callable R -> Result<shared_ptr<RequestStream>>);
// on the first error cancels those already submitted and returns it.
template <class R, class Submit>
Result<std::vector<std::shared_ptr<RequestStream>>> SubmitAll(Engine& engine, std::vector<R> requests, Submit submit) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (R& r : requests) {
    auto s = submit(std::move(r));
    if (!s.ok()) {
      for (const auto& done : streams) engine.Cancel(done->id());
      return s.status();
    }
    streams.push_back(*std::move(s));
  }
  return streams;
}

// Connects an exchange X (with `std::vector<std::shared_ptr<RequestStream>> events` and a
// thread-safe `void Drain()`) to the engine and the client: a disconnect cancels every request;
// each stream's event batches run Drain on the engine thread; the streams hold X until Drain
// clears their notify callbacks (once every stream has ended).
template <class X>
void ConnectAll(const std::shared_ptr<X>& x, Engine& engine, Responder& responder) {
  std::vector<RequestId> ids;
  for (const auto& s : x->events) ids.push_back(s->id());
  Engine* e = &engine;
  responder.OnCancel([e, ids] {
    for (RequestId id : ids) e->Cancel(id);
  });
  for (const auto& s : x->events) s->SetNotify([x] { x->Drain(); });
  x->Drain();  // events pushed before the callbacks were set
}

}  // namespace herd::server
