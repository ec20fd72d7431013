// Engine: pipelined decoding. A step whose sampled sequences all decode greedily is queued on
// the device (ModelRunner::Execute with queue, Model::QueueForward); the next Step() call
// schedules and queues its successor before waiting for it, feeding each sampled sequence's
// new token back on the device (kFedBackToken, ForwardBatch::feedback_rows), then takes the
// first pass's ids and emits them while the second one runs. The host's scheduling, batch
// building and event emission thus overlap the GPU's work instead of leaving it idle.
//
//   Step k:   AdvanceInFlight(N) -> Schedule(N+1) -> Execute(N+1, queued) -> FinishInFlight(N)
//
// What the next schedule needs of pass N is known before its ids are: n_computed, the
// prefix-cache commits (they cover only computed positions), and which sequences reach their
// length limit with N's token (those are parked: no blocks, not scheduled). What is not: stop
// tokens, stop strings and cancellations. A sequence that one of those ends at N may be in
// N+1 already; it is forgotten there (Forget) and its row of N+1 is ignored — one wasted row,
// the cost vLLM's asynchronous scheduling also pays. Blocks it frees go back to the pool while
// N+1 may still write to them: any later user is queued behind N+1 on the same stream, and
// the position N+1 writes is past every block the prefix cache took from it (committed blocks
// hold computed positions only).
#include <algorithm>

#include "base/check.h"
#include "engine/engine.h"
#include "engine/request_state.h"

namespace herd {

void Engine::AdvanceInFlight() {
  HERD_CHECK(in_flight_.has_value());
  CommitChunks(in_flight_->step);
  const StepOutput& out = step_outs_[in_flight_->out];
  for (size_t i = 0; i < out.sampled.size(); ++i) {
    Sequence* s = out.sampled[i];
    if (s == nullptr) continue;
    HERD_CHECK(s->fed_back_row < 0);
    s->tokens.push_back(kFedBackToken);
    s->fed_back_row = static_cast<int32_t>(i);
    // SampleAndEmit's length rule, applied before the token is known: do not schedule past it.
    if (s->n_generated() >= s->max_tokens || static_cast<int32_t>(s->tokens.size()) >= n_ctx_) scheduler_.Park(s);
  }
}

int64_t Engine::FinishInFlight() {
  HERD_CHECK(in_flight_.has_value());
  StepOutput& out = step_outs_[in_flight_->out];
  const Status st = runner_.Collect(&out);
  HERD_CHECK_MSG(st.ok(), "taking a queued pass: %s", st.ToString().c_str());
  const auto now = EngineClock::now();
  const int64_t tokens = in_flight_->decode_only
                             ? static_cast<int64_t>(std::count_if(out.sampled.begin(), out.sampled.end(),
                                                                  [](const Sequence* s) { return s != nullptr; }))
                             : -1;
  // SampleAndEmit may finish sequences (stop token, stop string, length): Forget then clears
  // their entries here and in the step queued behind this one.
  for (size_t i = 0; i < out.sampled.size(); ++i) {
    Sequence* s = out.sampled[i];
    if (s != nullptr) SampleAndEmit(s, nullptr, now, out.argmax[i]);
  }
  in_flight_.reset();
  return tokens;
}

void Engine::Forget(Sequence* seq) {
  auto purge = [seq](SchedulerStep& step, StepOutput& out) {
    std::erase_if(step.chunks, [seq](const ScheduledChunk& c) { return c.seq == seq; });
    std::replace(out.sampled.begin(), out.sampled.end(), seq, static_cast<Sequence*>(nullptr));
  };
  if (in_flight_) purge(in_flight_->step, step_outs_[in_flight_->out]);
  if (current_step_ != nullptr) purge(*current_step_, *current_out_);
}

}  // namespace herd
