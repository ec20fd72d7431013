#include "engine/engine.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "base/check.h"
#include "engine/request_state.h"

namespace herd {

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "?";
}

Result<std::unique_ptr<Engine>> Engine::Create(Model* model, KvCache* cache, const Tokenizer* tokenizer,
                                               const EngineOptions& options) {
  if (options.scheduler.max_batch_tokens <= 0 || options.scheduler.max_running <= 0 ||
      options.scheduler.max_waiting < 0) {
    return InvalidArgument("scheduler limits must be positive");
  }
  if (tokenizer != nullptr && tokenizer->n_tokens() > model->config().n_vocab) {
    return InvalidArgument(StrFormat("tokenizer has %d tokens, the model's output only %d", tokenizer->n_tokens(),
                                     model->config().n_vocab));
  }
  const int32_t n_ctx = options.n_ctx > 0 ? options.n_ctx : model->config().n_ctx_train;
  if (n_ctx <= 0) return InvalidArgument("context length must be positive");
  return std::unique_ptr<Engine>(new Engine(model, cache, tokenizer, options, n_ctx));
}

namespace {
bool PipelineOn(const EngineOptions& o, Model* model) {
  if (o.pipeline == EngineOptions::Pipeline::kOff || !model->CanQueue()) return false;
  if (o.pipeline == EngineOptions::Pipeline::kOn) return true;
  const char* env = std::getenv("HERD_PIPELINE");
  if (env != nullptr && std::string_view(env) == "0") return false;
  size_t free_bytes = 0, total_bytes = 0;  // only a device overlaps the host's work
  return model->backend().DeviceMemory(&free_bytes, &total_bytes);
}

KvCacheManagerOptions KvOptions(const KvCache& cache, const EngineOptions& o) {
  KvCacheManagerOptions k;
  k.n_blocks = cache.config().n_blocks;
  k.block_size = cache.config().block_size;
  k.prefix_caching = o.prefix_caching;
  k.cache_key = StrFormat("%s|%s|%d", o.cache_key.c_str(), std::string(DTypeName(cache.config().type)).c_str(),
                          cache.config().block_size);
  return k;
}
}  // namespace

Engine::Engine(Model* model, KvCache* cache, const Tokenizer* tokenizer, const EngineOptions& options, int32_t n_ctx)
    : model_(model),
      cache_(cache),
      tokenizer_(tokenizer),
      options_(options),
      n_ctx_(n_ctx),
      kv_(KvOptions(*cache, options)),
      scheduler_(options.scheduler, &kv_),
      runner_(model, cache, &kv_, options.pipeline == EngineOptions::Pipeline::kOn && model->CanQueue()),
      pipeline_(PipelineOn(options, model)),
      metrics_(options.metrics ? options.metrics : std::make_shared<EngineMetrics>()) {
  stats_.total_blocks = cache->config().n_blocks;
  stats_.free_blocks = kv_.free_blocks();
  published_ = stats_;
  PublishMetrics();
}

Engine::~Engine() {
  Stop();
  ApplyInbox();
  std::vector<RequestState*> live;
  for (auto& [id, r] : requests_) live.push_back(r.get());
  for (RequestState* r : live) FinishRequest(r, FinishReason::kCancelled, Status::Ok());
  metrics_->OnStep({}, 0, 0, 0, 0);  // the metrics may outlive the engine: nothing runs any more
}

void Engine::PublishMetrics() {
  stats_.prefix = kv_.stats();
  stats_.running = static_cast<int32_t>(scheduler_.running().size());
  stats_.waiting = static_cast<int32_t>(scheduler_.waiting().size());
  stats_.free_blocks = kv_.free_blocks();
  stats_.pinned_blocks = kv_.pinned_blocks();
  const EngineStats& before = metrics_base_;
  EngineMetrics::StepDelta d;
  d.prompt_tokens_computed = stats_.prompt_tokens_computed - before.prompt_tokens_computed;
  d.generation_tokens = stats_.generated_tokens - before.generated_tokens;
  d.preemptions = stats_.preemptions - before.preemptions;
  d.host_sampled_rows = stats_.host_sampled_rows - before.host_sampled_rows;
  d.prefix_queries = stats_.prefix.queried_tokens - before.prefix.queried_tokens;
  d.prefix_hits = stats_.prefix.hit_tokens - before.prefix.hit_tokens;
  metrics_->OnStep(d, stats_.running, stats_.waiting, stats_.total_blocks - stats_.free_blocks, stats_.total_blocks);
  metrics_base_ = stats_;
}

void Engine::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Engine::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (in_flight_) {  // its tokens are emitted; nothing is queued on the device afterwards
    FinishInFlight();
    PublishMetrics();
    std::lock_guard lock(mu_);
    published_ = stats_;
  }
}

