// Engine: the in-process API the server calls. Turns many concurrent requests into batched
// forward passes (continuous batching, chunked prefill, automatic prefix caching, preemption).
//
//   auto engine = Engine::Create(model, cache, tokenizer, options);
//   engine->Start();                                   // the loop runs on its own thread
//   auto stream = engine->Submit(request);             // Result<shared_ptr<RequestStream>>
//   while (stream->Next(&event)) ...                   // tokens, text deltas, finish + usage
//   engine->Cancel(stream->id());                      // at any moment; blocks freed before the next step
//
// Submit and Cancel are thread-safe and never wait for a step. Each step: apply submissions
// and cancellations, expire pins, Scheduler::Schedule, ModelRunner::Execute, then sample,
// detokenize, match stop strings and push events for every sequence that produced logits.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "engine/embedding.h"
#include "engine/engine_metrics.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/request_stream.h"
#include "engine/scheduler.h"
#include "kv/kv_cache.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "sampling/json_constraint.h"
#include "tokenizer/tokenizer.h"

namespace herd {

struct EngineOptions {
  SchedulerConfig scheduler;
  int32_t n_ctx = 0;  // longest sequence; 0: the model's training context
  bool prefix_caching = true;
  std::string cache_key;  // identity of the model file: prefix hashes and persisted caches depend on it
  int32_t max_n = 16;     // most choices per request
  // A greedy request identical to one in flight (same tokens, limits and sampling parameters)
  // joins it as a subscriber instead of computing again; events so far are replayed to it.
  bool coalesce_identical = true;
  // Where the engine records counters, gauges and latency histograms; null: a new one. Pass the
  // same object to the next engine of the same model to keep counting across reloads.
  std::shared_ptr<EngineMetrics> metrics;
  // Pipelined decoding (engine_pipeline.cc): a step whose sequences all decode greedily is
  // queued on the device and the next step is scheduled and queued behind it before its ids
  // come back (they are fed back on the device), so the host's scheduling, batch building and
  // event emission overlap the GPU's work. kAuto: on device backends whose model can queue
  // passes (HERD_PIPELINE=0 turns it off); kOn: on host backends too (tests: no overlap there,
  // each step's tokens are emitted one step later); kOff: never.
  enum class Pipeline { kAuto, kOn, kOff };
  Pipeline pipeline = Pipeline::kAuto;
  // Steps whose logits rows come to the host (penalties, logit bias, logprobs, constraints, ...)
  // run the rows' samplers on this many threads (each sequence's draw is its own: the tokens do
  // not depend on it); 0: up to 8, one per core; 1: on the engine thread.
  int32_t sampling_threads = 0;
};

struct EngineStats {
  int64_t steps = 0;
  int64_t prompt_tokens_computed = 0;  // tokens that went through a forward pass as prefill
  int64_t generated_tokens = 0;
  int64_t preemptions = 0;
  int64_t requests_finished = 0;
  int64_t coalesced = 0;          // requests served by another identical request's computation
  int64_t queued_steps = 0;       // steps run as queued (pipelined) passes
  int64_t host_sampled_rows = 0;  // logits rows copied to the host and sampled there
  double step_seconds = 0;        // time in steps (schedule, forward, sampling)
  // Steps in which every sequence decoded one token (no prefill work): the batched decode rate
  // is decode_step_tokens / decode_step_seconds.
  double decode_step_seconds = 0;
  int64_t decode_step_tokens = 0;
  int64_t decode_steps = 0;  // their count: decode_step_tokens / decode_steps is the mean batch
  // Where step time goes: the forward pass (ModelRunner::Execute, logits on the host included)
  // and sampling + emitting events (AfterForward); the rest is scheduling and bookkeeping.
  double forward_seconds = 0;
  double sample_seconds = 0;
  PrefixCacheStats prefix;
  int32_t running = 0, waiting = 0;
  int32_t free_blocks = 0, total_blocks = 0, pinned_blocks = 0;
};

struct RequestState;

class Engine {
 public:
  // `tokenizer` may be null: events then carry token ids only and stop strings are refused.
  // Model, cache and tokenizer must outlive the engine.
  static Result<std::unique_ptr<Engine>> Create(Model* model, KvCache* cache, const Tokenizer* tokenizer,
                                                const EngineOptions& options);
  ~Engine();  // stops the loop; unfinished requests end with kCancelled

