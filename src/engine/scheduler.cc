#include "engine/scheduler.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "base/check.h"

namespace herd {
namespace {

void InsertOrdered(std::vector<Sequence*>& v, Sequence* seq) {
  v.insert(std::upper_bound(v.begin(), v.end(), seq, RunsBefore), seq);
}

bool Erase(std::vector<Sequence*>& v, Sequence* seq) {
  auto it = std::find(v.begin(), v.end(), seq);
  if (it == v.end()) return false;
  v.erase(it);
  return true;
}

}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager* kv) : config_(config), kv_(kv) {
  HERD_CHECK(config_.max_batch_tokens > 0 && config_.max_running > 0);
}

void Scheduler::AddWaiting(Sequence* seq) {
  seq->status = SequenceStatus::kWaiting;
  InsertOrdered(waiting_, seq);
}

void Scheduler::AddRunning(Sequence* seq) {
  HERD_CHECK(kv_->Has(seq->id));
  seq->status = SequenceStatus::kRunning;
  InsertOrdered(running_, seq);
}

void Scheduler::Remove(Sequence* seq) {
  Park(seq);
  seq->status = SequenceStatus::kFinished;
}

void Scheduler::Park(Sequence* seq) {
  if (!Erase(running_, seq)) Erase(waiting_, seq);
  kv_->Free(seq->id);
}

void Scheduler::Preempt(Sequence* seq, SchedulerStep* step) {
  Erase(running_, seq);
  kv_->Free(seq->id);
  seq->n_computed = 0;
  ++seq->n_preempted;
  AddWaiting(seq);
  step->preempted.push_back(seq);
}

bool Scheduler::TryAdmit(Sequence* seq, int32_t budget, ScheduledChunk* chunk) {
  // With nothing running there is nobody to preempt later: the watermark would only starve.
  const bool keep_watermark = !running_.empty();
  // Embedding sequences need every row's hidden state: no prefix-cache hits for them.
  const int32_t cached =
      kv_->Admit(seq->id, seq->embedding ? std::span<const int32_t>() : std::span<const int32_t>(seq->tokens));
  if (!seq->admitted_once) seq->n_cached = std::min(cached, seq->n_prompt);
  seq->n_computed = cached;
  const int32_t n = std::min(seq->n_pending(), budget);
  const int32_t watermark =
      keep_watermark ? static_cast<int32_t>(std::ceil(config_.watermark * static_cast<float>(kv_->pool().n_blocks())))
                     : 0;
  const int32_t need = kv_->BlocksToReserve(seq->id, seq->n_computed, seq->n_computed + n);
  if (need + watermark > kv_->free_blocks() || !kv_->Reserve(seq->id, seq->n_computed, seq->n_computed + n)) {
    kv_->Free(seq->id);
    seq->n_computed = 0;
    return false;
  }
  seq->admitted_once = true;
  *chunk = {seq, n};
  return true;
}

SchedulerStep Scheduler::Schedule() {
  SchedulerStep step;
  int32_t budget = config_.max_batch_tokens;
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence* seq = running_[i];
    const int32_t n = std::min(seq->n_pending(), budget);
    HERD_CHECK_MSG(n > 0, "running sequence %lld has nothing to compute", static_cast<long long>(seq->id));
    bool self_preempted = false;
    while (!kv_->Reserve(seq->id, seq->n_computed, seq->n_computed + n)) {
      Sequence* victim = running_.back();
      Preempt(victim, &step);
      if (victim == seq) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    step.chunks.push_back({seq, n});
    budget -= n;
    ++i;
  }
  if (!step.preempted.empty()) {
    step.n_tokens = config_.max_batch_tokens - budget;
    return step;
  }
  bool pins_dropped = false;
  while (!waiting_.empty() && budget > 0 && static_cast<int32_t>(running_.size()) < config_.max_running) {
    Sequence* seq = waiting_.front();
    ScheduledChunk chunk;
    if (!TryAdmit(seq, budget, &chunk)) {
      // Nothing runs and the head still does not fit: pins yield before a request starves.
      if (running_.empty() && !pins_dropped && kv_->pinned_blocks() > 0) {
        kv_->ExpirePins(KvClock::time_point::max());
        pins_dropped = true;
        continue;
      }
      break;
    }
    waiting_.erase(waiting_.begin());
    seq->status = SequenceStatus::kRunning;
    InsertOrdered(running_, seq);
    step.chunks.push_back(chunk);
    budget -= chunk.n_tokens;
  }
  step.n_tokens = config_.max_batch_tokens - budget;
  return step;
}

}  // namespace herd
