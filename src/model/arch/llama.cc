// Architecture `llama`: Llama 2/3/3.1/3.2, Mistral, TinyLlama, SmolLM and other models with
// RMSNorm, GQA attention with adjacent-pair RoPE (GGUF stores Q/K permuted for it), SwiGLU
// feed-forward, and tied or separate output embeddings.
//
// Per layer, for x: [T, n_embd]:
//   h = rms_norm(x) * attn_norm;  q = h·Wqᵀ [T, n_head*hd];  k, v = h·Wkᵀ, h·Wvᵀ [T, n_head_kv*hd]
//   rope(q, k);  store k, v in the paged cache;  a = attention(q, cache) [T, n_head*hd]
//   x += a·Woᵀ;  h = rms_norm(x) * ffn_norm;  x += (silu(h·Wgᵀ) * (h·Wuᵀ))·Wdᵀ
// then logits = rms_norm(x[rows]) * output_norm · Woutᵀ.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "io/gguf.h"
#include "model/arch/architectures.h"
#include "model/model.h"
#include "model/weights.h"

namespace herd {
namespace {

struct LayerWeights {
  const float* attn_norm;  // [n_embd]
  TensorView wq;           // [n_head*hd, n_embd]
  TensorView wk;           // [n_head_kv*hd, n_embd]
  TensorView wv;           // [n_head_kv*hd, n_embd]
  TensorView wo;           // [n_embd, n_head*hd]
  const float* ffn_norm;   // [n_embd]
  TensorView w_gate;       // [n_ff, n_embd]
  TensorView w_up;         // [n_ff, n_embd]
  TensorView w_down;       // [n_embd, n_ff]
};

class LlamaModel final : public Model {
 public:
  LlamaModel(ModelConfig config, Backend* backend) : Model(std::move(config), backend) {}
  ~LlamaModel() override {
    for (void* p : owned_) backend_->Free(p);
    FreeWorkspace();
  }