  void Start();
  void Stop();

  // Validates and queues a request. Errors: InvalidArgument (empty prompt, token ids out of
  // range, bad sampling parameters, a request that cannot fit the KV pool, json_mode without a
  // tokenizer), OutOfRange (prompt +
  // max_tokens exceed the context and truncation was not asked for), ResourceExhausted (the
  // waiting queue is full: "overloaded").
  Result<std::shared_ptr<RequestStream>> Submit(GenerationRequest request);
  // Queues an embedding request (engine/embedding.h): its prompt runs as prefill in the same
  // steps, budget and limits as generation; its one kFinished event carries the pooled vector.
  // Errors as Submit; OutOfRange when the prompt exceeds the context and truncate is off.
  Result<std::shared_ptr<RequestStream>> SubmitEmbedding(EmbeddingRequest request);
  // Ends the request with kCancelled before the next step; unknown or finished ids are ignored.
  void Cancel(RequestId id);

  // Runs one step on the calling thread (tests; do not mix with Start). Returns false when
  // there was nothing to run.
  bool Step();
  // Whether any submitted request has not finished yet. Thread-safe.
  bool Busy() const;

  EngineStats stats() const;
  // Recorded as the engine runs; readable from any thread (engine_metrics.h).
  const std::shared_ptr<EngineMetrics>& metrics() const { return metrics_; }
  const KvCacheManager& kv() const { return kv_; }
  KvCacheManager& mutable_kv() { return kv_; }
  int32_t n_ctx() const { return n_ctx_; }
  // Aborts if block bookkeeping is inconsistent (tests call it after every step).
  void CheckInvariants() const;

  // Prefix cache persistence (engine_persistence.cc, file format in kv/prefix_store.h). Both
  // must be called while the loop is not running — before Start() or after Stop(); they abort
  // otherwise. A server loads at start-up and saves at shutdown (or periodically with Stop/Start).
  //
  // Saves the cached full blocks of every pinned prefix, then those of each of `prefixes`
  // (token ids; whatever part of each is cached). Errors: IoError.
  Status SavePrefixCache(const std::string& path, const std::vector<std::vector<int32_t>>& prefixes) const;
  // Loads a file saved by an engine with the same EngineOptions::cache_key (model file
  // identity), KV type and block size into empty KV blocks (cached, evictable; nothing in the
  // pool is evicted). Returns the number of blocks loaded. Errors: NotFound, IoError,
  // InvalidArgument (another model / KV type / block size, a truncated or corrupt file, prefix
  // caching off); the cache is then unchanged.
  Result<int32_t> LoadPrefixCache(const std::string& path);

