// Engine: embedding requests — submission, admission as a prefill-only sequence, pooling of
// the hidden states the ModelRunner returns for its chunks, and the finished event.
#include "engine/embedding.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "engine/engine.h"
#include "engine/request_state.h"

namespace herd {

const char* PoolingName(Pooling pooling) {
  switch (pooling) {
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kLast: return "last";
  }
  return "?";
}

void PoolRows(Pooling pooling, const float* rows, int32_t n_rows, int32_t first_pos, int32_t n_prompt, int32_t n_embd,
              std::vector<double>* sum) {
  sum->resize(static_cast<size_t>(n_embd), 0.0);
  const auto copy_row = [&](int32_t pos) {
    if (pos < first_pos || pos >= first_pos + n_rows) return;
    const float* row = rows + static_cast<size_t>(pos - first_pos) * static_cast<size_t>(n_embd);
    for (int32_t j = 0; j < n_embd; ++j) (*sum)[static_cast<size_t>(j)] = row[j];
  };
  switch (pooling) {
    case Pooling::kMean:
      for (int32_t r = 0; r < n_rows; ++r) {
        const float* row = rows + static_cast<size_t>(r) * static_cast<size_t>(n_embd);
        for (int32_t j = 0; j < n_embd; ++j) (*sum)[static_cast<size_t>(j)] += row[j];
      }
      break;
    case Pooling::kCls: copy_row(0); break;
    case Pooling::kLast: copy_row(n_prompt - 1); break;
  }
}

std::vector<float> FinishPooling(Pooling pooling, const std::vector<double>& sum, int32_t n_prompt, bool normalize) {
  std::vector<double> v = sum;
  if (pooling == Pooling::kMean && n_prompt > 0) {
    for (double& x : v) x /= n_prompt;
  }
  double norm = 0;
  for (double x : v) norm += x * x;
  norm = std::sqrt(norm);
  std::vector<float> out(v.size());
  for (size_t j = 0; j < v.size(); ++j) {
    out[j] = static_cast<float>(normalize && norm > 0 ? v[j] / norm : v[j]);
  }
  return out;
}

Result<std::shared_ptr<RequestStream>> Engine::SubmitEmbedding(EmbeddingRequest req) {
  const int32_t n_vocab = model_->config().n_vocab;
  if (req.prompt.empty()) return InvalidArgument("the input is empty");
  for (int32_t t : req.prompt) {
    if (t < 0 || t >= n_vocab) return InvalidArgument(StrFormat("token id %d is out of range [0, %d)", t, n_vocab));
  }
  if (static_cast<int32_t>(req.prompt.size()) > n_ctx_) {
    if (!req.truncate) {
      return OutOfRange(StrFormat("the input (%zu tokens) exceeds the context length (%d)", req.prompt.size(), n_ctx_));
    }
    req.prompt.resize(static_cast<size_t>(n_ctx_));
  }
  const int32_t n_prompt = static_cast<int32_t>(req.prompt.size());
  if (kv_.BlocksFor(n_prompt) > cache_->config().n_blocks) {
    return InvalidArgument(StrFormat("the input needs %d tokens of KV cache; the pool holds %d (raise the KV budget)",
                                     n_prompt, cache_->config().n_blocks * kv_.block_size()));
  }
  auto state = std::make_unique<RequestState>();
  state->request.prompt = req.prompt;
  state->request.priority = req.priority;
  state->request.max_tokens = 0;
  state->embedding = std::move(req);
  return Enqueue(std::move(state));
}

void Engine::AdmitEmbedding(std::unique_ptr<RequestState> r) {
  r->subscribers.push_back({r->id, r->stream});
  RequestState* raw = r.get();
  auto s = std::make_unique<Sequence>();
  s->id = next_seq_++;
  s->request = raw;
  s->priority = raw->request.priority;
  s->arrival = next_arrival_++;
  s->tokens = raw->request.prompt;
  s->n_prompt = static_cast<int32_t>(s->tokens.size());
  s->embedding = true;
  s->pooling = raw->embedding->pooling;
  Sequence* seq = s.get();
  raw->choices.push_back(std::move(s));
  requests_.emplace(raw->id, std::move(r));
  scheduler_.AddWaiting(seq);
}

void Engine::AfterEmbedding(const StepOutput& out) {
  const auto now = EngineClock::now();
  const int32_t n_embd = model_->config().n_embd;
  for (const EmbeddedChunk& c : out.embedded) {
    Sequence* s = c.seq;
    if (!out.embed_status.ok()) {
      FinishRequest(s->request, FinishReason::kError, out.embed_status);
      continue;
    }
    if (s->n_computed == 0) s->pooled.assign(static_cast<size_t>(n_embd), 0.0);
    PoolRows(s->pooling, out.hidden.data() + static_cast<size_t>(c.first_row) * static_cast<size_t>(n_embd), c.n_rows,
             c.first_row_pos, s->n_prompt, n_embd, &s->pooled);
    stats_.prompt_tokens_computed += c.n_tokens;
    s->n_computed += c.n_tokens;
    if (s->n_computed < s->n_prompt) continue;
    RequestState* r = s->request;
    scheduler_.Remove(s);  // frees its blocks (never registered in the prefix cache)
    EngineEvent ev;
    ev.kind = EngineEvent::Kind::kFinished;
    ev.time = now;
    ev.finish = FinishReason::kStop;
    ev.usage = {s->n_prompt, 0, 0};
    ev.embedding = FinishPooling(s->pooling, s->pooled, s->n_prompt, r->embedding->normalize);
    r->timings.finished = now;
    ev.timings = r->timings;
    r->Emit(ev);
    Retire(r);  // destroys the sequence
  }
}

}  // namespace herd