  Status Load(const GgufFile& f) {
    const ModelConfig& c = config_;
    WeightLoader w(f, backend_);
    const GgufTensorInfo* embd = f.FindTensor("token_embd.weight");
    if (embd == nullptr) return NotFound(f.path() + ": missing tensor 'token_embd.weight'");
    if (embd->ne.size() < 2) return InvalidArgument(f.path() + ": token_embd.weight must be 2-D");
    config_.n_vocab = static_cast<int32_t>(embd->ne[1]);
    HERD_ASSIGN_OR_RETURN(tok_embd_, w.Matrix("token_embd.weight", {c.n_embd, c.n_vocab}));
    HERD_ASSIGN_OR_RETURN(output_norm_, w.F32Vector("output_norm.weight", c.n_embd));
    config_.tied_output = !w.Has("output.weight");
    if (config_.tied_output) {
      output_ = tok_embd_;
    } else {
      HERD_ASSIGN_OR_RETURN(output_, w.Matrix("output.weight", {c.n_embd, c.n_vocab}));
    }
    config_.has_rope_freqs = w.Has("rope_freqs.weight");
    std::vector<float> factors;
    if (config_.has_rope_freqs) {
      const GgufTensorInfo* info = f.FindTensor("rope_freqs.weight");
      HERD_ASSIGN_OR_RETURN(TensorView rf, w.Matrix("rope_freqs.weight", {c.n_rot / 2}));
      if (info->type != DType::kF32) return InvalidArgument(f.path() + ": rope_freqs.weight must be F32");
      const float* p = reinterpret_cast<const float*>(f.TensorData(*info));
      factors.assign(p, p + c.n_rot / 2);
      (void)rf;
    }
    RopeParams rope{c.n_rot, c.rope_freq_base, c.rope_freq_scale, factors.empty() ? nullptr : factors.data()};
    std::vector<float> inv(static_cast<size_t>(c.n_rot / 2));
    RopeInverseFrequencies(rope, inv.data());
    inv_freq_ = static_cast<float*>(backend_->Alloc(sizeof(float) * inv.size()));
    backend_->CopyToDevice(inv_freq_, inv.data(), sizeof(float) * inv.size());
    owned_.push_back(inv_freq_);

    layers_.resize(static_cast<size_t>(c.n_layer));
    for (int32_t i = 0; i < c.n_layer; ++i) {
      LayerWeights& l = layers_[static_cast<size_t>(i)];
      const std::string b = "blk." + std::to_string(i) + ".";
      HERD_ASSIGN_OR_RETURN(l.attn_norm, w.F32Vector(b + "attn_norm.weight", c.n_embd));
      HERD_ASSIGN_OR_RETURN(const std::vector<TensorView> qkv,
                            w.MatrixGroup({{b + "attn_q.weight", {c.n_embd, c.q_dim()}},
                                           {b + "attn_k.weight", {c.n_embd, c.kv_dim()}},
                                           {b + "attn_v.weight", {c.n_embd, c.kv_dim()}}}));
      l.wq = qkv[0], l.wk = qkv[1], l.wv = qkv[2];
      HERD_ASSIGN_OR_RETURN(l.wo, w.Matrix(b + "attn_output.weight", {c.q_dim(), c.n_embd}));
      HERD_ASSIGN_OR_RETURN(l.ffn_norm, w.F32Vector(b + "ffn_norm.weight", c.n_embd));
      HERD_ASSIGN_OR_RETURN(l.w_gate, w.Matrix(b + "ffn_gate.weight", {c.n_embd, c.n_ff}));
      HERD_ASSIGN_OR_RETURN(l.w_up, w.Matrix(b + "ffn_up.weight", {c.n_embd, c.n_ff}));
      HERD_ASSIGN_OR_RETURN(l.w_down, w.Matrix(b + "ffn_down.weight", {c.n_ff, c.n_embd}));
    }
    for (void* p : w.TakeAllocations()) owned_.push_back(p);
    return Status::Ok();
  }

  Status Forward(const ForwardBatch& batch, std::span<const KvLayerView> kv, float* logits, int32_t* argmax,
                 RowLogprobStats* stats) override {
    if ((batch.argmax_only || batch.top_k > 0) && argmax == nullptr) {
      return InvalidArgument("argmax_only / top_k need an argmax output");
    }
    if (batch.logprob_stats && stats == nullptr) return InvalidArgument("logprob_stats need a stats output");
    const uint64_t tag = LogitsTag(batch);
    HERD_ASSIGN_OR_RETURN(const float* hidden, Run(batch, kv, tag));
    const ModelConfig& c = config_;
    const int64_t n_out = static_cast<int64_t>(batch.logit_rows.size());
    Backend& be = *backend_;
    Logits(batch, hidden);
    if (n_out == 0) return Status::Ok();
    be.Synchronize();
    if (batch.logprob_stats) {
      be.CopyToHost(stats, ws_.stats, sizeof(RowLogprobStats) * static_cast<size_t>(n_out));
    }
    if (batch.argmax_only) {
      be.CopyToHost(argmax, ws_.argmax, sizeof(int32_t) * static_cast<size_t>(n_out));
    } else if (batch.top_k > 0) {
      const size_t n = static_cast<size_t>(n_out) * static_cast<size_t>(batch.top_k);
      be.CopyToHost(argmax, ws_.topk_ids, sizeof(int32_t) * n);
      be.CopyToHost(logits, ws_.topk_vals, sizeof(float) * n);
      if (!batch.draws.empty()) be.CopyToHost(argmax + n, ws_.argmax, sizeof(int32_t) * static_cast<size_t>(n_out));
    } else {
      be.CopyToHost(logits, ws_.logits, sizeof(float) * static_cast<size_t>(n_out) * c.n_vocab);
    }
    return Status::Ok();
  }

  bool CanQueue() const override { return true; }

