// Engine: per-sequence work after a forward pass — sampling, n > 1 forks, detokenization,
// stop strings, events and finishing.
#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "engine/engine.h"
#include "engine/request_state.h"

namespace herd {

bool SameComputation(const GenerationRequest& a, const GenerationRequest& b) {
  const SamplingParams &x = a.sampling, &y = b.sampling;
  return a.prompt == b.prompt && a.max_tokens == b.max_tokens && a.stop == b.stop && a.ignore_eos == b.ignore_eos &&
         a.n == b.n && a.json_mode == b.json_mode && x.temperature == y.temperature && x.top_k == y.top_k &&
         x.top_p == y.top_p && x.min_p == y.min_p && x.typical_p == y.typical_p &&
         x.repeat_penalty == y.repeat_penalty && x.presence_penalty == y.presence_penalty &&
         x.frequency_penalty == y.frequency_penalty && x.penalty_last_n == y.penalty_last_n &&
         x.logit_bias == y.logit_bias && x.stop_tokens == y.stop_tokens && x.logprobs == y.logprobs &&
         x.n_probs == y.n_probs;
}

namespace {

double Seconds(EngineClock::duration d) { return std::chrono::duration<double>(d).count(); }

// Latencies of a request that ends now (timings.finished is set by whoever finished it).
void RecordRequestEnd(const RequestState& r, EngineMetrics& m) {
  const RequestTimings& t = r.timings;
  const EngineClock::time_point none{};
  const EngineClock::time_point end = t.finished != none ? t.finished : EngineClock::now();
  const double queue = t.first_scheduled != none ? Seconds(t.first_scheduled - t.submitted) : -1.0;
  double tpot = -1.0;
  const int32_t generated = r.choices.empty() ? 0 : r.choices[0]->n_generated();
  if (generated >= 2 && t.first_token != none)
    tpot = Seconds(r.choices[0]->last_token - t.first_token) / (generated - 1);
  m.OnRequestEnd(r.finish, Seconds(end - t.submitted), queue, tpot);
}

}  // namespace

uint64_t CoalesceKey(const GenerationRequest& r) {
  uint64_t h = 0xcbf29ce484222325ULL ^ static_cast<uint64_t>(r.max_tokens);
  for (int32_t t : r.prompt) h = (h ^ static_cast<uint32_t>(t)) * 0x100000001b3ULL;
  return h;
}

std::unique_ptr<Sequence> Engine::MakeSequence(RequestState* r, int32_t index, uint64_t seed) {
  auto s = std::make_unique<Sequence>();
  s->id = next_seq_++;
  s->request = r;
  s->index = index;
  s->priority = r->request.priority;
  s->tokens = r->request.prompt;
  s->n_prompt = static_cast<int32_t>(r->request.prompt.size());
  s->max_tokens = r->request.max_tokens;
  SamplingParams params = r->request.sampling;
  params.seed = seed;
  auto sampler = Sampler::Create(params, model_->config().n_vocab);
  HERD_CHECK(sampler.ok());  // validated by Submit
  s->sampler.emplace(std::move(*sampler));
  s->sampler->Accept(s->tokens);
  if (tokenizer_ != nullptr) {
    DecodeOptions opts;
    opts.strip_leading_space = false;  // the output continues the prompt
    s->detokenizer = std::make_unique<StreamingDetokenizer>(*tokenizer_, opts);
  }
  s->stop = std::make_unique<StopMatcher>(r->request.stop);
  if (r->request.json_mode) s->constraint = std::make_unique<JsonConstraint>(JsonVocab(), params.stop_tokens);
  return s;
}

std::shared_ptr<const JsonVocabulary> Engine::JsonVocab() {
  std::call_once(json_vocab_once_, [&] {
    HERD_CHECK(tokenizer_ != nullptr);
    // Ids past the tokenizer (padding of the output row) and control tokens have no text.
    std::vector<std::string> pieces(static_cast<size_t>(model_->config().n_vocab));
    for (int32_t id = 0; id < tokenizer_->n_tokens(); ++id) {
      pieces[static_cast<size_t>(id)] = tokenizer_->TokenToPiece(id);
    }
    json_vocab_ = JsonVocabulary::Create(std::move(pieces));
  });
  return json_vocab_;
}

void Engine::Retire(RequestState* r) {
  RecordRequestEnd(*r, *metrics_);
  PublishMetrics();  // a client that sees its request end sees it in the metrics too
  for (auto& sub : r->subscribers) {
    sub.stream->Close();
    aliases_.erase(sub.id);
    queued_.fetch_sub(1);
  }
  if (r->coalescable) {
    auto [lo, hi] = coalesce_index_.equal_range(r->coalesce_key);
    for (auto it = lo; it != hi; ++it) {
      if (it->second == r->id) {
        coalesce_index_.erase(it);
        break;
      }
    }
  }
  ++stats_.requests_finished;
  requests_.erase(r->id);
}

bool Engine::Coalesce(std::unique_ptr<RequestState>& r) {
  const GenerationRequest& q = r->request;
  if (!options_.coalesce_identical || !q.sampling.greedy() || q.n != 1 || !q.pins.empty()) return false;
  r->coalescable = true;
  r->coalesce_key = CoalesceKey(q);
  auto [lo, hi] = coalesce_index_.equal_range(r->coalesce_key);
  for (auto it = lo; it != hi; ++it) {
    RequestState* host = requests_.at(it->second).get();
    if (!SameComputation(host->request, q)) continue;
    for (const EngineEvent& ev : host->log) r->stream->Push(ev);
    host->subscribers.push_back({r->id, r->stream});
    aliases_[r->id] = host->id;
    ++stats_.coalesced;
    return true;
  }
  coalesce_index_.emplace(r->coalesce_key, r->id);
  return false;
}

void Engine::CancelOne(RequestId id) {
  RequestId primary = id;
  if (auto a = aliases_.find(id); a != aliases_.end()) primary = a->second;
  auto it = requests_.find(primary);
  if (it == requests_.end()) return;
  RequestState* r = it->second.get();
  if (r->subscribers.size() <= 1) {
    FinishRequest(r, FinishReason::kCancelled, Status::Ok());
    return;
  }
  // Others still want this computation: only this subscriber leaves.
  for (size_t i = 0; i < r->subscribers.size(); ++i) {
    if (r->subscribers[i].id != id) continue;
    EngineEvent ev;
    ev.kind = EngineEvent::Kind::kFinished;
    ev.time = EngineClock::now();
    ev.finish = FinishReason::kCancelled;
    ev.usage = {static_cast<int32_t>(r->request.prompt.size()), 0, 0};
    ev.timings = r->timings;
    r->subscribers[i].stream->Push(ev);
    r->subscribers[i].stream->Close();
    r->subscribers.erase(r->subscribers.begin() + static_cast<long>(i));
    aliases_.erase(id);
    queued_.fetch_sub(1);
    return;
  }
}

void Engine::Admit(std::unique_ptr<RequestState> r) {
  if (Coalesce(r)) return;
  r->subscribers.push_back({r->id, r->stream});
  RequestState* raw = r.get();
  const uint64_t arrival = next_arrival_++;
  auto first = MakeSequence(raw, 0, raw->request.sampling.seed);
  first->arrival = arrival;
  raw->pinned.assign(raw->request.pins.size(), false);
  raw->choices.push_back(std::move(first));
  requests_.emplace(raw->id, std::move(r));
  if (raw->request.max_tokens == 0) {
    FinishRequest(raw, FinishReason::kLength, Status::Ok());
    return;
  }
  scheduler_.AddWaiting(raw->choices[0].get());
}

void Engine::FinishRequest(RequestState* r, FinishReason reason, const Status& error) {
  const auto now = EngineClock::now();
  r->finish = reason;
  for (auto& s : r->choices) {
    Forget(s.get());
    if (s->status == SequenceStatus::kFinished) continue;
    scheduler_.Remove(s.get());
    EngineEvent ev;
    ev.kind = EngineEvent::Kind::kFinished;
    ev.index = s->index;
    ev.time = now;
    ev.finish = reason;
    ev.error = error;
    ev.usage = {s->n_prompt, r->choices[0]->n_cached, s->n_generated()};
    r->timings.finished = now;
    ev.timings = r->timings;
    r->Emit(ev);
  }
  // Choices not forked yet never ran: report them too so a client sees n finish events.
  for (int32_t i = static_cast<int32_t>(r->choices.size()); i < r->request.n; ++i) {
    EngineEvent ev;
    ev.kind = EngineEvent::Kind::kFinished;
    ev.index = i;
    ev.time = now;
    ev.finish = reason;
    ev.error = error;
    ev.usage = {static_cast<int32_t>(r->request.prompt.size()), 0, 0};
    ev.timings = r->timings;
    r->Emit(ev);
  }
  Retire(r);
}

void Engine::FinishSequence(Sequence* seq, FinishReason reason, std::string text, EngineClock::time_point now,
                            const Status& error) {
  RequestState* r = seq->request;
  if (seq->index == 0) r->finish = reason;
  scheduler_.Remove(seq);
  Forget(seq);
  EngineEvent ev;
  ev.kind = EngineEvent::Kind::kFinished;
  ev.index = seq->index;
  ev.time = now;
  ev.finish = reason;
  ev.error = error;
  ev.text = std::move(text);
  ev.stop_string = seq->stop->matched_string();
  ev.usage = {seq->n_prompt, r->choices[0]->n_cached, seq->n_generated()};
  r->timings.finished = now;
  ev.timings = r->timings;
  r->Emit(ev);
  if (++r->n_finished == r->request.n) Retire(r);  // destroys the sequences
}

void Engine::ForkChoices(Sequence* parent) {
  RequestState* r = parent->request;
  r->forked = true;
  const uint64_t base_seed = parent->sampler->seed();
  for (int32_t i = 1; i < r->request.n; ++i) {
    auto child = MakeSequence(r, i, base_seed + static_cast<uint64_t>(i));
    child->arrival = parent->arrival;
    child->n_computed = parent->n_computed;
    child->n_cached = parent->n_cached;
    child->admitted_once = true;
    if (parent->constraint != nullptr) child->constraint = parent->constraint->Clone();
    kv_.Fork(parent->id, child->id);
    Sequence* raw = child.get();
    r->choices.push_back(std::move(child));
    scheduler_.AddRunning(raw);
  }
}

void Engine::CommitChunks(const SchedulerStep& step) {
  for (const ScheduledChunk& c : step.chunks) {
    Sequence* s = c.seq;
    if (s->n_computed < s->n_prompt) {
      stats_.prompt_tokens_computed += std::min(c.n_tokens, s->n_prompt - s->n_computed);
    }
    s->n_computed += c.n_tokens;
    kv_.Commit(s->id, s->tokens, s->n_computed);
    RequestState* r = s->request;
    if (s->index != 0) continue;
    for (size_t p = 0; p < r->request.pins.size(); ++p) {
      const PrefixPin& pin = r->request.pins[p];
      if (r->pinned[p] || s->n_computed < std::min(pin.n_tokens, s->n_prompt)) continue;
      kv_.Pin(s->tokens, std::min(pin.n_tokens, s->n_prompt), KvClock::now() + pin.ttl);
      r->pinned[p] = true;
    }
  }
}

void Engine::AfterForward(const SchedulerStep& step, StepOutput& out) {
  CommitChunks(step);
  const auto now = EngineClock::now();
  const size_t n_vocab = static_cast<size_t>(runner_.n_vocab());
  // Forks first (they need the parent's row before sampling modifies it), then sampling.
  // A token chosen on the device, with the logprobs its request asks for (from the row's stats;
  // id_logit: the chosen id's logit, from the device or from the candidates).
  auto device_token = [&](Sequence* s, size_t i, int32_t id, float id_logit, std::span<const Candidate> top) {
    HostDraw d;
    const SamplingParams& p = s->sampler->params();
    if (id >= 0 && (p.logprobs || p.n_probs > 0) && i < out.stats.size()) {
      d.t = s->sampler->FinishDeviceToken(id, id_logit, out.stats[i].log_z, top);
    } else {
      d.t.id = id;
    }
    Emit(s, std::move(d), now);
  };
  if (out.argmax_only) {  // greedy or drawn on the device everywhere (ModelRunner): only the ids came back
    for (size_t i = 0; i < out.sampled.size(); ++i) {
      Sequence* s = out.sampled[i];
      if (s == nullptr) continue;
      device_token(s, i, out.argmax[i], i < out.stats.size() ? out.stats[i].id_logit : 0.0f, {});
    }
    return;
  }
  if (out.top_k > 0) {  // each row's top-k candidates came back (ModelRunner: greedy or top-k draws)
    std::vector<Candidate> top;
    for (size_t i = 0; i < out.sampled.size(); ++i) {
      Sequence* s = out.sampled[i];
      if (s == nullptr) continue;
      top.clear();
      for (int32_t j = 0; j < out.top_k; ++j) {
        const size_t at = i * static_cast<size_t>(out.top_k) + static_cast<size_t>(j);
        if (out.topk_ids[at] < 0) break;
        top.push_back(Candidate{out.topk_ids[at], out.topk_logits[at], 0.0f});
      }
      // Greedy: the most likely candidate (-1 when the row had no number, an error below).
      int32_t id = 0;
      float id_logit = 0.0f;
      if (s->sampler->params().greedy()) {
        id = top.empty() ? -1 : top[0].id;
        id_logit = top.empty() ? 0.0f : top[0].logit;
      } else if (out.topk_with_draws && s->sampler->TakesDeviceDraw()) {  // drawn from its full row
        id = out.topk_ids[out.sampled.size() * static_cast<size_t>(out.top_k) + i];
        id_logit = i < out.stats.size() ? out.stats[i].id_logit : 0.0f;
      } else {
        id = s->sampler->SampleTopCandidates(top).id;
        for (const Candidate& c : top) {
          if (c.id == id) id_logit = c.logit;
        }
      }
      device_token(s, i, id, id_logit, top);
    }
    return;
  }
  std::vector<std::pair<Sequence*, float*>> rows;
  std::vector<std::vector<float>> fork_rows;
  fork_rows.reserve(out.sampled.size() * static_cast<size_t>(options_.max_n));
  for (size_t i = 0; i < out.sampled.size(); ++i) {
    Sequence* s = out.sampled[i];
    if (s == nullptr) continue;
    float* row = out.logits.data() + i * n_vocab;
    RequestState* r = s->request;
    if (s->index == 0 && !r->forked && r->request.n > 1) {
      const size_t first_child = r->choices.size();
      ForkChoices(s);
      for (size_t c = first_child; c < r->choices.size(); ++c) {
        fork_rows.emplace_back(row, row + n_vocab);
        rows.emplace_back(r->choices[c].get(), fork_rows.back().data());
      }
    }
    rows.emplace_back(s, row);
  }
  // The draws on the pool (each row's sampler and constraint are its sequence's own), then the
  // tokens accepted and emitted in order on this thread.
  stats_.host_sampled_rows += static_cast<int64_t>(rows.size());
  std::vector<HostDraw> drawn(rows.size());
  auto draw = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) drawn[i] = DrawOnHost(rows[i].first, rows[i].second);
  };
  if (sample_pool_ == nullptr && rows.size() > 1) {
    const int32_t n =
        options_.sampling_threads > 0 ? options_.sampling_threads : std::min(8, ThreadPool::DefaultThreadCount());
    if (n > 1) sample_pool_ = std::make_unique<ThreadPool>(n);
  }
  if (sample_pool_ != nullptr && rows.size() > 1) {
    sample_pool_->ParallelFor(static_cast<int64_t>(rows.size()), 1, draw);
  } else {
    draw(0, static_cast<int64_t>(rows.size()));
  }
  for (size_t i = 0; i < rows.size(); ++i) Emit(rows[i].first, std::move(drawn[i]), now);
}

