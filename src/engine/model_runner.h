// ModelRunner: executes one SchedulerStep on the model. Builds the ForwardBatch (every chunk's
// tokens, positions and block table), performs the KV block copies the KvCacheManager queued
// (copy-on-write), runs Model::Forward and returns the logits of the sequences that sample
// this step: those whose chunk reaches the end of their tokens.
//
// Chunks of embedding sequences (Sequence::embedding) go into a second batch run with
// Model::Embed in the same step, which returns the final hidden states of the rows their pooling
// needs (every row for mean pooling; the first or last prompt position for cls / last). Two
// forward passes because Forward returns logits and Embed hidden states of its rows, never both;
// each pass carries only its own tokens, so a mixed step costs the same token work plus one
// more pass over the weights.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "engine/scheduler.h"
#include "kv/kv_cache.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "sampling/sampler.h"

namespace herd {

// One embedding chunk's hidden states: StepOutput::hidden rows [first_row, first_row + n_rows)
// hold positions first_row_pos.. of the sequence.
struct EmbeddedChunk {
  Sequence* seq = nullptr;
  int32_t n_tokens = 0;  // tokens the chunk computed (from seq->n_computed)
  int32_t first_row = 0, n_rows = 0, first_row_pos = 0;
};

struct StepOutput {
  std::vector<Sequence*> sampled;  // sequences whose logits were computed, in chunk order
  std::vector<float> logits;       // [sampled.size(), n_vocab]; empty when argmax_only
  // Every sampled sequence decodes greedily (logit bias, penalties and logprobs only as the device
  // takes them; no constraint or n > 1 fork), or some draw from their full rows
  // (Sampler::TakesDeviceDraw): the device returned only argmax[i], the argmax or the drawn id.
  bool argmax_only = false;
  std::vector<int32_t> argmax;  // [sampled.size()] when argmax_only
  // Every sampled sequence is plain greedy or draws with a top_k <= Backend::kMaxTopK and
  // nothing else that needs the whole row (Sampler::TakesTopCandidates): the device returned
  // each row's top_k most likely tokens, topk_ids / topk_logits [sampled.size(), top_k] (id -1
  // past a row's count); logits and argmax are empty.
  int32_t top_k = 0;
  // With top_k: some rows were drawn from their full rows on the device (Sampler::
  // TakesDeviceDraw); topk_ids then holds [sampled.size()] drawn ids after the candidates
  // (at sampled.size() * top_k + i; the argmax for rows that were not drawn).
  bool topk_with_draws = false;
  std::vector<int32_t> topk_ids;
  // With argmax_only or top_k, when some sampled sequence asked for logprobs: each row's
  // log-normalizer and the logit of its device-chosen id (Sampler::FinishDeviceToken).
  std::vector<RowLogprobStats> stats;
  std::vector<float> topk_logits;
  // The pass was queued (ModelRunner::Execute with queue): argmax is filled by Collect.
  bool queued = false;
  std::vector<EmbeddedChunk> embedded;
  std::vector<float> hidden;  // [rows, n_embd]
  Status embed_status;        // Model::Embed's result: failing only the embedding chunks' requests
};

class ModelRunner {
 public:
  // force_device_sampling: take the argmax / top-k path (StepOutput::argmax_only, top_k) on a
  // host backend too (tests of pipelined decoding on the CPU).
  ModelRunner(Model* model, KvCache* cache, KvCacheManager* kv, bool force_device_sampling = false);

  // Runs the step; sequences' n_computed are NOT advanced (the engine does that after it has
  // handled the result). Errors: the model rejected the generation batch (an Embed error is
  // out->embed_status instead, e.g. an architecture without embeddings).
  //
  // Pipelined decoding: with `queue`, a step whose output is argmax_only (and has no embedding
  // chunks) is queued on the model (Model::QueueForward) and Execute returns before the device
  // is done; out->queued is then set and Collect(out) waits for the ids. feedback_rows: the
  // sampled rows of the pass queued before this one, whose ids are not on the host yet; a
  // sequence whose last token is kFedBackToken takes it from row Sequence::fed_back_row there.
  Status Execute(const SchedulerStep& step, StepOutput* out, bool queue = false, int32_t feedback_rows = 0);
  // Waits for a queued step's pass and fills out->argmax.
  Status Collect(StepOutput* out);

  int32_t n_vocab() const { return n_vocab_; }

 private:
  std::vector<Sampler::DeviceAdjustment> adjustment_scratch_;  // one sequence's bias and penalties
  Model* model_;
  KvCache* cache_;
  KvCacheManager* kv_;
  int32_t n_vocab_;
  bool device_argmax_ = false;  // see StepOutput::argmax_only
  ForwardBatch batch_;          // reused across steps
  ForwardBatch embed_batch_;    // embedding chunks
};

}  // namespace herd
