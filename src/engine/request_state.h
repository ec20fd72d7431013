// Engine-internal state of one submitted request (engine thread only, except `stream`).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "engine/embedding.h"
#include "engine/request.h"
#include "engine/request_stream.h"
#include "engine/sequence.h"

namespace herd {

struct Subscriber {
  RequestId id = 0;
  std::shared_ptr<RequestStream> stream;
};

struct RequestState {
  RequestId id = 0;
  GenerationRequest request;              // prompt after truncation; sampling.stop_tokens completed
  std::shared_ptr<RequestStream> stream;  // the submitter's; moves into subscribers on admission
  // Everyone receiving this computation's events: the submitter, plus identical greedy
  // requests coalesced into it (EngineOptions::coalesce_identical).
  std::vector<Subscriber> subscribers;
  bool coalescable = false;
  uint64_t coalesce_key = 0;
  std::vector<EngineEvent> log;                    // events so far, replayed to late subscribers (coalescable only)
  std::vector<std::unique_ptr<Sequence>> choices;  // [0] runs the prompt; the others fork from it
  int32_t n_finished = 0;
  bool forked = false;
  std::vector<bool> pinned;  // per request.pins entry: applied
  RequestTimings timings;
  FinishReason finish = FinishReason::kStop;  // how choice 0 (or the whole request) ended: metrics
  // Engine::SubmitEmbedding: an embedding request (request.prompt holds its tokens too).
  std::optional<EmbeddingRequest> embedding;

  void Emit(const EngineEvent& ev) {
    if (coalescable) log.push_back(ev);
    for (auto& s : subscribers) s.stream->Push(ev);
  }
};

// Whether two requests describe the same greedy computation (same tokens out for the same
// model): everything but the seed, priority and pins must match.
bool SameComputation(const GenerationRequest& a, const GenerationRequest& b);
uint64_t CoalesceKey(const GenerationRequest& r);

}  // namespace herd
