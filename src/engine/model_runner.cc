#include "engine/model_runner.h"

namespace herd {

ModelRunner::ModelRunner(Model* model, KvCache* cache, KvCacheManager* kv)
    : model_(model), cache_(cache), kv_(kv), n_vocab_(model->config().n_vocab) {}

Status ModelRunner::Execute(const SchedulerStep& step, StepOutput* out) {
  for (const BlockCopy& c : kv_->TakeCopies()) cache_->CopyBlock(c.src, c.dst);
  ForwardBatch& b = batch_;
  b.tokens.clear();
  b.pos.clear();
  b.seq.clear();
  b.logit_rows.clear();
  b.block_tables.resize(step.chunks.size());
  out->sampled.clear();
  for (size_t i = 0; i < step.chunks.size(); ++i) {
    const ScheduledChunk& c = step.chunks[i];
    const Sequence& s = *c.seq;
    const auto table = kv_->BlockTable(s.id);
    b.block_tables[i].assign(table.begin(), table.end());
    for (int32_t k = 0; k < c.n_tokens; ++k) {
      const int32_t p = s.n_computed + k;
      b.tokens.push_back(s.tokens[static_cast<size_t>(p)]);
      b.pos.push_back(p);
      b.seq.push_back(static_cast<int32_t>(i));
    }
    if (s.n_computed + c.n_tokens == static_cast<int32_t>(s.tokens.size())) {
      b.logit_rows.push_back(static_cast<int32_t>(b.tokens.size()) - 1);
      out->sampled.push_back(c.seq);
    }
  }
  out->logits.resize(b.logit_rows.size() * static_cast<size_t>(n_vocab_));
  if (b.tokens.empty()) return Status::Ok();
  return model_->Forward(b, cache_->layers(), out->logits.data());
}

}  // namespace herd
