// Scheduler: each step, decides which sequences run and how many of their tokens, under a
// token budget (continuous batching with chunked prefill).
//
// Per step:
//   1. Running sequences in priority order get their pending tokens (1 when decoding; a
//      prefill chunk of at most the remaining budget otherwise). If the KV pool cannot hold
//      them, the lowest-priority, latest running sequence is preempted (its blocks freed; it
//      goes back to the waiting queue and recomputes later, mostly from the prefix cache).
//   2. If nothing was preempted, waiting sequences are admitted in priority order while
//      budget, running slots and free blocks (minus a small watermark) allow. Admission takes
//      the cached prefix first, so only the uncached remainder costs budget. The queue is
//      never reordered past its head (no starvation of long prompts).
// The result is {sequence -> n tokens}; the ModelRunner executes it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "engine/sequence.h"
#include "kv/kv_cache_manager.h"

namespace herd {

struct SchedulerConfig {
  int32_t max_batch_tokens = 512;  // tokens per forward pass (decode tokens + prefill chunks)
  int32_t max_running = 64;        // sequences per step
  int32_t max_waiting = 1024;      // bounded queue: beyond it, submissions are refused
  float watermark = 0.01f;         // share of the pool kept free when admitting (avoids instant preemption)
};

struct ScheduledChunk {
  Sequence* seq = nullptr;
  int32_t n_tokens = 0;  // tokens [seq->n_computed, seq->n_computed + n_tokens) run this step
};

struct SchedulerStep {
  std::vector<ScheduledChunk> chunks;
  std::vector<Sequence*> preempted;
  int32_t n_tokens = 0;
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, KvCacheManager* kv);

  const SchedulerConfig& config() const { return config_; }
  // Whether `n` more sequences fit in the waiting queue.
  bool HasRoom(int32_t n) const { return static_cast<int32_t>(waiting_.size()) + n <= config_.max_waiting; }

  void AddWaiting(Sequence* seq);
  // A sequence that already holds its blocks (a fork of a running one).
  void AddRunning(Sequence* seq);
  // Drops a finished or cancelled sequence and frees its blocks.
  void Remove(Sequence* seq);
  // Drops a sequence from scheduling and frees its blocks without finishing it: pipelined
  // decoding, a sequence whose last token (still on the device) reaches its length limit.
  void Park(Sequence* seq);

  SchedulerStep Schedule();

  const std::vector<Sequence*>& running() const { return running_; }
  const std::vector<Sequence*>& waiting() const { return waiting_; }

 private:
  void Preempt(Sequence* seq, SchedulerStep* step);
  bool TryAdmit(Sequence* seq, int32_t budget, ScheduledChunk* chunk);

  SchedulerConfig config_;
  KvCacheManager* kv_;
  std::vector<Sequence*> running_;  // in RunsBefore order
  std::vector<Sequence*> waiting_;  // in RunsBefore order
};

}  // namespace herd