Engine::HostDraw Engine::DrawOnHost(Sequence* seq, float* logits) {
  HostDraw d;
  if (seq->constraint != nullptr && seq->constraint->Mask(logits) == 0) {
    d.masked_out = true;
    return d;
  }
  d.t = seq->sampler->Sample(logits);
  return d;
}

void Engine::SampleAndEmit(Sequence* seq, float* logits, EngineClock::time_point now, int32_t device_argmax) {
  HostDraw d;
  if (logits != nullptr) {
    d = DrawOnHost(seq, logits);
  } else {
    d.t.id = device_argmax;  // what Sample would return (a plain greedy sequence, or a device draw)
  }
  Emit(seq, std::move(d), now);
}

void Engine::Emit(Sequence* seq, HostDraw d, EngineClock::time_point now) {
  RequestState* r = seq->request;
  if (d.masked_out) {
    FinishSequence(seq, FinishReason::kError, "", now,
                   Internal("constrained decoding: no token of the vocabulary can continue the output"));
    return;
  }
  const SampledToken& t = d.t;
  if (t.id < 0) {  // the device found no number in the row: the model produced NaNs
    FinishSequence(seq, FinishReason::kError, "", now, Internal("the model's logits are not numbers (NaN)"));
    return;
  }
  if (seq->constraint != nullptr && !seq->constraint->Accept(t.id)) {
    // Only when logit_bias banned every token the constraint allows.
    FinishSequence(seq, FinishReason::kError, "", now,
                   InvalidArgument("logit_bias bans every token that the response format allows here"));
    return;
  }
  seq->sampler->Accept(t.id);
  if (seq->fed_back_row >= 0) {  // pipelined: the token the next pass already took on the device
    HERD_CHECK(seq->tokens.back() == kFedBackToken);
    seq->tokens.back() = t.id;
    seq->fed_back_row = -1;
  } else {
    seq->tokens.push_back(t.id);
  }
  ++stats_.generated_tokens;
  if (r->timings.first_token == EngineClock::time_point{}) {
    r->timings.first_token = now;
    metrics_->OnFirstToken(Seconds(now - r->timings.submitted), seq->n_prompt);
  }
  if (seq->last_token != EngineClock::time_point{}) metrics_->OnTokenGap(Seconds(now - seq->last_token));
  seq->last_token = now;
  const bool stop_token = seq->sampler->IsStopToken(t.id);
  EngineEvent ev;
  ev.kind = EngineEvent::Kind::kToken;
  ev.index = seq->index;
  ev.time = now;
  ev.token = t.id;
  ev.logprob = t.logprob;
  ev.top = t.top;
  ev.usage = {seq->n_prompt, r->choices[0]->n_cached, seq->n_generated()};
  if (!stop_token && seq->detokenizer != nullptr) ev.text = seq->stop->Push(seq->detokenizer->Push(t.id));
  // A constrained output ends as soon as it is complete (JSON mode: the object is closed).
  const bool stopped =
      stop_token || seq->stop->matched() || (seq->constraint != nullptr && seq->constraint->IsComplete());
  const bool length =
      !stopped && (seq->n_generated() >= seq->max_tokens || static_cast<int32_t>(seq->tokens.size()) >= n_ctx_);
  if (!stop_token) r->Emit(ev);
  if (stopped || length) {
    // Release what the detokenizer and the stop matcher still hold (nothing after a stop string).
    std::string rest;
    if (!seq->stop->matched()) {
      if (seq->detokenizer != nullptr) rest = seq->stop->Push(seq->detokenizer->Finish());
      if (!seq->stop->matched()) rest += seq->stop->Flush();
    }
    FinishSequence(seq, stopped || seq->stop->matched() ? FinishReason::kStop : FinishReason::kLength, std::move(rest),
                   now);
  }
}

}  // namespace herd