void Engine::Loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] {
        return stop_ || !inbox_.empty() || !cancels_.empty() || !requests_.empty() || in_flight_.has_value();
      });
      if (stop_) return;
    }
    if (!Step()) {
      // Nothing could run (only possible while requests wait on pins or a failing model):
      // wait for news instead of spinning.
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(5), [&] { return stop_ || !inbox_.empty() || !cancels_.empty(); });
    }
  }
}

Result<std::shared_ptr<RequestStream>> Engine::Submit(GenerationRequest req) {
  const int32_t n_vocab = model_->config().n_vocab;
  if (req.prompt.empty()) return InvalidArgument("the prompt is empty");
  for (int32_t t : req.prompt) {
    if (t < 0 || t >= n_vocab) return InvalidArgument(StrFormat("token id %d is out of range [0, %d)", t, n_vocab));
  }
  if (req.n < 1 || req.n > options_.max_n) {
    return InvalidArgument(StrFormat("n must be in [1, %d], got %d", options_.max_n, req.n));
  }
  if (req.max_tokens < -1) return InvalidArgument(StrFormat("max_tokens must be >= 0, got %d", req.max_tokens));
  if (!req.stop.empty() && tokenizer_ == nullptr) return InvalidArgument("stop strings need a tokenizer");
  if (req.json_mode) {
    if (tokenizer_ == nullptr) return InvalidArgument("JSON mode needs a tokenizer");
    JsonVocab();  // built on the submitter's thread the first time, not on the engine thread
  }
  if (!req.ignore_eos && tokenizer_ != nullptr) {
    for (int32_t id : tokenizer_->vocab().eog) req.sampling.stop_tokens.push_back(id);
  }
  HERD_RETURN_IF_ERROR(Sampler::Create(req.sampling, n_vocab).status());
  int32_t n_prompt = static_cast<int32_t>(req.prompt.size());
  const int32_t want = req.max_tokens < 0 ? 1 : req.max_tokens;
  if (n_prompt + want > n_ctx_) {
    if (!req.truncate) {
      return OutOfRange(StrFormat("the prompt (%d tokens) plus max_tokens (%d) exceeds the context length (%d)",
                                  n_prompt, want, n_ctx_));
    }
    const int32_t keep = std::clamp(req.truncate_keep, 0, n_prompt);
    const int32_t room = n_ctx_ - want - keep;
    if (room < 1) {
      return OutOfRange(
          StrFormat("max_tokens (%d) plus %d kept tokens leave no room for the prompt in %d", want, keep, n_ctx_));
    }
    req.prompt.erase(req.prompt.begin() + keep, req.prompt.end() - room);
    n_prompt = static_cast<int32_t>(req.prompt.size());
  }
  if (req.max_tokens < 0) req.max_tokens = n_ctx_ - n_prompt;
  const int32_t blocks = kv_.BlocksFor(n_prompt + req.max_tokens);
  if (blocks > cache_->config().n_blocks) {
    return InvalidArgument(StrFormat("the request needs %d tokens of KV cache; the pool holds %d (raise the KV budget)",
                                     n_prompt + req.max_tokens, cache_->config().n_blocks * kv_.block_size()));
  }
  auto state = std::make_unique<RequestState>();
  state->request = std::move(req);
  return Enqueue(std::move(state));
}

Result<std::shared_ptr<RequestStream>> Engine::Enqueue(std::unique_ptr<RequestState> state) {
  const int32_t limit = options_.scheduler.max_running + options_.scheduler.max_waiting;
  if (queued_.fetch_add(1) >= limit) {
    queued_.fetch_sub(1);
    return ResourceExhausted(StrFormat("overloaded: %d requests are already queued or running", limit));
  }
  state->id = next_request_.fetch_add(1);
  state->stream = std::make_shared<RequestStream>(state->id);
  state->timings.submitted = EngineClock::now();
  auto stream = state->stream;
  {
    std::lock_guard lock(mu_);
    inbox_.push_back(std::move(state));
  }
  cv_.notify_all();
  return stream;
}

void Engine::Cancel(RequestId id) {
  {
    std::lock_guard lock(mu_);
    cancels_.push_back(id);
  }
  cv_.notify_all();
}

bool Engine::Busy() const { return queued_.load() > 0; }

EngineStats Engine::stats() const {
  std::lock_guard lock(mu_);
  return published_;
}

void Engine::CheckInvariants() const {
  kv_.CheckInvariants();
  for (const Sequence* s : scheduler_.running()) {
    HERD_CHECK(s->status == SequenceStatus::kRunning && kv_.Has(s->id));
    HERD_CHECK(s->n_computed < static_cast<int32_t>(s->tokens.size()));
    HERD_CHECK(static_cast<int32_t>(kv_.BlockTable(s->id).size()) >= kv_.BlocksFor(s->n_computed));
  }
  for (const Sequence* s : scheduler_.waiting()) {
    HERD_CHECK(s->status == SequenceStatus::kWaiting && !kv_.Has(s->id) && s->n_computed == 0);
  }
}

