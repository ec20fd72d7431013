// One choice of one request as the engine tracks it: its tokens, how many of them have K/V in
// the cache, its sampler, detokenizer and stop matcher. Owned by the Engine; the Scheduler and
// ModelRunner see it through pointers for the duration of a step.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/embedding.h"
#include "engine/request.h"
#include "engine/stop_matcher.h"
#include "kv/kv_cache_manager.h"
#include "sampling/sampler.h"
#include "sampling/token_constraint.h"
#include "tokenizer/detokenizer.h"

namespace herd {

struct RequestState;  // engine.cc: the request's stream and shared settings

enum class SequenceStatus { kWaiting, kRunning, kFinished };

// Pipelined decoding: a sequence's last token while its id is still on the device (the argmax
// of row Sequence::fed_back_row of the pass in flight); replaced when that pass is taken.
constexpr int32_t kFedBackToken = -1;

struct Sequence {
  SeqId id = 0;
  RequestState* request = nullptr;
  int32_t index = 0;  // choice index within the request
  int32_t priority = 0;
  uint64_t arrival = 0;  // submission order; ties in priority go to the earlier arrival

  std::vector<int32_t> tokens;  // prompt then generated tokens
  int32_t n_prompt = 0;
  int32_t n_computed = 0;  // leading tokens whose K/V are in the cache
  int32_t max_tokens = 0;  // generated-token limit (context already accounted)
  SequenceStatus status = SequenceStatus::kWaiting;
  bool admitted_once = false;
  int32_t n_cached = 0;  // prompt tokens served from the prefix cache at first admission
  int32_t n_preempted = 0;
  EngineClock::time_point last_token{};  // when its latest token was sampled (inter-token latency)
  int32_t fed_back_row = -1;             // tokens.back() is kFedBackToken: its row in the pass in flight

  std::optional<Sampler> sampler;
  std::unique_ptr<StreamingDetokenizer> detokenizer;  // null without a tokenizer
  std::unique_ptr<StopMatcher> stop;
  std::unique_ptr<TokenConstraint> constraint;  // null unless the request constrains the output

  // Embedding sequences (Engine::SubmitEmbedding) run the prompt only: no sampler, detokenizer or
  // stop matcher; never take or register prefix-cache blocks. `pooled` ([n_embd]) accumulates
  // the pooled hidden states, reset when the prompt starts again at position 0 (preemption).
  bool embedding = false;
  Pooling pooling = Pooling::kMean;
  std::vector<double> pooled;

  int32_t n_generated() const { return static_cast<int32_t>(tokens.size()) - n_prompt; }
  // Tokens that still need a forward pass before the next sample.
  int32_t n_pending() const { return static_cast<int32_t>(tokens.size()) - n_computed; }
};

// Scheduling order: higher priority first, then earlier arrival.
inline bool RunsBefore(const Sequence* a, const Sequence* b) {
  if (a->priority != b->priority) return a->priority > b->priority;
  if (a->arrival != b->arrival) return a->arrival < b->arrival;
  return a->index < b->index;
}

}  // namespace herd
