// The compute backend boundary. Model code calls these ops; it never calls SIMD or CUDA
// directly. A backend owns where tensors live (host for CPU, device memory for CUDA) and
// how ops run. Implementations: ReferenceBackend (scalar oracle, single thread) and
// CpuBackend (SIMD + thread pool) in kernels/cpu_backend.cc; CudaBackend in kernels/cuda/.
//
// Memory contract: every float*/void* passed to an op points into memory from this
// backend's Alloc() (or, for weights, a view returned by PrepareWeight()). Ops may run
// asynchronously; Synchronize() waits for all queued work and is the only point at which
// results are visible to the host via CopyToHost().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "kernels/attention.h"
#include "kernels/draw.h"
#include "kernels/ops.h"
#include "tensor/tensor.h"

namespace herd {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // --- memory ---
  virtual void* Alloc(size_t bytes) = 0;  // 64-byte aligned, zero-initialised
  virtual void Free(void* ptr) = 0;
  virtual void CopyToDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual void CopyToHost(void* dst, const void* src, size_t bytes) = 0;
  // Device-to-device copy; dst and src are in this backend's memory and must not overlap.
  // Ordered with the ops like them (queued on a device backend).
  virtual void CopyOnDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual void Synchronize() = 0;
  // A device-to-host copy that does not wait: queued after every op so far, it lands in dst
  // (host memory that must stay valid) when WaitCopyToHost(ticket) returns. Tickets are
  // waited for in the order they were issued; at most kMaxQueuedCopies are outstanding.
  // Default (host backends): copies at once; the wait does nothing.
  static constexpr int kMaxQueuedCopies = 4;
  virtual uint64_t QueueCopyToHost(void* dst, const void* src, size_t bytes) {
    CopyToHost(dst, src, bytes);
    return 0;
  }
  virtual void WaitCopyToHost(uint64_t ticket) { (void)ticket; }
  // Makes a weight usable by this backend. CPU: returns the same view (weights stay in the
  // file mapping, never copied). CUDA: uploads once and returns a device view.
  // A view with data == nullptr (for a non-empty weight) means the device is out of memory.
  virtual TensorView PrepareWeight(const TensorView& host_weight) = 0;
  // PrepareWeight for weights a matmul reads together (Q/K/V: one input, one launch), in order:
  // a device backend may place them back to back in one allocation and then run them as one
  // matrix. out[i] is the view of hosts[i] (data == nullptr: out of memory). Default:
  // PrepareWeight each.
  virtual void PrepareWeightGroup(std::span<const TensorView> hosts, std::span<TensorView> out) {
    for (size_t i = 0; i < hosts.size(); ++i) out[i] = PrepareWeight(hosts[i]);
  }
  // Device memory (free and total bytes) of a GPU backend, for memory budgets; false on host
  // backends (their budget is host memory).
  virtual bool DeviceMemory(size_t* free_bytes, size_t* total_bytes) const {
    (void)free_bytes;
    (void)total_bytes;
    return false;
  }

  // Whether this backend's attention runs over a KV cache of `type` with `head_dim` (checked when
  // a cache is created, so a model that cannot run is refused before it serves). OK on host
  // backends; a GPU backend declines shapes whose kernels exceed its shared memory.
  virtual Status CheckKvCache(DType type, int32_t head_dim) const {
    (void)type;
    (void)head_dim;
    return Status::Ok();
  }

  // --- graphs (device backends; the host backends run every op as called) ---
  // Ops queued between BeginGraph(key) and EndGraph() may be recorded once per key and replayed
  // on later calls with the same key, in which case the op calls in between are skipped. The
  // caller guarantees that the sequence of ops and every pointer and size they are given depend
  // only on `key`; data that changes from call to call must be uploaded (CopyToDevice) before
  // BeginGraph, into buffers whose addresses the key covers. No Alloc, Free, copy or
  // Synchronize between the two calls.
  virtual void BeginGraph(uint64_t key) { (void)key; }
  virtual void EndGraph() {}