void Engine::ApplyInbox() {
  std::vector<std::unique_ptr<RequestState>> inbox;
  std::vector<RequestId> cancels;
  {
    std::lock_guard lock(mu_);
    inbox.swap(inbox_);
    cancels.swap(cancels_);
  }
  for (auto& r : inbox) {
    if (r->embedding) {
      AdmitEmbedding(std::move(r));
    } else {
      Admit(std::move(r));
    }
  }
  for (RequestId id : cancels) CancelOne(id);
}

bool Engine::Step() {
  const auto start = EngineClock::now();
  ApplyInbox();
  kv_.ExpirePins(KvClock::now());
  // Pipelined: the pass in flight has its tokens on the device; what the next schedule needs of
  // it (n_computed, prefix-cache commits, which sequences end by length) is known already.
  const bool had_in_flight = in_flight_.has_value();
  const int32_t feedback_rows = had_in_flight ? static_cast<int32_t>(step_outs_[in_flight_->out].sampled.size()) : 0;
  if (had_in_flight) AdvanceInFlight();
  SchedulerStep step = scheduler_.Schedule();
  stats_.preemptions += static_cast<int64_t>(step.preempted.size());
  StepOutput& out = step_outs_[had_in_flight ? 1 - in_flight_->out : 0];
  bool decode_only = true;
  for (const ScheduledChunk& c : step.chunks) {
    decode_only = decode_only && c.n_tokens == 1 && c.seq->n_computed >= c.seq->n_prompt;
  }
  const int64_t step_tokens = static_cast<int64_t>(step.chunks.size());
  const bool scheduled = !step.empty();  // (step may move into in_flight_ below)
  Status st = Status::Ok();
  double forward = 0;
  if (!step.empty()) {
    for (const ScheduledChunk& c : step.chunks) {
      RequestState* r = c.seq->request;
      if (r->timings.first_scheduled == EngineClock::time_point{}) r->timings.first_scheduled = start;
    }
    current_step_ = &step;
    current_out_ = &out;
    const auto t0 = EngineClock::now();
    st = runner_.Execute(step, &out, pipeline_, feedback_rows);
    forward += std::chrono::duration<double>(EngineClock::now() - t0).count();
    ++stats_.steps;
    if (!st.ok()) {
      // The model rejected the batch: every request in it fails; the others go on.
      std::vector<RequestState*> failed;
      for (const ScheduledChunk& c : step.chunks) {
        if (std::find(failed.begin(), failed.end(), c.seq->request) == failed.end()) failed.push_back(c.seq->request);
      }
      for (RequestState* r : failed) FinishRequest(r, FinishReason::kError, st);
    }
  }
  // Consumed in this call: the pass that was in flight (its wait overlaps nothing more: this
  // step is queued behind it already), then this step unless it was queued in its turn.
  int64_t consumed_tokens = 0;
  bool consumed_decode_only = true;
  double sample = 0;
  if (had_in_flight) {
    const auto t0 = EngineClock::now();
    const int64_t n = FinishInFlight();
    sample += std::chrono::duration<double>(EngineClock::now() - t0).count();
    consumed_decode_only = n >= 0;
    consumed_tokens += std::max<int64_t>(n, 0);
  }
  if (!step.empty() && st.ok()) {
    if (out.queued) {
      ++stats_.queued_steps;
      in_flight_ = InFlight{std::move(step), static_cast<int>(&out - step_outs_), decode_only};
    } else {
      const auto t0 = EngineClock::now();
      if (out.embedded.empty()) {
        AfterForward(step, out);
      } else {
        // Embedding chunks are pooled, not sampled or committed to the prefix cache.
        SchedulerStep generation = step;
        std::erase_if(generation.chunks, [](const ScheduledChunk& c) { return c.seq->embedding; });
        AfterForward(generation, out);
        AfterEmbedding(out);
      }
      sample += std::chrono::duration<double>(EngineClock::now() - t0).count();
      consumed_decode_only = consumed_decode_only && decode_only;
      consumed_tokens += step_tokens;
    }
  }
  current_step_ = nullptr;
  current_out_ = nullptr;
  const bool ran = scheduled || had_in_flight;
  if (ran) {
    const double seconds = std::chrono::duration<double>(EngineClock::now() - start).count();
    stats_.forward_seconds += forward;
    stats_.sample_seconds += sample;
    stats_.step_seconds += seconds;
    if (consumed_decode_only && consumed_tokens > 0) {
      stats_.decode_step_seconds += seconds;
      stats_.decode_step_tokens += consumed_tokens;
      ++stats_.decode_steps;
    }
  }
  PublishMetrics();
  {
    std::lock_guard lock(mu_);
    published_ = stats_;
  }
  return ran;
}

}  // namespace herd
