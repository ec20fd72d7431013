// ModelRunner: executes one SchedulerStep on the model. Builds the ForwardBatch (every chunk's
// tokens, positions and block table), performs the KV block copies the KvCacheManager queued
// (copy-on-write), runs Model::Forward and returns the logits of the sequences that sample
// this step: those whose chunk reaches the end of their tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "engine/scheduler.h"
#include "kv/kv_cache.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"

namespace herd {

struct StepOutput {
  std::vector<Sequence*> sampled;  // sequences whose logits were computed, in chunk order
  std::vector<float> logits;       // [sampled.size(), n_vocab]
};

class ModelRunner {
 public:
  ModelRunner(Model* model, KvCache* cache, KvCacheManager* kv);

  // Runs the step; sequences' n_computed are NOT advanced (the engine does that after it has
  // handled the result). Errors: the model rejected the batch.
  Status Execute(const SchedulerStep& step, StepOutput* out);

  int32_t n_vocab() const { return n_vocab_; }

 private:
  Model* model_;
  KvCache* cache_;
  KvCacheManager* kv_;
  int32_t n_vocab_;
  ForwardBatch batch_;  // reused across steps
};

}  // namespace herd