  // The pass runs like Forward's; its ids go to the host through a queued copy (no wait here).
  Status QueueForward(const ForwardBatch& batch, std::span<const KvLayerView> kv) override {
    if (!batch.argmax_only || batch.logit_rows.empty() || batch.logprob_stats) {
      return InvalidArgument("a queued pass must be argmax_only with logit rows, without logprob stats");
    }
    if (n_queued_ >= kMaxQueued) return Internal("too many queued passes");
    HERD_ASSIGN_OR_RETURN(const float* hidden, Run(batch, kv, LogitsTag(batch)));
    Logits(batch, hidden);
    Queued& q = queued_[(first_queued_ + n_queued_) % kMaxQueued];
    q.ids.resize(batch.logit_rows.size());
    q.ticket = backend_->QueueCopyToHost(q.ids.data(), ws_.argmax, sizeof(int32_t) * q.ids.size());
    ++n_queued_;
    return Status::Ok();
  }

  Status TakeQueued(int32_t* argmax) override {
    if (n_queued_ == 0) return Internal("no queued pass");
    Queued& q = queued_[first_queued_];
    backend_->WaitCopyToHost(q.ticket);
    std::memcpy(argmax, q.ids.data(), sizeof(int32_t) * q.ids.size());
    first_queued_ = (first_queued_ + 1) % kMaxQueued;
    --n_queued_;
    return Status::Ok();
  }

  Status Embed(const ForwardBatch& batch, std::span<const KvLayerView> kv, float* hidden_out) override {
    HERD_ASSIGN_OR_RETURN(const float* hidden, Run(batch, kv, /*graph_tag=*/2));
    backend_->EndGraph();
    backend_->Synchronize();
    backend_->CopyToHost(hidden_out, hidden, sizeof(float) * batch.logit_rows.size() * config_.n_embd);
    return Status::Ok();
  }

 private:
  struct Workspace {
    int64_t capacity = 0;      // tokens
    int64_t out_capacity = 0;  // logit rows
    float *x = nullptr, *h = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *attn = nullptr;
    float *gate = nullptr, *up = nullptr, *rows = nullptr, *rows_normed = nullptr, *logits = nullptr;
    int32_t* argmax = nullptr;                // [out_capacity]
    RowDraw* draws = nullptr;                 // [out_capacity], uploaded per pass when the batch draws
    RowPenalty* penalties = nullptr;          // [out_capacity], uploaded per pass with penalties
    PenaltyEntry* penalty_entries = nullptr;  // [penalty_capacity]
    RowLogprobStats* stats = nullptr;         // [out_capacity]
    int64_t penalty_capacity = 0;
    int32_t* topk_ids = nullptr;  // [out_capacity * Backend::kMaxTopK]
    float* topk_vals = nullptr;   // [out_capacity * Backend::kMaxTopK]
    // The batch description, uploaded by one copy per pass into `batch` (device, batch_bytes),
    // packed as [table_ptrs: seqs_capacity][table_lens: seqs_capacity][tokens, pos, seq: T each]
    // [logit_rows: n_out][block tables: as many entries as the batch has]. Every address a graph
    // captures depends only on the capacities (generation), T and n_out (graph key); the block
    // tables are reached through table_ptrs, which are data.
    uint8_t* batch = nullptr;
    int64_t batch_bytes = 0;
    int64_t seqs_capacity = 0;        // sequences (powers of two)
    int64_t tables_capacity = 0;      // block-table entries (powers of two)
    std::vector<uint8_t> batch_host;  // the host image of the packed description
    int32_t *tokens = nullptr, *pos = nullptr, *seq = nullptr, *logit_rows = nullptr;  // into `batch`
    const int32_t** table_ptrs = nullptr;                                              // [n_seqs], into `batch`
    int32_t* table_lens = nullptr;                                                     // [n_seqs], into `batch`
    uint64_t generation = 0;            // bumped whenever a buffer above is reallocated (graph keys)
    const void* kv_identity = nullptr;  // the KV cache of the last pass (its layer 0 K)
  };