 private:
  Engine(Model* model, KvCache* cache, const Tokenizer* tokenizer, const EngineOptions& options, int32_t n_ctx);
  void Loop();
  void ApplyInbox();
  void Admit(std::unique_ptr<RequestState> request);
  void FinishRequest(RequestState* r, FinishReason reason, const Status& error);
  void Retire(RequestState* r);  // closes every subscriber's stream and forgets the request
  bool Coalesce(std::unique_ptr<RequestState>& r);
  void CancelOne(RequestId id);
  void AfterForward(const SchedulerStep& step, StepOutput& out);
  // Advances n_computed over the step's chunks and commits their blocks to the prefix cache
  // (and pins); the first half of AfterForward, all a step's successor needs to be scheduled.
  void CommitChunks(const SchedulerStep& step);
  // Pipelined decoding (engine_pipeline.cc). Before scheduling the next step: commit the
  // in-flight step's chunks and give each of its sampled sequences a kFedBackToken; those that
  // reach their length limit with that token leave the scheduler.
  void AdvanceInFlight();
  // Waits for the in-flight pass and emits its tokens (SampleAndEmit fills the placeholders).
  // Returns the step's token count when it was decode-only, else -1.
  int64_t FinishInFlight();
  // A sequence that finishes or is cancelled leaves the steps whose results are not consumed
  // yet (the one in flight and the one being run), so nothing touches it after it is gone.
  void Forget(Sequence* seq);
  void ForkChoices(Sequence* parent);
  // logits: the sequence's row (sampled here), or null when the device already chose the token
  // (device_argmax; see StepOutput::argmax_only and top_k).
  void SampleAndEmit(Sequence* seq, float* logits, EngineClock::time_point now, int32_t device_argmax = -1);
  // A token drawn on the host: the constraint's mask and the sampler's draw on the sequence's
  // row. Touches only that sequence's sampler and constraint, so rows of a step are drawn on
  // several threads (sample_pool_); `masked_out`: the constraint allowed no token.
  struct HostDraw {
    bool masked_out = false;
    SampledToken t;
  };
  static HostDraw DrawOnHost(Sequence* seq, float* logits);
  // The rest of SampleAndEmit, on the engine thread: accept the token and emit it (t.id < 0: the
  // device found no number in the row).
  void Emit(Sequence* seq, HostDraw d, EngineClock::time_point now);
  void FinishSequence(Sequence* seq, FinishReason reason, std::string text, EngineClock::time_point now,
                      const Status& error = Status::Ok());
  // The vocabulary prepared for JSON mode: built on first use (thread-safe), shared by all requests.
  std::shared_ptr<const JsonVocabulary> JsonVocab();
  std::unique_ptr<Sequence> MakeSequence(RequestState* r, int32_t index, uint64_t seed);
  // Refreshes stats_'s gauges and adds what stats_ gained since the last call to metrics_. After
  // each step, and when a request ends (before its client can see the end).
  void PublishMetrics();
  // Every validated request (generation or embedding): the queue limit (ResourceExhausted), an id
  // and a stream, then the inbox. Thread-safe.
  Result<std::shared_ptr<RequestStream>> Enqueue(std::unique_ptr<RequestState> state);
  // Embedding requests (embedding.cc).
  void AdmitEmbedding(std::unique_ptr<RequestState> r);
  void AfterEmbedding(const StepOutput& out);

  Model* model_;
  KvCache* cache_;
  const Tokenizer* tokenizer_;
  std::once_flag json_vocab_once_;
  std::shared_ptr<const JsonVocabulary> json_vocab_;
  EngineOptions options_;
  int32_t n_ctx_;
  KvCacheManager kv_;
  Scheduler scheduler_;
  ModelRunner runner_;
  // Reused: their logits buffers ([n_rows, n_vocab] floats) stay allocated. Two, because a
  // queued step's output lives on while the next step runs.
  StepOutput step_outs_[2];
  // Host sampling threads (EngineOptions::sampling_threads), started by the first step that
  // samples more than one row on the host; null until then and with one thread.
  std::unique_ptr<ThreadPool> sample_pool_;
  bool pipeline_ = false;
  struct InFlight {
    SchedulerStep step;
    int out = 0;  // index into step_outs_
    bool decode_only = false;
  };
  std::optional<InFlight> in_flight_;
  // The step being run by Step() until its results are consumed (Forget purges it too).
  SchedulerStep* current_step_ = nullptr;
  StepOutput* current_out_ = nullptr;
  std::shared_ptr<EngineMetrics> metrics_;
  EngineStats metrics_base_;  // stats_ as of the last PublishMetrics

  // Engine-thread state.
  std::unordered_map<RequestId, std::unique_ptr<RequestState>> requests_;
  std::unordered_map<RequestId, RequestId> aliases_;             // coalesced subscriber -> computing request
  std::unordered_multimap<uint64_t, RequestId> coalesce_index_;  // CoalesceKey -> coalescable requests
  SeqId next_seq_ = 1;
  uint64_t next_arrival_ = 0;
  EngineStats stats_;

  // Shared with submitters.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<RequestState>> inbox_;
  std::vector<RequestId> cancels_;
  EngineStats published_;
  std::atomic<RequestId> next_request_{1};
  std::atomic<int32_t> queued_{0};  // submitted, not yet finished
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace herd
