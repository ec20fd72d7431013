// A loaded model and its forward pass over a batch of tokens from many sequences.
//
// The forward pass reads and writes K/V through block tables into a cache the caller (the
// engine) owns; the model holds no per-sequence state. Logits are produced only for the
// batch rows the caller asks for.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/attention.h"
#include "kernels/backend.h"
#include "model/config.h"

namespace herd {

class GgufFile;

// One step's input. Token i belongs to sequence seq[i] at position pos[i]; each sequence's
// block table must cover positions [0, max pos of that sequence in the batch].
struct ForwardBatch {
  std::vector<int32_t> tokens;                     // [n_tokens]
  std::vector<int32_t> pos;                        // [n_tokens]
  std::vector<int32_t> seq;                        // [n_tokens] index into block_tables
  std::vector<std::vector<int32_t>> block_tables;  // [n_seqs][n_blocks of that sequence]
  std::vector<int32_t> logit_rows;                 // token indices whose logits are returned
  // Greedy decoding on the device: when true, Forward returns only each logit row's argmax (in
  // `argmax`) and leaves `logits` unwritten; the [n_rows, n_vocab] logits never leave the device.
  bool argmax_only = false;
  // Sampling on the device: when > 0 (at most Backend::kMaxTopK, not with argmax_only), Forward
  // returns each logit row's top_k most likely entries (Backend::TopKRows: ids in `argmax`,
  // [n_rows * top_k], their logits in `logits`, [n_rows * top_k]; id -1 past a row's count).
  int32_t top_k = 0;
  // Drawing on the device: when not empty ([logit_rows.size()]), row r's id is drawn from its
  // full logits by draws[r] (Backend::DrawRows; temperature 0 gives the argmax). With
  // argmax_only the ids go where the argmax would (token feedback works as for argmax ids);
  // with top_k they follow the candidates in `argmax` ([n_rows * top_k] candidates, then
  // [n_rows] drawn ids).
  std::vector<RowDraw> draws;
  // Logit bias and repetition penalties on the device (with argmax_only or top_k): when not empty
  // ([logit_rows.size()]), each logit row is adjusted by penalties[r] over penalty_entries
  // (Backend::PenalizeRows) before its argmax, draw or top-k.
  std::vector<RowPenalty> penalties;
  std::vector<PenaltyEntry> penalty_entries;
  // Logprobs without the rows on the host (with argmax_only or top_k): Forward also returns each
  // logit row's RowLogprobStats (Backend::LogprobStatsRows over the row after penalties; the
  // id is the row's argmax or drawn id where the pass has one). Not for queued passes.
  bool logprob_stats = false;
  // Tokens fed back on the device (pipelined decoding): a token -(r + 1) stands for the argmax
  // of logit row r of the previous pass, which must have been argmax_only with at least
  // feedback_rows rows (Model::Forward / QueueForward, or the pass taken last). 0: every token
  // is an id. The host never waits for that pass's ids before queuing this one.
  int32_t feedback_rows = 0;

  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  Status Validate(int32_t n_vocab, int32_t block_size, int32_t n_blocks) const;
  // True when no sequence has two tokens in the batch (a decode step), which is what
  // AttentionBatch::may_have_runs = false promises the backend. O(n log n) in the tokens.
  bool OneTokenPerSequence() const;
};

class Model {
 public:
  virtual ~Model() = default;
  const ModelConfig& config() const { return config_; }

  // Runs the batch. kv: one view per layer ([n_layer]). logits (host memory):
  // [batch.logit_rows.size(), n_vocab] float32, or with batch.argmax_only the rows' argmax in
  // argmax (host memory, [batch.logit_rows.size()]; see ArgMax in sampling: first index of the
  // largest value), or with batch.top_k each row's top_k candidates (see ForwardBatch::top_k).
  // Errors: invalid batch (ids out of range, positions beyond a block table, a bad top_k).
  // With batch.logprob_stats, `stats` (host memory, [batch.logit_rows.size()]) gets the rows' stats.
  virtual Status Forward(const ForwardBatch& batch, std::span<const KvLayerView> kv, float* logits,
                         int32_t* argmax = nullptr, RowLogprobStats* stats = nullptr) = 0;

  // Pipelined decoding: QueueForward queues an argmax_only pass and returns without waiting for
  // the device; TakeQueued waits for the oldest queued pass and writes its logit rows' argmax
  // (host memory, [batch.logit_rows.size()] of that pass). The next pass (queued or not) may
  // be queued before the previous one is taken and take its tokens from it (feedback_rows).
  // At most kMaxQueued passes are queued at once. Models that cannot do this return
  // Unimplemented (CanQueue false); the engine then runs every pass with Forward.
  static constexpr int kMaxQueued = 2;
  virtual bool CanQueue() const { return false; }
  virtual Status QueueForward(const ForwardBatch& batch, std::span<const KvLayerView> kv);
  virtual Status TakeQueued(int32_t* argmax);

  // Final hidden states before the output projection, for embeddings: [rows.size(), n_embd]
  // (after the final norm). Optional per architecture.
  virtual Status Embed(const ForwardBatch& batch, std::span<const KvLayerView> kv, float* hidden);

  Backend& backend() { return *backend_; }

 protected:
  Model(ModelConfig config, Backend* backend) : config_(std::move(config)), backend_(backend) {}
  ModelConfig config_;
  Backend* backend_;
};

// Architectures register a factory by name (model/arch/*.cc, one file each).
using ModelFactory = std::function<Result<std::unique_ptr<Model>>(const GgufFile& file, Backend* backend)>;
bool RegisterArchitecture(const std::string& arch, ModelFactory factory);
std::vector<std::string> RegisteredArchitectures();

// Builds the model named by `general.architecture`. The GgufFile must outlive the model
// (CPU weights point into its mapping); `backend` must too.
Result<std::unique_ptr<Model>> LoadModel(const GgufFile& file, Backend* backend);

}  // namespace herd
