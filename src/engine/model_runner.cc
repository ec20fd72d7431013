#include "engine/model_runner.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "base/check.h"
#include "engine/request_state.h"

namespace herd {
namespace {

void Clear(ForwardBatch& b) {
  b.tokens.clear();
  b.pos.clear();
  b.seq.clear();
  b.logit_rows.clear();
}

// Appends the chunk's tokens and block table to `b` (`*n_tables` tables so far; block_tables
// keeps its inner vectors across steps); returns the row of its first token.
int32_t Append(ForwardBatch& b, size_t* n_tables, const ScheduledChunk& c, const KvCacheManager& kv) {
  const Sequence& s = *c.seq;
  const auto table = kv.BlockTable(s.id);
  const int32_t index = static_cast<int32_t>((*n_tables)++);
  if (b.block_tables.size() < *n_tables) b.block_tables.resize(*n_tables);
  b.block_tables[static_cast<size_t>(index)].assign(table.begin(), table.end());
  const int32_t first = static_cast<int32_t>(b.tokens.size());
  for (int32_t k = 0; k < c.n_tokens; ++k) {
    const int32_t p = s.n_computed + k;
    const int32_t token = s.tokens[static_cast<size_t>(p)];
    // A token still on the device (pipelined decoding): the model takes it from the previous pass.
    HERD_CHECK(token != kFedBackToken || s.fed_back_row >= 0);
    b.tokens.push_back(token == kFedBackToken ? -(s.fed_back_row + 1) : token);
    b.pos.push_back(p);
    b.seq.push_back(index);
  }
  return first;
}

// True when the sequence's next token is the plain argmax of its logits: greedy, and nothing
// that reads or changes the logits (penalties, logit_bias, logprobs, a constraint, n > 1 forks).
bool PlainGreedy(const Sequence& s) {
  if (!s.sampler || s.constraint != nullptr) return false;
  const SamplingParams& p = s.sampler->params();
  if (!p.greedy() || p.penalties_on() || !p.logit_bias.empty() || p.logprobs || p.n_probs > 0) return false;
  return !(s.index == 0 && s.request != nullptr && !s.request->forked && s.request->request.n > 1);
}

// True when the sequence's next token can be drawn from its row's top-k candidates on the
// device (Sampler::TakesTopCandidates; no constraint, no n > 1 fork at this step).
bool TopCandidatesDraw(const Sequence& s) {
  if (!s.sampler || s.constraint != nullptr) return false;
  if (!s.sampler->TakesTopCandidates(Backend::kMaxTopK)) return false;
  return !(s.index == 0 && s.request != nullptr && !s.request->forked && s.request->request.n > 1);
}

// True when the sequence decodes greedily with what the device can do besides the argmax —
// logit bias and repetition penalties (Sampler::AdjustmentsFitDevice), logprobs
// (LogprobsFitDevice) — and needs nothing else of its row on the host.
bool DeviceGreedy(const Sequence& s) {
  if (!s.sampler || s.constraint != nullptr) return false;
  const SamplingParams& p = s.sampler->params();
  if (!p.greedy() || !s.sampler->AdjustmentsFitDevice() || !s.sampler->LogprobsFitDevice()) return false;
  return !(s.index == 0 && s.request != nullptr && !s.request->forked && s.request->request.n > 1);
}

// True when the device can draw the sequence's next token from its full row (Backend::DrawRows:
// Sampler::TakesDeviceDraw; no constraint, no n > 1 fork at this step).
bool FullRowDraw(const Sequence& s) {
  if (!s.sampler || s.constraint != nullptr) return false;
  if (!s.sampler->TakesDeviceDraw()) return false;
  return !(s.index == 0 && s.request != nullptr && !s.request->forked && s.request->request.n > 1);
}

}  // namespace

ModelRunner::ModelRunner(Model* model, KvCache* cache, KvCacheManager* kv, bool force_device_sampling)
    : model_(model), cache_(cache), kv_(kv), n_vocab_(model->config().n_vocab) {
  // On a device backend the logits stay there for plain greedy steps (HERD_DEVICE_ARGMAX=0: off).
  const char* env = std::getenv("HERD_DEVICE_ARGMAX");
  size_t free_bytes = 0, total_bytes = 0;  // a backend with device memory keeps logits there
  device_argmax_ = force_device_sampling || (model->backend().DeviceMemory(&free_bytes, &total_bytes) &&
                                             !(env != nullptr && std::string_view(env) == "0"));
}

Status ModelRunner::Collect(StepOutput* out) {
  HERD_CHECK(out->queued);
  out->queued = false;
  return model_->TakeQueued(out->argmax.data());
}

Status ModelRunner::Execute(const SchedulerStep& step, StepOutput* out, bool queue, int32_t feedback_rows) {
  for (const BlockCopy& c : kv_->TakeCopies()) cache_->CopyBlock(c.src, c.dst);
  ForwardBatch& b = batch_;
  ForwardBatch& e = embed_batch_;
  Clear(b);
  Clear(e);
  size_t n_tables = 0, n_embed_tables = 0;
  out->sampled.clear();
  out->embedded.clear();
  out->queued = false;
  b.feedback_rows = feedback_rows;
  out->embed_status = Status::Ok();
  for (const ScheduledChunk& c : step.chunks) {
    const Sequence& s = *c.seq;
    if (s.embedding) {
      const int32_t first = Append(e, &n_embed_tables, c, *kv_);
      EmbeddedChunk ec{c.seq, c.n_tokens, static_cast<int32_t>(e.logit_rows.size()), 0, s.n_computed};
      // Rows the pooling needs: all of them (mean) or the one at its position (cls, last).
      int32_t lo = s.n_computed, hi = s.n_computed + c.n_tokens;
      if (s.pooling != Pooling::kMean) {
        const int32_t want = s.pooling == Pooling::kCls ? 0 : s.n_prompt - 1;
        lo = want;
        hi = want >= s.n_computed && want < s.n_computed + c.n_tokens ? want + 1 : want;
      }
      for (int32_t p = lo; p < hi; ++p) e.logit_rows.push_back(first + p - s.n_computed);
      ec.n_rows = hi - lo;
      ec.first_row_pos = lo;
      out->embedded.push_back(ec);
      continue;
    }
    Append(b, &n_tables, c, *kv_);
    if (s.n_computed + c.n_tokens == static_cast<int32_t>(s.tokens.size())) {
      b.logit_rows.push_back(static_cast<int32_t>(b.tokens.size()) - 1);
      out->sampled.push_back(c.seq);
    }
  }
  b.block_tables.resize(n_tables);
  e.block_tables.resize(n_embed_tables);
  // What leaves the device: only ids when every sampled sequence is plain greedy, or greedy or
  // drawn from its full row (the draw's uniform is taken from the sampler now); each row's top-k
  // candidates when every one is greedy or samples from a small top_k (plus the drawn ids when
  // full-row draws ride along); with penalties and logprobs the device can handle
  // (DeviceGreedy, Sampler::AdjustmentsFitDevice / LogprobsFitDevice); else the logits.
  static_assert(Sampler::kMaxDeviceTopLogprobs <= Backend::kMaxTopK);
  b.argmax_only = device_argmax_ && !out->sampled.empty();
  bool top_ok = b.argmax_only, full_ok = b.argmax_only, mixed_ok = b.argmax_only;
  int32_t top_k = 1;
  bool adjusted = false, windowed = false, want_logprobs = false;
  int32_t n_probs = 0;
  for (const Sequence* s : out->sampled) {
    const bool greedy = PlainGreedy(*s);
    const bool greedy_on_device = !greedy && DeviceGreedy(*s);
    b.argmax_only = b.argmax_only && greedy;
    const bool draws = !greedy && TopCandidatesDraw(*s);
    top_ok = top_ok && (greedy || greedy_on_device || draws);
    const bool full_row = !greedy && FullRowDraw(*s);
    full_ok = full_ok && (greedy || greedy_on_device || full_row);
    mixed_ok = mixed_ok && (greedy || greedy_on_device || draws || full_row);
    if (draws) top_k = std::max(top_k, s->sampler->params().top_k);
    windowed = windowed || (s->sampler && s->sampler->params().penalties_on());
    adjusted = adjusted || windowed || (s->sampler && !s->sampler->params().logit_bias.empty());
    if (s->sampler) {
      const SamplingParams& p = s->sampler->params();
      want_logprobs = want_logprobs || p.logprobs || p.n_probs > 0;
      n_probs = std::max(n_probs, p.n_probs);
    }
  }
  // Top logprobs come from the candidates: a top-k pass with at least n_probs of them.
  top_k = std::max(top_k, n_probs);
  b.top_k = !b.argmax_only && top_ok ? top_k : 0;
  b.draws.clear();
  // Full-row draws: alone (ids where the argmax goes), or beside top-k draws in one pass (the
  // top-k candidates of every row, then the drawn ids; rows that are not drawn get the argmax).
  const bool mixed = !b.argmax_only && b.top_k == 0 && (!full_ok || n_probs > 0) && mixed_ok;
  if (!b.argmax_only && b.top_k == 0 && (full_ok || mixed)) {
    if (mixed) {
      b.top_k = top_k;
    } else {
      b.argmax_only = true;
    }
    b.draws.resize(out->sampled.size());
    for (size_t i = 0; i < out->sampled.size(); ++i) {
      Sequence& s = *out->sampled[i];
      if (s.sampler->params().greedy() || !s.sampler->TakesDeviceDraw()) continue;  // temperature 0: the argmax
      const Sampler::DeviceDraw d = s.sampler->NextDeviceDraw();
      b.draws[i] = RowDraw{d.temperature, d.top_p, d.min_p, 0.0f, d.u};
    }
  }
  // Logit bias and repetition penalties go with the rows to the device, which applies them before
  // the argmax, draw or top-k. Each penalty window must hold the sequence's latest token, so
  // passes with penalties are not queued (a sequence with penalties is then never behind a queued
  // pass: its tokens are known); a bias depends on no token, and passes with bias alone are.
  b.penalties.clear();
  b.penalty_entries.clear();
  if (adjusted && (b.argmax_only || b.top_k > 0)) {
    b.penalties.resize(out->sampled.size());
    std::vector<Sampler::DeviceAdjustment>& adjustments = adjustment_scratch_;
    for (size_t i = 0; i < out->sampled.size(); ++i) {
      const Sampler& sampler = *out->sampled[i]->sampler;
      const SamplingParams& p = sampler.params();
      RowPenalty& row = b.penalties[i];
      row.begin = row.end = static_cast<int32_t>(b.penalty_entries.size());
      if (!p.penalties_on() && p.logit_bias.empty()) continue;
      adjustments.clear();
      sampler.DeviceAdjustments(&adjustments);
      for (const Sampler::DeviceAdjustment& a : adjustments) {
        const uint32_t flags = (a.biased ? PenaltyEntry::kBiased : 0u) | (a.penalized ? PenaltyEntry::kPenalized : 0u);
        b.penalty_entries.push_back(PenaltyEntry{a.id, a.subtrahend, a.bias, flags});
      }
      row.repeat = p.penalties_on() ? p.repeat_penalty : 1.0f;
      row.end = static_cast<int32_t>(b.penalty_entries.size());
    }
  }
  b.logprob_stats = want_logprobs && (b.argmax_only || b.top_k > 0);
  out->stats.resize(b.logprob_stats ? out->sampled.size() : 0);
  out->argmax_only = b.argmax_only;
  out->top_k = b.top_k;
  out->topk_with_draws = b.top_k > 0 && !b.draws.empty();
  const size_t rows = b.logit_rows.size();
  out->argmax.resize(b.argmax_only ? rows : 0);
  out->topk_ids.resize(rows * static_cast<size_t>(b.top_k) + (out->topk_with_draws ? rows : 0));
  out->topk_logits.resize(rows * static_cast<size_t>(b.top_k));
  out->logits.resize(b.argmax_only || b.top_k > 0 ? 0 : rows * static_cast<size_t>(n_vocab_));
  if (queue && b.argmax_only && !windowed && !b.logprob_stats && e.tokens.empty() && model_->CanQueue()) {
    HERD_RETURN_IF_ERROR(model_->QueueForward(b, cache_->layers()));
    out->queued = true;
    out->hidden.clear();
    return Status::Ok();
  }
  if (!b.tokens.empty()) {
    float* logits = b.top_k > 0 ? out->topk_logits.data() : out->logits.data();
    int32_t* ids = b.top_k > 0 ? out->topk_ids.data() : out->argmax.data();
    HERD_RETURN_IF_ERROR(model_->Forward(b, cache_->layers(), logits, ids, out->stats.data()));
  }
  out->hidden.resize(e.logit_rows.size() * static_cast<size_t>(model_->config().n_embd));
  if (!e.tokens.empty()) out->embed_status = model_->Embed(e, cache_->layers(), out->hidden.data());
  return Status::Ok();
}

}  // namespace herd
