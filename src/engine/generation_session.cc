#include "engine/generation_session.h"

#include <algorithm>

#include "base/check.h"

namespace herd {

GenerationSession::GenerationSession(Model* model, KvCache* cache, int32_t n_batch)
    : model_(model), cache_(cache), allocator_(cache->config().n_blocks), n_batch_(std::max(1, n_batch)) {}

GenerationSession::~GenerationSession() { Reset(); }

void GenerationSession::Reset() {
  for (int32_t b : block_table_) allocator_.Free(b);
  block_table_.clear();
  tokens_.clear();
  n_past_ = 0;
}

Status GenerationSession::EnsureBlocks(int32_t n_positions) {
  const int32_t bs = cache_->config().block_size;
  while (static_cast<int32_t>(block_table_.size()) * bs < n_positions) {
    auto block = allocator_.Allocate();
    if (!block.ok()) {
      return ResourceExhausted(StrFormat("context is full: %d tokens fit in the KV cache (%d blocks of %d)",
                                         allocator_.total() * bs, allocator_.total(), bs));
    }
    block_table_.push_back(*block);
  }
  return Status::Ok();
}

Status GenerationSession::Append(const std::vector<int32_t>& tokens, float* logits) {
  return AppendChunks(tokens, logits, nullptr);
}

Status GenerationSession::AppendGreedy(const std::vector<int32_t>& tokens, int32_t* next) {
  HERD_CHECK(next != nullptr);
  return AppendChunks(tokens, nullptr, next);
}

Status GenerationSession::Reserve(int32_t n_more) {
  const int32_t n_ctx = model_->config().n_ctx_train;
  if (n_past_ + n_more > n_ctx) {
    return OutOfRange(StrFormat("%d tokens exceed the model's context length %d", n_past_ + n_more, n_ctx));
  }
  return EnsureBlocks(n_past_ + n_more);
}

Status GenerationSession::AppendChunks(const std::vector<int32_t>& tokens, float* logits, int32_t* argmax) {
  if (tokens.empty()) return InvalidArgument("no tokens to append");
  HERD_RETURN_IF_ERROR(Reserve(static_cast<int32_t>(tokens.size())));
  ForwardBatch batch;
  batch.block_tables.push_back(block_table_);
  for (size_t start = 0; start < tokens.size(); start += static_cast<size_t>(n_batch_)) {
    const size_t end = std::min(tokens.size(), start + static_cast<size_t>(n_batch_));
    batch.tokens.assign(tokens.begin() + static_cast<std::ptrdiff_t>(start),
                        tokens.begin() + static_cast<std::ptrdiff_t>(end));
    batch.pos.resize(batch.tokens.size());
    batch.seq.assign(batch.tokens.size(), 0);
    for (size_t i = 0; i < batch.tokens.size(); ++i) batch.pos[i] = n_past_ + static_cast<int32_t>(i);
    batch.logit_rows.clear();
    const bool last_chunk = end == tokens.size();
    if (last_chunk && (logits != nullptr || argmax != nullptr)) {
      batch.logit_rows.push_back(static_cast<int32_t>(batch.tokens.size()) - 1);
    }
    batch.argmax_only = last_chunk && argmax != nullptr;
    HERD_RETURN_IF_ERROR(model_->Forward(batch, cache_->layers(), logits, batch.argmax_only ? argmax : nullptr));
    n_past_ += static_cast<int32_t>(batch.tokens.size());
  }
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  return Status::Ok();
}

Status GenerationSession::DecodeGreedy(int32_t first, int32_t n, bool sync, std::vector<int32_t>* out) {
  HERD_CHECK(out != nullptr);
  out->clear();
  if (n <= 0) return Status::Ok();
  if (sync || !model_->CanQueue()) {
    int32_t tok = first;
    for (int32_t i = 0; i < n; ++i) {
      HERD_RETURN_IF_ERROR(AppendGreedy({tok}, &tok));
      out->push_back(tok);
    }
    return Status::Ok();
  }
  HERD_RETURN_IF_ERROR(Reserve(n));
  ForwardBatch batch;
  batch.block_tables.push_back(block_table_);
  batch.seq = {0};
  batch.logit_rows = {0};
  batch.argmax_only = true;
  int queued = 0;
  Status status = Status::Ok();
  for (int32_t i = 0; i < n && status.ok(); ++i) {
    batch.tokens = {i == 0 ? first : -1};  // -1: the previous pass's choice, on the device
    batch.feedback_rows = i == 0 ? 0 : 1;
    batch.pos = {n_past_};
    status = model_->QueueForward(batch, cache_->layers());
    if (!status.ok()) break;
    ++queued;
    ++n_past_;
    if (queued == Model::kMaxQueued) {  // one pass stays in flight while the host waits
      int32_t id = 0;
      status = model_->TakeQueued(&id);
      --queued;
      out->push_back(id);
    }
  }
  while (queued > 0) {  // the passes still queued, also after an error
    int32_t id = 0;
    const Status s = model_->TakeQueued(&id);
    --queued;
    if (status.ok()) status = s;
    out->push_back(id);
  }
  if (!out->empty()) {  // one pass per choice: its input was `first` or the choice before
    tokens_.push_back(first);
    tokens_.insert(tokens_.end(), out->begin(), out->end() - 1);
  }
  return status;
}

Status Generate(GenerationSession& session, Sampler& sampler, const std::vector<int32_t>& prompt,
                const GenerateOptions& options, const std::function<bool(int32_t)>& on_token) {
  std::vector<float> logits(static_cast<size_t>(sampler.n_vocab()));
  HERD_RETURN_IF_ERROR(session.Append(prompt, logits.data()));
  sampler.Accept(prompt);
  for (int32_t i = 0; i < options.max_tokens; ++i) {
    const SampledToken t = sampler.Sample(logits.data());
    sampler.Accept(t.id);
    if (options.stop_at_eos && sampler.IsStopToken(t.id)) break;
    if (!on_token(t.id)) break;
    if (i + 1 == options.max_tokens) break;
    HERD_RETURN_IF_ERROR(session.Append({t.id}, logits.data()));
  }
  return Status::Ok();
}

}  // namespace herd