  // The graph tag of a pass that ends in logits (Run): 3 for argmax ids (with the top-k field
  // 127, never a top-k, when they are drawn: another kernel), else 1 and the top_k.
  static uint64_t LogitsTag(const ForwardBatch& batch) {
    const uint64_t penalized = batch.penalties.empty() ? 0 : uint64_t{1} << 36;
    const uint64_t stats = batch.logprob_stats ? uint64_t{1} << 38 : 0;
    if (batch.argmax_only) return 3 | (batch.draws.empty() ? 0 : uint64_t{127} << 22) | penalized | stats;
    return 1 | static_cast<uint64_t>(batch.top_k) << 22 | penalized | (batch.draws.empty() ? 0 : uint64_t{1} << 37) |
           stats;
  }

  // The output projection of the rows `hidden` holds, the argmax / top-k the batch asks for,
  // then the end of the pass's graph. Records what ws_.argmax now holds (token feedback).
  void Logits(const ForwardBatch& batch, const float* hidden) {
    const ModelConfig& c = config_;
    const int64_t n_out = static_cast<int64_t>(batch.logit_rows.size());
    Backend& be = *backend_;
    if (n_out > 0) be.MatMul(output_, hidden, n_out, ws_.logits);
    if (n_out > 0 && !batch.penalties.empty()) {
      be.PenalizeRows(ws_.logits, n_out, c.n_vocab, ws_.penalties, ws_.penalty_entries);
    }
    if (n_out > 0 && batch.argmax_only) {
      if (batch.draws.empty()) {
        be.ArgMaxRows(ws_.logits, n_out, c.n_vocab, ws_.argmax);
      } else {
        be.DrawRows(ws_.logits, n_out, c.n_vocab, ws_.draws, ws_.argmax);
      }
    }
    if (n_out > 0 && batch.top_k > 0)
      be.TopKRows(ws_.logits, n_out, c.n_vocab, batch.top_k, ws_.topk_ids, ws_.topk_vals);
    if (n_out > 0 && batch.top_k > 0 && !batch.draws.empty())
      be.DrawRows(ws_.logits, n_out, c.n_vocab, ws_.draws, ws_.argmax);
    if (n_out > 0 && batch.logprob_stats) be.LogprobStatsRows(ws_.logits, n_out, c.n_vocab, ws_.argmax, ws_.stats);
    be.EndGraph();
    argmax_rows_ = batch.argmax_only ? n_out : 0;
  }

  template <typename T>
  void Release(T*& p) {
    if (p != nullptr) backend_->Free(const_cast<void*>(static_cast<const void*>(p)));
    p = nullptr;
  }
  void FreeWorkspace() {
    for (float** p : {&ws_.x, &ws_.h, &ws_.q, &ws_.k, &ws_.v, &ws_.attn, &ws_.gate, &ws_.up}) Release(*p);
    for (float** p : {&ws_.rows, &ws_.rows_normed, &ws_.logits}) Release(*p);
    Release(ws_.argmax);
    Release(ws_.topk_ids);
    Release(ws_.topk_vals);
    Release(ws_.draws);
    Release(ws_.penalties);
    Release(ws_.penalty_entries);
    Release(ws_.stats);
    ws_.penalty_capacity = 0;
    Release(ws_.batch);
    ws_.capacity = ws_.out_capacity = ws_.seqs_capacity = ws_.tables_capacity = ws_.batch_bytes = 0;
  }

  template <typename T>
  T* Alloc(int64_t n) {
    return static_cast<T*>(backend_->Alloc(sizeof(T) * static_cast<size_t>(n)));
  }

  static int64_t Pow2AtLeast(int64_t n, int64_t floor) {
    int64_t c = floor;
    while (c < n) c *= 2;
    return c;
  }

