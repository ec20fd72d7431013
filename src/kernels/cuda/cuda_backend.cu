// CudaBackend (cuda_backend.h): device memory, one stream, the ops of kernels/backend.h.
//
// Graphs (BeginGraph/EndGraph, see backend.h): the first pass of a key runs eagerly (lazily grown
// scratch buffers reach their size), the second is captured into a CUDA graph and launched, later
// ones launch the graph and skip the op calls: one launch per forward pass instead of hundreds.
// HERD_CUDA_GRAPHS=0 turns them off.
//
// Host-to-device copies go through a pinned staging arena: CopyToDevice memcpys the source into
// it and queues the DMA, so the caller's buffer may die as soon as the call returns and the copy
// stays ordered with the ops, without waiting for the GPU. The arena is recycled at
// Synchronize() (all copies done); it is bounded: past kStagingLimit bytes between
// synchronisations the backend synchronises by itself.
// Device-to-host copies of kPinnedD2hMin..kPinnedD2hMax bytes (a decode step's logits) land in a
// pinned buffer in up to kD2hChunks pieces, each copied out while the next one is in flight
// (a pageable destination would make the driver stage the copy itself, more slowly);
// HERD_CUDA_PINNED_D2H=0 copies straight into the destination. QueueCopyToHost (a pipelined
// decode step's token ids) lands in one of kMaxQueuedCopies pinned slots behind an event and is
// copied out when waited for, so the host can queue the next pass before this one is done.
// Fused ops (AddRmsNorm, RopeStoreKv) run as one kernel each; RopeStoreKv is held until the next
// op, and a PagedAttention right after it on a decode batch takes it into its decode kernel
// (attention_cuda.h). A norm or SwiGLU announced by PrepareMatMulInput also writes the int8 input
// of the quantized GEMV after it (MatMulRunner::FusedRmsNorm / FusedSwiGlu); HERD_CUDA_FUSE=0 runs
// the unfused ops instead, HERD_CUDA_FUSE_INPUT=0 only ignores the hints (A/B runs).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/log.h"
#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/cuda/argmax_cuda.h"
#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/dequantize_cuda.h"
#include "kernels/cuda/diag_skip.h"
#include "kernels/cuda/matmul_cuda.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/topk_cuda.h"
#include "kernels/cuda/weight_store.h"

namespace herd::cuda {
namespace {

constexpr size_t kStagingLimit = size_t{256} << 20;  // pinned bytes queued between synchronisations
constexpr size_t kStagingChunk = size_t{4} << 20;    // first arena chunk
constexpr size_t kDirectCopy = size_t{64} << 20;     // larger host copies: direct, then wait
constexpr size_t kPinnedD2hMin = size_t{64} << 10;   // smaller device-to-host copies: direct
constexpr size_t kPinnedD2hMax = size_t{16} << 20;   // larger ones: direct (bulk, not latency)
constexpr int kD2hChunks = 4;

bool EnvOn(const char* name, bool unset = true) {
  const char* e = std::getenv(name);
  return e == nullptr ? unset : std::strcmp(e, "0") != 0;
}

size_t RoundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, int num_sms, cudaStream_t stream)
      : device_(device), num_sms_(num_sms), stream_(stream), matmul_(std::make_unique<MatMulRunner>(stream)) {}

  ~CudaBackend() override {
    Bind();
    cudaStreamSynchronize(stream_);
    for (auto& [key, g] : graphs_) {
      if (g.exec != nullptr) cudaGraphExecDestroy(g.exec);
    }
    matmul_.reset();
    scratch_.reset();
    weights_.FreeAll();
    for (Chunk& c : staging_) cudaFreeHost(c.data);
    if (d2h_ != nullptr) cudaFreeHost(d2h_);
    for (cudaEvent_t e : d2h_events_) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    for (QueuedCopy& q : queued_) {
      if (q.pinned != nullptr) cudaFreeHost(q.pinned);
      if (q.done != nullptr) cudaEventDestroy(q.done);
    }
    cudaStreamDestroy(stream_);
  }

  const char* name() const override { return "cuda"; }