  // --- ops (shapes as documented in kernels/ops.h, attention.h, matmul.h) ---
  virtual void GetRows(const TensorView& table, const int32_t* ids, int64_t n, float* out) = 0;
  // Token feedback (pipelined decoding, ForwardBatch::feedback_rows): every entry t < 0 of
  // ids[0, n) becomes prev[-t - 1] (an id the previous pass's ArgMaxRows wrote; a -1 there, a
  // row without a number, becomes 0 so the lookup stays in range). ids, prev: this backend's
  // memory. Default: a host loop (host backends).
  virtual void ResolveFedBackIds(int32_t* ids, int64_t n, const int32_t* prev);
  virtual void RmsNorm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t n_cols, float* out) = 0;
  // y: [n_tok, w.rows] = x: [n_tok, w.cols] · wᵀ
  virtual void MatMul(const TensorView& w, const float* x, int64_t n_tok, float* y) = 0;
  // ys[i]: [n_tok, ws[i].rows] = x · ws[i]ᵀ for several weights sharing one input (Q/K/V,
  // gate/up). Backends may convert x once for all of them. Default: one MatMul each.
  virtual void MatMulShared(std::span<const TensorView> ws, const float* x, int64_t n_tok, std::span<float* const> ys) {
    for (size_t i = 0; i < ws.size(); ++i) MatMul(ws[i], x, n_tok, ys[i]);
  }
  virtual void Rope(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* positions,
                    const float* inv_freq, int32_t n_rot) = 0;
  virtual void SwiGlu(const float* gate, const float* up, float* out, int64_t n) = 0;
  virtual void Add(float* x, const float* y, int64_t n) = 0;
  virtual void StoreKv(const KvLayerView& cache, const AttentionBatch& batch, const float* k, const float* v) = 0;
  virtual void PagedAttention(const KvLayerView& cache, const AttentionBatch& batch, const float* q, int32_t n_heads,
                              float scale, float* out) = 0;
  // Copies rows: out[i, :] = x[rows[i], :] for i < n; x, out: [*, n_cols] float.
  virtual void GatherRows(const float* x, const int32_t* rows, int64_t n, int64_t n_cols, float* out) = 0;
  // ids[r] = the first index of the largest value of row r of x: [n_rows, n_cols] (NaNs never
  // win; -1 for a row without a number); ids in this backend's memory. Greedy decoding on the
  // device: only the ids travel back. Default: a host loop (host backends).
  virtual void ArgMaxRows(const float* x, int64_t n_rows, int64_t n_cols, int32_t* ids);
  // The k most likely entries of each row of x: [n_rows, n_cols] (higher value first, the lower
  // index on ties; NaN and -inf never taken): ids, vals: [n_rows, k] in this backend's memory,
  // slots past a row's count of such entries get id -1. 1 <= k <= kMaxTopK. Sampling on the
  // device: only k candidates per row travel back. Default: a host loop (host backends).
  static constexpr int32_t kMaxTopK = 64;
  virtual void TopKRows(const float* x, int64_t n_rows, int64_t n_cols, int32_t k, int32_t* ids, float* vals);
  // ids[r] = the token drawn from row r of x: [n_rows, n_cols] by draws[r] (kernels/draw.h:
  // temperature 0 = ArgMaxRows' id; -1 for a row without a number). draws, ids: this backend's
  // memory. Sampling on the device without top-k: only the ids travel back. Default: a host
  // loop over ref::DrawRow (host backends); every backend gives the same ids.
  virtual void DrawRows(const float* x, int64_t n_rows, int64_t n_cols, const RowDraw* draws, int32_t* ids);
  // Row r of x: [n_rows, n_cols] adjusted in place by penalties[r] over entries (kernels/draw.h;
  // the Sampler's logit bias and repetition penalties, before TopKRows / DrawRows / ArgMaxRows). All in this
  // backend's memory. Default: a host loop over ref::PenalizeRow.
  virtual void PenalizeRows(float* x, int64_t n_rows, int64_t n_cols, const RowPenalty* penalties,
                            const PenaltyEntry* entries);
  // stats[r] = ref::LogprobStatsOfRow(row r of x, n_cols, ids[r]) (logprobs without the row on the
  // host). All in this backend's memory. Default: a host loop.
  virtual void LogprobStatsRows(const float* x, int64_t n_rows, int64_t n_cols, const int32_t* ids,
                                RowLogprobStats* stats);

  // --- hints ---
  // Declares that the op called next (RmsNorm, AddRmsNorm, SwiGlu or PagedAttention) computes
  // the input x of the MatMul / MatMulShared called right after it, with weight w (the first of
  // MatMulShared's weights), no other op in between. A device backend may then have that op also write x in
  // the form the matmul consumes (CUDA: the int8 activations of a quantized GEMV, one kernel
  // instead of two) and the matmul skip its own conversion. Results are the same either way;
  // a hint not followed by that pattern is ignored. Default: nothing.
  virtual void PrepareMatMulInput(const TensorView& w) { (void)w; }

  // --- fused ops (a device backend runs each as one kernel; the defaults call the ops above in
  // the order written, so host backends give exactly the unfused results) ---
  // x += y (n_rows * n_cols values), then out = RmsNorm(x, weight). out may alias y, not x.
  virtual void AddRmsNorm(float* x, const float* y, const float* weight, float eps, int64_t n_rows, int64_t n_cols,
                          float* out) {
    Add(x, y, n_rows * n_cols);
    RmsNorm(x, weight, eps, n_rows, n_cols, out);
  }
  // gate_out = silu(x · gateᵀ) * (x · upᵀ): [n_tok, gate.rows], the feed-forward's first half;
  // up_out: [n_tok, up.rows] scratch (undefined afterwards). A device backend may run it as one
  // GEMV with the SwiGLU in its epilogue. A PrepareMatMulInput hint before it applies to its
  // SwiGlu (the matmul after it reads gate_out).
  virtual void MatMulSwiGlu(const TensorView& gate, const TensorView& up, const float* x, int64_t n_tok,
                            float* gate_out, float* up_out) {
    const TensorView ws[] = {gate, up};
    float* const ys[] = {gate_out, up_out};
    MatMulShared(ws, x, n_tok, ys);
    SwiGlu(gate_out, up_out, gate_out, n_tok * gate.rows());
  }
  // Rope of q: [batch.n_tokens, n_heads, cache.head_dim] and of k: [batch.n_tokens,
  // cache.n_kv_heads, cache.head_dim], both in place, then StoreKv(cache, batch, k, v). A device
  // backend may instead do it inside a PagedAttention right after it with the same cache, batch
  // and q: the attention output and the cache are the same, but q and k then keep their
  // unrotated values, and where q, k and v are the outputs of the MatMulShared right before, a
  // device backend may hand them to the attention without writing them at all (callers read
  // none of them after the attention).
  virtual void RopeStoreKv(const KvLayerView& cache, const AttentionBatch& batch, float* q, int32_t n_heads, float* k,
                           const float* v, const int32_t* positions, const float* inv_freq, int32_t n_rot) {
    Rope(q, batch.n_tokens, n_heads, cache.head_dim, positions, inv_freq, n_rot);
    Rope(k, batch.n_tokens, cache.n_kv_heads, cache.head_dim, positions, inv_freq, n_rot);
    StoreKv(cache, batch, k, v);
  }
};

// Host-memory backends.
std::unique_ptr<Backend> MakeReferenceBackend();
// n_threads <= 0: one per core.
std::unique_ptr<Backend> MakeCpuBackend(int n_threads);

// Where a model runs: the CPU, or CUDA device `index`.
struct DeviceSpec {
  bool cuda = false;
  int index = 0;
  std::string ToString() const;  // "cpu", "cuda:0"
};
// "cpu", "cuda" (device 0), "cuda:N"; InvalidArgument naming the text otherwise.
Result<DeviceSpec> ParseDevice(std::string_view text);
// Whether this binary was built with the CUDA backend.
bool CudaBuilt();
// The backend for `device` (n_threads: CPU threads, <= 0 one per core; the CUDA backend uses
// one host thread). Errors name the reason: CUDA not built in, no such GPU, driver too old.
Result<std::unique_ptr<Backend>> MakeBackend(const DeviceSpec& device, int n_threads);

}  // namespace herd