  void Reserve(int64_t n_tok, int64_t n_out, int64_t n_seqs, int64_t n_table_entries, int64_t n_penalty_entries) {
    const ModelConfig& c = config_;
    bool grew = false;
    if (n_tok > ws_.capacity) {
      for (float** p : {&ws_.x, &ws_.h, &ws_.q, &ws_.k, &ws_.v, &ws_.attn, &ws_.gate, &ws_.up}) Release(*p);
      ws_.capacity = n_tok;
      ws_.x = Alloc<float>(n_tok * c.n_embd);
      ws_.h = Alloc<float>(n_tok * std::max(c.n_embd, c.q_dim()));
      ws_.q = Alloc<float>(n_tok * c.q_dim());
      ws_.k = Alloc<float>(n_tok * c.kv_dim());
      ws_.v = Alloc<float>(n_tok * c.kv_dim());
      ws_.attn = Alloc<float>(n_tok * c.q_dim());
      ws_.gate = Alloc<float>(n_tok * c.n_ff);
      ws_.up = Alloc<float>(n_tok * c.n_ff);
      grew = true;
    }
    if (n_out > ws_.out_capacity) {
      for (float** p : {&ws_.rows, &ws_.rows_normed, &ws_.logits}) Release(*p);
      // The previous pass's ids may still be fed back to this one: they move to the new buffer.
      int32_t* argmax = Alloc<int32_t>(n_out);
      if (argmax_rows_ > 0) backend_->CopyOnDevice(argmax, ws_.argmax, sizeof(int32_t) * argmax_rows_);
      Release(ws_.argmax);
      ws_.argmax = argmax;
      Release(ws_.topk_ids);
      Release(ws_.topk_vals);
      Release(ws_.draws);
      Release(ws_.penalties);
      Release(ws_.stats);
      ws_.out_capacity = n_out;
      ws_.rows = Alloc<float>(n_out * c.n_embd);
      ws_.rows_normed = Alloc<float>(n_out * c.n_embd);
      ws_.logits = Alloc<float>(n_out * c.n_vocab);
      ws_.topk_ids = Alloc<int32_t>(n_out * Backend::kMaxTopK);
      ws_.topk_vals = Alloc<float>(n_out * Backend::kMaxTopK);
      ws_.draws = Alloc<RowDraw>(n_out);
      ws_.penalties = Alloc<RowPenalty>(n_out);
      ws_.stats = Alloc<RowLogprobStats>(n_out);
      grew = true;
    }
    if (n_penalty_entries > ws_.penalty_capacity) {
      Release(ws_.penalty_entries);
      ws_.penalty_capacity = Pow2AtLeast(n_penalty_entries, 1024);
      ws_.penalty_entries = Alloc<PenaltyEntry>(ws_.penalty_capacity);
      grew = true;
    }
    // Sequences and block tables grow by doubling: a decode step that needs one more block
    // must not change the graph key.
    if (n_seqs > ws_.seqs_capacity) {
      ws_.seqs_capacity = Pow2AtLeast(n_seqs, 8);
      grew = true;
    }
    if (n_table_entries > ws_.tables_capacity) {
      ws_.tables_capacity = Pow2AtLeast(n_table_entries, 64);
      grew = true;
    }
    if (grew || ws_.batch == nullptr) {
      ++ws_.generation;
      Release(ws_.batch);
      ws_.batch_bytes = 12 * ws_.seqs_capacity + 4 * (3 * ws_.capacity + ws_.out_capacity + ws_.tables_capacity);
      ws_.batch = Alloc<uint8_t>(ws_.batch_bytes);
    }
  }