  // --- memory ---
  void* Alloc(size_t bytes) override {
    NotInGraph();
    Bind();
    const size_t rounded = RoundUp(bytes == 0 ? 1 : bytes, 64);
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, rounded);  // 256-byte aligned
    if (err != cudaSuccess) {
      cudaGetLastError();
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      HERD_CHECK_MSG(false, "out of GPU memory allocating %zu bytes (%zu of %zu free): %s", bytes, free_b, total_b,
                     cudaGetErrorString(err));
    }
    HERD_CUDA_CHECK(cudaMemsetAsync(p, 0, rounded, stream_));  // ordered before every later op
    return p;
  }

  void Free(void* ptr) override {
    NotInGraph();
    if (ptr == nullptr) return;
    Bind();
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));  // queued ops may still use it
    HERD_CUDA_CHECK(cudaFree(ptr));
  }

  void CopyToDevice(void* dst, const void* src, size_t bytes) override {
    NotInGraph();
    ForgetFusion();  // the copy may overwrite a prepared matmul input
    if (bytes == 0) return;
    Bind();
    if (bytes > kDirectCopy) {
      HERD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
      HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
      return;
    }
    void* staged = Stage(bytes);
    std::memcpy(staged, src, bytes);
    HERD_CUDA_CHECK(cudaMemcpyAsync(dst, staged, bytes, cudaMemcpyHostToDevice, stream_));
  }

  void CopyToHost(void* dst, const void* src, size_t bytes) override {
    NotInGraph();
    if (bytes == 0) return;
    Bind();
    // Ordered after every queued op, so it is also correct without a prior Synchronize().
    if (pinned_d2h_ && bytes >= kPinnedD2hMin && bytes <= kPinnedD2hMax) return CopyToHostPinned(dst, src, bytes);
    HERD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void CopyOnDevice(void* dst, const void* src, size_t bytes) override {
    NotInGraph();
    ForgetFusion();  // the copy may overwrite a prepared matmul input
    if (bytes == 0) return;
    Bind();
    HERD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }

  // Into the next of kMaxQueuedCopies pinned slots, with an event; the wait copies it out.
  uint64_t QueueCopyToHost(void* dst, const void* src, size_t bytes) override {
    NotInGraph();
    Bind();
    HERD_CHECK_MSG(queued_issued_ - queued_waited_ < kMaxQueuedCopies, "more than %d queued copies to the host",
                   kMaxQueuedCopies);
    QueuedCopy& q = queued_[queued_issued_ % kMaxQueuedCopies];
    if (bytes > q.capacity) {
      if (q.pinned != nullptr) HERD_CUDA_CHECK(cudaFreeHost(q.pinned));
      q.capacity = std::max<size_t>(RoundUp(bytes, 4096), 4096);
      HERD_CUDA_CHECK(cudaMallocHost(&q.pinned, q.capacity));
    }
    if (q.done == nullptr) HERD_CUDA_CHECK(cudaEventCreateWithFlags(&q.done, cudaEventDisableTiming));
    if (bytes > 0) HERD_CUDA_CHECK(cudaMemcpyAsync(q.pinned, src, bytes, cudaMemcpyDeviceToHost, stream_));
    HERD_CUDA_CHECK(cudaEventRecord(q.done, stream_));
    q.dst = dst;
    q.bytes = bytes;
    return queued_issued_++;
  }
  void WaitCopyToHost(uint64_t ticket) override {
    HERD_CHECK_MSG(ticket == queued_waited_ && ticket < queued_issued_, "queued copy %llu waited out of order",
                   static_cast<unsigned long long>(ticket));
    QueuedCopy& q = queued_[ticket % kMaxQueuedCopies];
    Bind();
    HERD_CUDA_CHECK(cudaEventSynchronize(q.done));
    if (q.bytes > 0) std::memcpy(q.dst, q.pinned, q.bytes);
    ++queued_waited_;
  }

  void Synchronize() override {
    NotInGraph();
    Bind();
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    RecycleStaging();
  }

  TensorView PrepareWeight(const TensorView& host) override {
    Bind();
    return weights_.Upload(host);
  }

  bool DeviceMemory(size_t* free_bytes, size_t* total_bytes) const override {
    Bind();
    HERD_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
    return true;
  }

  // --- graphs ---
  void BeginGraph(uint64_t key) override {
    HERD_CHECK_MSG(!capturing_ && !replaying_, "nested BeginGraph");
    if (!graphs_enabled_) return;
    Bind();
    Graph& g = graphs_[key];
    current_ = &g;
    if (g.exec != nullptr) {
      replaying_ = true;
    } else if (g.seen) {
      HERD_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      capturing_ = true;
    } else {
      g.seen = true;  // the eager first pass
    }
  }
  void EndGraph() override {
    FlushRope();
    if (!graphs_enabled_ || current_ == nullptr) return;
    Bind();
    Graph& g = *current_;
    current_ = nullptr;
    if (capturing_) {
      capturing_ = false;
      cudaGraph_t graph = nullptr;
      HERD_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
      HERD_CUDA_CHECK(cudaGraphInstantiate(&g.exec, graph, 0));
      HERD_CUDA_CHECK(cudaGraphDestroy(graph));
    } else if (!replaying_) {
      return;
    }
    replaying_ = false;
    HERD_CUDA_CHECK(cudaGraphLaunch(g.exec, stream_));
  }

  // --- hints ---
  void PrepareMatMulInput(const TensorView& w) override {
    if (fuse_inputs_) next_matmul_ = w;
  }

  // --- ops ---
  void GetRows(const TensorView& table, const int32_t* ids, int64_t n, float* out) override {
    if (!BeginOp()) return;
    cuda::GetRows(table, ids, n, out, stream_);
  }
  void RmsNorm(const float* x, const float* w, float eps, int64_t rows, int64_t cols, float* out) override {
    const std::optional<TensorView> next = std::exchange(next_matmul_, std::nullopt);
    if (!BeginOp()) return;
    if (next && next->cols() == cols &&
        matmul_->FusedRmsNorm(next->type, const_cast<float*>(x), nullptr, w, eps, rows, cols, out)) {
      return;
    }
    cuda::RmsNorm(x, w, eps, rows, cols, out, stream_);
  }
  void MatMul(const TensorView& w, const float* x, int64_t n_tok, float* y) override {
    DIAG_SKIP(w.rows() > 100000 ? "head" : w.cols() > w.rows() ? "down" : "o", n_tok);
    if (!BeginOp(/*matmul=*/true)) return;
    matmul_->MatMul(w, x, n_tok, y);
  }
  void MatMulShared(std::span<const TensorView> ws, const float* x, int64_t n_tok,
                    std::span<float* const> ys) override {
    DIAG_SKIP(ws.size() == 2 ? "glu" : "qkv", n_tok);  // gate/up of quantized models come through here
    if (!BeginOp(/*matmul=*/true)) return;
#ifdef HERD_DIAG_SKIP_OPS
    const size_t keep = ws.size() == 3 ? DiagSharedKeep(ws.size(), n_tok) : ws.size();  // Q/K/V only
    ws = ws.first(keep), ys = ys.first(keep);
#endif
    matmul_->MatMulShared(ws, x, n_tok, ys);
  }
  void MatMulSwiGlu(const TensorView& gate, const TensorView& up, const float* x, int64_t n_tok, float* gate_out,
                    float* up_out) override {
    DIAG_SKIP("glu", n_tok);
    const std::optional<TensorView> next = std::exchange(next_matmul_, std::nullopt);
    if (replaying_) return;
    if (fuse_inputs_) {
      if (!BeginOp(/*matmul=*/true)) return;
      if (matmul_->MatMulSwiGlu(gate, up, x, n_tok, gate_out, next ? &*next : nullptr)) return;
    }
    const TensorView ws[] = {gate, up};
    float* const ys[] = {gate_out, up_out};
    MatMulShared(ws, x, n_tok, ys);
    next_matmul_ = next;  // the hint is for the SwiGLU
    SwiGlu(gate_out, up_out, gate_out, n_tok * gate.rows());
  }
  void Rope(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* pos, const float* inv_freq,
            int32_t n_rot) override {
    if (!BeginOp()) return;
    cuda::Rope(x, n_tok, n_heads, head_dim, pos, inv_freq, n_rot, stream_);
  }
  void SwiGlu(const float* gate, const float* up, float* out, int64_t n) override {
    const std::optional<TensorView> next = std::exchange(next_matmul_, std::nullopt);
    if (!BeginOp()) return;
    if (next && next->cols() > 0 && n % next->cols() == 0 &&
        matmul_->FusedSwiGlu(next->type, gate, up, out, n / next->cols(), next->cols())) {
      return;
    }
    cuda::SwiGlu(gate, up, out, n, stream_);
  }
  void Add(float* x, const float* y, int64_t n) override {
    if (!BeginOp()) return;
    cuda::Add(x, y, n, stream_);
  }
  void StoreKv(const KvLayerView& cache, const AttentionBatch& batch, const float* k, const float* v) override {
    if (!BeginOp()) return;
    cuda::StoreKv(cache, batch, k, v, stream_);
  }
  void PagedAttention(const KvLayerView& cache, const AttentionBatch& batch, const float* q, int32_t n_heads,
                      float scale, float* out) override {
    DIAG_SKIP("attn", batch.n_tokens);
    const std::optional<TensorView> next = std::exchange(next_matmul_, std::nullopt);
    // The RoPE + K/V store deferred right before, for this attention (same cache, batch and q).
    std::optional<PendingRope> rope = std::exchange(pending_rope_, std::nullopt);
    if (rope && !(rope->args.q == q && rope->n_heads == n_heads && rope->cache.k == cache.k &&
                  rope->batch.n_tokens == batch.n_tokens && rope->batch.pos == batch.pos)) {
      LaunchRope(*rope);
      rope.reset();
    }
    if (!BeginOp()) return;
    const cuda::RopeStoreArgs* const ra = rope ? &rope->args : nullptr;
    const int64_t n_in = static_cast<int64_t>(n_heads) * cache.head_dim;
    if (next && next->cols() == n_in && attn_quant_out_ &&
        matmul_->FusedInt8Input(next->type, out, batch.n_tokens, n_in,
                                [&](DType format, void* buffer, internal::QuantizedActivations* activations) {
                                  return cuda::PagedAttentionQuantized(cache, batch, q, n_heads, scale, out, num_sms_,
                                                                       scratch_.get(), format, buffer, stream_,
                                                                       activations, ra);
                                })) {
      return;
    }
    cuda::PagedAttention(cache, batch, q, n_heads, scale, out, num_sms_, scratch_.get(), stream_, ra);
  }
  void ResolveFedBackIds(int32_t* ids, int64_t n, const int32_t* prev) override {
    if (!BeginOp()) return;
    cuda::ResolveFedBackIds(ids, n, prev, stream_);
  }
  void ArgMaxRows(const float* x, int64_t n_rows, int64_t n_cols, int32_t* ids) override {
    if (!BeginOp()) return;
    cuda::ArgMaxRows(x, n_rows, n_cols, ids, stream_);
  }
  void TopKRows(const float* x, int64_t n_rows, int64_t n_cols, int32_t k, int32_t* ids, float* vals) override {
    if (!BeginOp()) return;
    cuda::TopKRows(x, n_rows, n_cols, k, ids, vals, stream_);
  }
  void GatherRows(const float* x, const int32_t* rows, int64_t n, int64_t n_cols, float* out) override {
    if (!BeginOp()) return;
    cuda::GatherRows(x, rows, n, n_cols, out, stream_);
  }
  void AddRmsNorm(float* x, const float* y, const float* weight, float eps, int64_t n_rows, int64_t n_cols,
                  float* out) override {
    DIAG_SKIP("norm", n_rows);
    const std::optional<TensorView> next = std::exchange(next_matmul_, std::nullopt);
    if (replaying_) return;
    if (!fuse_) return Backend::AddRmsNorm(x, y, weight, eps, n_rows, n_cols, out);
    if (!BeginOp()) return;
    if (next && next->cols() == n_cols && matmul_->FusedRmsNorm(next->type, x, y, weight, eps, n_rows, n_cols, out)) {
      return;
    }
    cuda::AddRmsNorm(x, y, weight, eps, n_rows, n_cols, out, stream_);
  }
  // Deferred to the next op: PagedAttention takes it (into its decode kernel where it can), any
  // other op or memory operation launches it first (FlushRope).
  void RopeStoreKv(const KvLayerView& cache, const AttentionBatch& batch, float* q, int32_t n_heads, float* k,
                   const float* v, const int32_t* positions, const float* inv_freq, int32_t n_rot) override {
    DIAG_SKIP("rope", batch.n_tokens);
    if (replaying_) return;
    if (!fuse_) return Backend::RopeStoreKv(cache, batch, q, n_heads, k, v, positions, inv_freq, n_rot);
    if (!BeginOp()) return;
    pending_rope_ = PendingRope{cache, batch, n_heads, {q, k, v, positions, inv_freq, n_rot}};
  }

 private:
  // Every op starts here: false while a graph replays (the op is in the graph). A hint applies
  // only to the op right after it, and a fused matmul input only to the matmul right after its
  // producer: any other op forgets them.
  bool BeginOp(bool matmul = false) {
    next_matmul_.reset();
    FlushRope();
    if (replaying_) return false;
    Bind();
    if (!matmul) matmul_->DropPreparedInput();
    return true;
  }
  void ForgetFusion() {
    next_matmul_.reset();
    matmul_->DropPreparedInput();
  }

  // A RopeStoreKv not yet launched (RopeStoreKv above).
  struct PendingRope {
    KvLayerView cache;
    AttentionBatch batch;
    int32_t n_heads;
    cuda::RopeStoreArgs args;
  };
  void LaunchRope(const PendingRope& r) {
    Bind();
    cuda::RopeStoreKv(r.cache, r.batch, r.args.q, r.n_heads, r.args.k, r.args.v, r.args.positions, r.args.inv_freq,
                      r.args.n_rot, stream_);
  }
  void FlushRope() {
    if (pending_rope_) LaunchRope(*std::exchange(pending_rope_, std::nullopt));
  }

  struct Graph {
    bool seen = false;  // ran eagerly once
    cudaGraphExec_t exec = nullptr;
  };

  struct Chunk {
    void* data = nullptr;
    size_t capacity = 0;
    size_t used = 0;
  };

  void NotInGraph() {
    HERD_CHECK_MSG(!capturing_ && !replaying_, "memory operation between BeginGraph and EndGraph");
    FlushRope();
  }

  // Makes this backend's GPU current on the calling thread (several backends may share a process).
  void Bind() const {
    int current = -1;
    HERD_CUDA_CHECK(cudaGetDevice(&current));
    if (current != device_) HERD_CUDA_CHECK(cudaSetDevice(device_));
  }

  // CopyToHost through the pinned buffer d2h_: chunk i's DMA is queued with all the others, then
  // each chunk is copied out as soon as its event completes.
  void CopyToHostPinned(void* dst, const void* src, size_t bytes) {
    if (bytes > d2h_bytes_) {
      if (d2h_ != nullptr) HERD_CUDA_CHECK(cudaFreeHost(d2h_));
      HERD_CUDA_CHECK(cudaMallocHost(&d2h_, bytes));
      d2h_bytes_ = bytes;
    }
    if (d2h_events_[0] == nullptr) {
      for (cudaEvent_t& e : d2h_events_) HERD_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    const size_t chunk = RoundUp((bytes + kD2hChunks - 1) / kD2hChunks, 4096);
    int n = 0;
    for (size_t off = 0; off < bytes; off += chunk, ++n) {
      HERD_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t*>(d2h_) + off, static_cast<const uint8_t*>(src) + off,
                                      std::min(chunk, bytes - off), cudaMemcpyDeviceToHost, stream_));
      HERD_CUDA_CHECK(cudaEventRecord(d2h_events_[n], stream_));
    }
    n = 0;
    for (size_t off = 0; off < bytes; off += chunk, ++n) {
      HERD_CUDA_CHECK(cudaEventSynchronize(d2h_events_[n]));
      std::memcpy(static_cast<uint8_t*>(dst) + off, static_cast<const uint8_t*>(d2h_) + off,
                  std::min(chunk, bytes - off));
    }
  }

  // Pinned host space for `bytes` that stays untouched until the next RecycleStaging().
  void* Stage(size_t bytes) {
    if (staged_bytes_ + bytes > kStagingLimit) Synchronize();
    const size_t need = RoundUp(bytes, 64);
    if (staging_.empty() || staging_.back().used + need > staging_.back().capacity) {
      const size_t cap = std::max(need, staging_.empty() ? kStagingChunk : 2 * staging_.back().capacity);
      Chunk c;
      HERD_CUDA_CHECK(cudaMallocHost(&c.data, cap));
      c.capacity = cap;
      staging_.push_back(c);
    }
    Chunk& c = staging_.back();
    void* p = static_cast<uint8_t*>(c.data) + c.used;
    c.used += need;
    staged_bytes_ += need;
    return p;
  }

  // After a stream synchronisation: every staged copy is done. Several chunks are merged into one
  // of their total size, so the steady state is one chunk and no allocation.
  void RecycleStaging() {
    if (staging_.size() > 1) {
      size_t total = 0;
      for (Chunk& c : staging_) {
        total += c.capacity;
        HERD_CUDA_CHECK(cudaFreeHost(c.data));
      }
      staging_.clear();
      Chunk c;
      HERD_CUDA_CHECK(cudaMallocHost(&c.data, std::min(total, kStagingLimit)));
      c.capacity = std::min(total, kStagingLimit);
      staging_.push_back(c);
    }
    for (Chunk& c : staging_) c.used = 0;
    staged_bytes_ = 0;
  }

  const int device_;
  const int num_sms_;
  cudaStream_t stream_;
  std::unique_ptr<MatMulRunner> matmul_;
  std::optional<TensorView> next_matmul_;  // PrepareMatMulInput's weight, for the next op
  std::optional<PendingRope> pending_rope_;
  std::unique_ptr<AttentionScratch> scratch_ = std::make_unique<AttentionScratch>();
  WeightStore weights_{stream_};
  std::vector<Chunk> staging_;
  size_t staged_bytes_ = 0;
  const bool graphs_enabled_ = EnvOn("HERD_CUDA_GRAPHS");
  const bool fuse_ = EnvOn("HERD_CUDA_FUSE");
  const bool fuse_inputs_ = fuse_ && EnvOn("HERD_CUDA_FUSE_INPUT");
  const bool pinned_d2h_ = EnvOn("HERD_CUDA_PINNED_D2H");
  // Attention writes the O projection's int8 GEMV input in its split merge
  // (PagedAttentionQuantized); HERD_CUDA_ATTN_QUANT_OUT=0: merge, then quantize.
  const bool attn_quant_out_ = fuse_inputs_ && EnvOn("HERD_CUDA_ATTN_QUANT_OUT");
  void* d2h_ = nullptr;  // pinned, d2h_bytes_
  size_t d2h_bytes_ = 0;
  cudaEvent_t d2h_events_[kD2hChunks] = {};
  struct QueuedCopy {
    void* pinned = nullptr;  // capacity bytes
    size_t capacity = 0;
    cudaEvent_t done = nullptr;
    void* dst = nullptr;
    size_t bytes = 0;
  };
  QueuedCopy queued_[kMaxQueuedCopies];
  uint64_t queued_issued_ = 0, queued_waited_ = 0;
  std::unordered_map<uint64_t, Graph> graphs_;
  Graph* current_ = nullptr;  // between BeginGraph and EndGraph
  bool capturing_ = false;
  bool replaying_ = false;
};

}  // namespace

Result<std::unique_ptr<Backend>> MakeCudaBackend(int device_index) {
  std::string why;
  if (!DeviceAvailable(&why)) return NotFound(why);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  if (device_index < 0 || device_index >= count) {
    return InvalidArgument("cuda:" + std::to_string(device_index) + ": this machine has " + std::to_string(count) +
                           " CUDA device(s)");
  }
  cudaError_t err = cudaSetDevice(device_index);
  cudaDeviceProp prop{};
  if (err == cudaSuccess) err = cudaGetDeviceProperties(&prop, device_index);
  if (err == cudaSuccess) err = ProbeKernels();  // is there code for this GPU in the binary?
  cudaStream_t stream = nullptr;
  if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return Internal("cuda:" + std::to_string(device_index) +
                    (prop.name[0] != 0 ? " (" + std::string(prop.name) + ")" : "") + ": " + cudaGetErrorString(err) +
                    (err == cudaErrorNoKernelImageForDevice ? " (herd's CUDA code targets compute capability 9.0+; set "
                                                              "HERD_CUDA_ARCHS for this GPU)"
                                                            : ""));
  }
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(device_index, prop.multiProcessorCount, stream));
}

}  // namespace herd::cuda