  // Packs the batch description (Workspace::batch) on the host, uploads it with one copy and
  // points the workspace's index arrays into it.
  void UploadBatch(const ForwardBatch& batch) {
    const int64_t T = batch.size();
    const int64_t n_out = static_cast<int64_t>(batch.logit_rows.size());
    const size_t off_lens = 8 * static_cast<size_t>(ws_.seqs_capacity);
    const size_t off_tokens = off_lens + 4 * static_cast<size_t>(ws_.seqs_capacity);
    const size_t off_pos = off_tokens + 4 * static_cast<size_t>(T);
    const size_t off_seq = off_pos + 4 * static_cast<size_t>(T);
    const size_t off_rows = off_seq + 4 * static_cast<size_t>(T);
    const size_t off_tables = off_rows + 4 * static_cast<size_t>(n_out);
    size_t used = off_tables;
    for (const auto& t : batch.block_tables) used += 4 * t.size();
    HERD_CHECK(static_cast<int64_t>(used) <= ws_.batch_bytes);
    std::vector<uint8_t>& h = ws_.batch_host;
    if (h.size() < used) h.resize(used);
    std::memcpy(h.data() + off_tokens, batch.tokens.data(), 4 * static_cast<size_t>(T));
    std::memcpy(h.data() + off_pos, batch.pos.data(), 4 * static_cast<size_t>(T));
    std::memcpy(h.data() + off_seq, batch.seq.data(), 4 * static_cast<size_t>(T));
    if (n_out > 0) std::memcpy(h.data() + off_rows, batch.logit_rows.data(), 4 * static_cast<size_t>(n_out));
    size_t off = off_tables;
    for (size_t i = 0; i < batch.block_tables.size(); ++i) {
      const auto& t = batch.block_tables[i];
      const int32_t* dev = reinterpret_cast<const int32_t*>(ws_.batch + off);
      const auto len = static_cast<int32_t>(t.size());
      std::memcpy(h.data() + 8 * i, &dev, sizeof(dev));
      std::memcpy(h.data() + off_lens + 4 * i, &len, 4);
      if (!t.empty()) std::memcpy(h.data() + off, t.data(), 4 * t.size());
      off += 4 * t.size();
    }
    backend_->CopyToDevice(ws_.batch, h.data(), used);
    if (!batch.draws.empty())
      backend_->CopyToDevice(ws_.draws, batch.draws.data(), sizeof(RowDraw) * batch.draws.size());
    if (!batch.penalties.empty()) {
      backend_->CopyToDevice(ws_.penalties, batch.penalties.data(), sizeof(RowPenalty) * batch.penalties.size());
      if (!batch.penalty_entries.empty()) {
        backend_->CopyToDevice(ws_.penalty_entries, batch.penalty_entries.data(),
                               sizeof(PenaltyEntry) * batch.penalty_entries.size());
      }
    }
    ws_.table_ptrs = reinterpret_cast<const int32_t**>(ws_.batch);
    ws_.table_lens = reinterpret_cast<int32_t*>(ws_.batch + off_lens);
    ws_.tokens = reinterpret_cast<int32_t*>(ws_.batch + off_tokens);
    ws_.pos = reinterpret_cast<int32_t*>(ws_.batch + off_pos);
    ws_.seq = reinterpret_cast<int32_t*>(ws_.batch + off_seq);
    ws_.logit_rows = reinterpret_cast<int32_t*>(ws_.batch + off_rows);
  }

  // Batches of up to this many tokens (decode steps) may run as one device graph per shape.
  static constexpr int64_t kMaxGraphTokens = 256;

  // Runs all layers and the final norm of the requested rows; returns [n_rows, n_embd]. On
  // success a graph may be open (Backend::BeginGraph): the caller queues its last ops, then
  // EndGraph. Everything the ops see is fixed by the key: the batch shape, the workspace buffers
  // and the KV cache (ws_.generation changes whenever a buffer is reallocated or another cache is
  // used); the per-step data is uploaded before BeginGraph.
  Result<const float*> Run(const ForwardBatch& batch, std::span<const KvLayerView> kv, uint64_t graph_tag) {
    const ModelConfig& c = config_;
    if (kv.size() != static_cast<size_t>(c.n_layer)) {
      return InvalidArgument(StrFormat("KV cache has %zu layers, model has %d", kv.size(), c.n_layer));
    }
    HERD_RETURN_IF_ERROR(batch.Validate(c.n_vocab, kv[0].block_size, kv[0].n_blocks));
    if (batch.feedback_rows > argmax_rows_) {
      return InvalidArgument(StrFormat("the batch feeds back %d rows; the previous pass left %lld argmax ids",
                                       batch.feedback_rows, static_cast<long long>(argmax_rows_)));
    }
    const int64_t T = batch.size();
    const int64_t n_out = static_cast<int64_t>(batch.logit_rows.size());
    int64_t entries = 0;
    for (const auto& t : batch.block_tables) entries += static_cast<int64_t>(t.size());
    Reserve(T, n_out, static_cast<int64_t>(batch.block_tables.size()), entries,
            static_cast<int64_t>(batch.penalty_entries.size()));
    if (kv[0].k != ws_.kv_identity) {
      ws_.kv_identity = kv[0].k;
      ++ws_.generation;
    }
    Backend& be = *backend_;

    UploadBatch(batch);
    // Batches where every sequence has one token (decode steps) have no runs of positions, which
    // lets the attention skip its prefill kernels and take the RoPE + K/V store into its decode
    // kernel.
    const bool may_have_runs = !batch.OneTokenPerSequence();
    AttentionBatch ab{T, ws_.pos, ws_.seq, ws_.table_ptrs, ws_.table_lens, may_have_runs};
    // The context hint for batches of up to 8 tokens, in steps of 128 positions up to 1,024 (0
    // past that, and for larger batches, which would only recapture graphs for nothing): small
    // decode batches pick their attention kernel by it, and the graph key holds it (bits 32-35).
    int32_t max_pos = 0;
    for (const int32_t p : batch.pos) max_pos = std::max(max_pos, p);
    const int32_t ctx_bucket = T <= 8 && max_pos < 1024 ? max_pos / 128 + 1 : 0;
    ab.max_context = ctx_bucket * 128;

    const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    // Exact key: tag (bits 0-1, 22-28: the top_k of a sampling pass, 36: penalties, 37: draws
    // beside the top-k, 38: logprob stats), T and n_out
    // (10 bits each), token feedback (bit 29), may_have_runs (bit 30), every row a logit row in
    // order (bit 31), the context bucket (bits 32-35), generation.
    const bool fed_back = batch.feedback_rows > 0;
    // Every row is a logit row, in order (decode steps): the last residual add, the gather and
    // the output norm are one AddRmsNorm.
    bool all_rows_out = n_out == T;
    for (int64_t i = 0; all_rows_out && i < n_out; ++i) all_rows_out = batch.logit_rows[static_cast<size_t>(i)] == i;
    if (T <= kMaxGraphTokens) {
      be.BeginGraph(graph_tag | static_cast<uint64_t>(T) << 2 | static_cast<uint64_t>(n_out) << 12 |
                    static_cast<uint64_t>(fed_back) << 29 | static_cast<uint64_t>(may_have_runs) << 30 |
                    static_cast<uint64_t>(all_rows_out) << 31 | static_cast<uint64_t>(ctx_bucket) << 32 |
                    ws_.generation << 39);
    }
    if (fed_back) be.ResolveFedBackIds(ws_.tokens, T, ws_.argmax);
    be.GetRows(tok_embd_, ws_.tokens, T, ws_.x);
    // h = rms_norm(x) * attn_norm of layer 0 here; of later layers fused into the previous
    // layer's last residual add (AddRmsNorm: x += ffn_out, then the norm). Each norm and the
    // SwiGLU (and attention) announce the matmul that reads their output (PrepareMatMulInput).
    if (c.n_layer > 0) {
      be.PrepareMatMulInput(layers_[0].wq);
      be.RmsNorm(ws_.x, layers_[0].attn_norm, c.rms_eps, T, c.n_embd, ws_.h);
    }
    for (int32_t il = 0; il < c.n_layer; ++il) {
      const LayerWeights& l = layers_[static_cast<size_t>(il)];
      const KvLayerView& cache = kv[static_cast<size_t>(il)];
      const TensorView qkv[] = {l.wq, l.wk, l.wv};
      float* const qkv_out[] = {ws_.q, ws_.k, ws_.v};
      be.MatMulShared(qkv, ws_.h, T, qkv_out);
      be.RopeStoreKv(cache, ab, ws_.q, c.n_head, ws_.k, ws_.v, ws_.pos, inv_freq_, c.n_rot);
      be.PrepareMatMulInput(l.wo);
      be.PagedAttention(cache, ab, ws_.q, c.n_head, scale, ws_.attn);
      be.MatMul(l.wo, ws_.attn, T, ws_.h);
      be.PrepareMatMulInput(l.w_gate);
      be.AddRmsNorm(ws_.x, ws_.h, l.ffn_norm, c.rms_eps, T, c.n_embd, ws_.h);
      be.PrepareMatMulInput(l.w_down);
      be.MatMulSwiGlu(l.w_gate, l.w_up, ws_.h, T, ws_.gate, ws_.up);
      be.MatMul(l.w_down, ws_.gate, T, ws_.h);
      if (il + 1 < c.n_layer) {
        be.PrepareMatMulInput(layers_[static_cast<size_t>(il) + 1].wq);
        be.AddRmsNorm(ws_.x, ws_.h, layers_[static_cast<size_t>(il) + 1].attn_norm, c.rms_eps, T, c.n_embd, ws_.h);
      } else if (all_rows_out && n_out > 0) {
        if (graph_tag != 2) be.PrepareMatMulInput(output_);  // the logits matmul comes next (not for Embed)
        be.AddRmsNorm(ws_.x, ws_.h, output_norm_, c.rms_eps, T, c.n_embd, ws_.rows_normed);
        return static_cast<const float*>(ws_.rows_normed);
      } else {
        be.Add(ws_.x, ws_.h, T * c.n_embd);
      }
    }
    if (n_out == 0) return static_cast<const float*>(ws_.rows);
    be.GatherRows(ws_.x, ws_.logit_rows, n_out, c.n_embd, ws_.rows);
    be.RmsNorm(ws_.rows, output_norm_, c.rms_eps, n_out, c.n_embd, ws_.rows_normed);
    return static_cast<const float*>(ws_.rows_normed);
  }

  TensorView tok_embd_;                 // [n_vocab, n_embd]
  TensorView output_;                   // [n_vocab, n_embd] (== tok_embd_ when tied)
  const float* output_norm_ = nullptr;  // [n_embd]
  float* inv_freq_ = nullptr;           // [n_rot / 2]
  std::vector<LayerWeights> layers_;
  std::vector<void*> owned_;
  Workspace ws_;
  int64_t argmax_rows_ = 0;  // ids the last logits pass left in ws_.argmax (0: not an argmax pass)
  struct Queued {
    std::vector<int32_t> ids;  // host; written by the queued copy
    uint64_t ticket = 0;
  };
  Queued queued_[kMaxQueued];  // a ring: n_queued_ passes from first_queued_
  int first_queued_ = 0, n_queued_ = 0;
};

Result<std::unique_ptr<Model>> CreateLlama(const GgufFile& file, Backend* backend) {
  HERD_ASSIGN_OR_RETURN(ModelConfig config, ReadLlamaLikeConfig(file, "llama"));
  auto model = std::make_unique<LlamaModel>(std::move(config), backend);
  HERD_RETURN_IF_ERROR(model->Load(file));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace

void RegisterLlamaArchitecture() { RegisterArchitecture("llama", CreateLlama); }

}  // namespace herd
