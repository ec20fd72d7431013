// CudaBackend (cuda_backend.h): the ops of kernels/backend.h on one stream; device memory, copies
// and weights in its base, CudaMemoryBackend (cuda_backend_memory.h).
//
// Graphs (BeginGraph/EndGraph, see backend.h): step_graphs.h (eager first pass, captured second,
// replayed after, the op calls skipped while replaying). HERD_CUDA_GRAPHS=0 turns them off.
//
// Fused ops (AddRmsNorm, RopeStoreKv) run as one kernel each; RopeStoreKv is held until the next
// op, and a PagedAttention right after it on a decode batch takes it into its decode kernel
// (attention_cuda.h). A norm or SwiGLU announced by PrepareMatMulInput also writes the int8 input
// of the quantized GEMV after it (MatMulRunner::FusedRmsNorm / FusedSwiGlu); HERD_CUDA_FUSE=0 runs
// the unfused ops instead, HERD_CUDA_FUSE_INPUT=0 only ignores the hints (A/B runs). A one-row
// AddRmsNorm announced for a K-quant gate/up pair is held until the next op: a MatMulSwiGlu
// reading its output computes it inside the GEMV (internal::GemvQuantAddNorm; the norm's float
// output is then not written), any other op launches it first (FlushNorm); rows of up to 4096
// values (HERD_CUDA_NORM_IN_GEMV=N: up to N; 0: off). The held-back ops: deferred_ops.h.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/log.h"
#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/cuda/argmax_cuda.h"
#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/backend_switches.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_backend_memory.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/deferred_ops.h"
#include "kernels/cuda/dequantize_cuda.h"
#include "kernels/cuda/device_arch.h"
#include "kernels/cuda/diag_skip.h"
#include "kernels/cuda/draw_cuda.h"
#include "kernels/cuda/gemm_split_k.h"
#include "kernels/cuda/matmul_cuda.h"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/step_graphs.h"
#include "kernels/cuda/topk_cuda.h"

namespace herd::cuda {
namespace {

class CudaBackend final : public CudaMemoryBackend {
 public:
  CudaBackend(int device, int num_sms, cudaStream_t stream)
      : CudaMemoryBackend(device, stream), num_sms_(num_sms), matmul_(std::make_unique<MatMulRunner>(stream)) {
    HERD_CUDA_CHECK(cudaMalloc(&norm_counter_, sizeof(int)));
    HERD_CUDA_CHECK(cudaMemset(norm_counter_, 0, sizeof(int)));
  }

  ~CudaBackend() override {  // then ~CudaMemoryBackend frees the weights and copy buffers
    Bind();
    cudaStreamSynchronize(stream_);
    cudaFree(norm_counter_);
    graphs_.Clear();
    matmul_.reset();
    scratch_.reset();
  }

  const char* name() const override { return "cuda"; }

  Status CheckKvCache(DType type, int32_t head_dim) const override {
    Bind();
    if (AttentionFitsDevice(type, head_dim)) return Status::Ok();
    std::string fits;  // the other cache types that would run, as --kv-type spells them
    for (const auto& [t, flag] : {std::pair{DType::kF16, "f16"}, std::pair{DType::kQ8_0, "q8_0"}}) {
      if (t == type || !AttentionFitsDevice(t, head_dim) || (t == DType::kQ8_0 && head_dim % 32 != 0)) continue;
      fits += std::string(fits.empty() ? " (use --kv-type " : " or ") + flag;
    }
    if (!fits.empty()) fits += ")";
    return InvalidArgument(
        StrFormat("KV cache type %s with head_dim %d: the GPU's attention kernels need %zu bytes of shared memory per "
                  "block, this GPU allows %d%s",
                  std::string(DTypeName(type)).c_str(), head_dim, AttentionSmemBytes(type, head_dim), MaxDynamicSmem(),
                  fits.c_str()));
  }

  // --- graphs ---
  void BeginGraph(uint64_t key) override {
    HERD_CHECK_MSG(!graphs_.capturing() && !graphs_.replaying(), "nested BeginGraph");
    FlushDeferred();  // ops deferred before the graph run before it
    if (!sw_.graphs) return;
    Bind();
    graphs_.Begin(key);
  }
  void EndGraph() override {
    FlushDeferred();
    if (!sw_.graphs) return;
    Bind();
    graphs_.End();
  }

  // --- hints ---
  void PrepareMatMulInput(const TensorView& w) override {
    if (sw_.fuse_inputs) next_matmul_ = w;
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
    // K in bands whose partial sums the next AddRmsNorm adds itself (MatMulSlicedK); any other op
    // sums them into y first (FlushSlices).
    int slices = 1;
    if (sw_.fuse) {
      if (const float* parts = matmul_->MatMulSlicedK(w, x, n_tok, &slices)) {
        pending_slices_ = PendingSlices{y, parts, slices, n_tok, w.rows()};
        return;
      }
    }
    matmul_->MatMul(w, x, n_tok, y);
  }
  void MatMulShared(std::span<const TensorView> ws, const float* x, int64_t n_tok,
                    std::span<float* const> ys) override {
    DIAG_SKIP(ws.size() == 2 ? "glu" : "qkv", n_tok);  // gate/up of quantized models come through here
    if (ws.size() == 3 && ws[0].cols() >= sw_.norm_in_qkv_min_cols && NormInGemv(ws, x, n_tok, ys)) return;
    if (!BeginOp(/*matmul=*/true)) return;
#ifdef HERD_DIAG_SKIP_OPS
    const size_t keep = ws.size() == 3 ? DiagSharedKeep(ws.size(), n_tok) : ws.size();  // Q/K/V only
    ws = ws.first(keep), ys = ys.first(keep);
#endif
    // Q/K/V back to back as one GEMM (MatMulConcatenated): the outputs stay column ranges of its
    // [n_tok, rows] result until an op reads them (FlushSplit copies them out), or a decode
    // attention with the RoPE inside reads them in place (PagedAttention).
    if (sw_.fuse && ws.size() == 3 && !copied_out_.contains(ws[0].data)) {
      if (const float* all = matmul_->MatMulConcatenated(ws, x, n_tok)) {
        PendingSplit& p = pending_split_.emplace();
        p.weight = ws[0].data;
        p.all = all;
        p.n_tok = n_tok;
        p.ld = ws[0].rows() + ws[1].rows() + ws[2].rows();
        for (size_t i = 0; i < 3; ++i) p.ys[i] = ys[i], p.cols[i] = ws[i].rows();
        return;
      }
    }
    matmul_->MatMulShared(ws, x, n_tok, ys);
  }
  void MatMulSwiGlu(const TensorView& gate, const TensorView& up, const float* x, int64_t n_tok, float* gate_out,
                    float* up_out) override {
    DIAG_SKIP("glu", n_tok);
    const std::optional<TensorView> next = std::exchange(next_matmul_, std::nullopt);
    if (graphs_.replaying()) return;
    {
      const TensorView ws[] = {gate, up};
      float* const ys[] = {gate_out, up_out};
      if (NormInGemv(ws, x, n_tok, ys)) {
        next_matmul_ = next;  // the hint is for the SwiGLU
        SwiGlu(gate_out, up_out, gate_out, gate.rows());
        return;
      }
    }
    if (sw_.fuse_inputs) {
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
    // Q/K/V still in MatMulConcatenated's output: read in place where the RoPE runs inside the
    // decode kernel (q, k and v are then left unwritten), else copied out first.
    const bool split_for_q = rope && pending_split_ && pending_split_->ys[0] == q;
    const bool in_place = split_for_q && cuda::RopeFusesIntoAttention(cache, batch, n_heads);
    if (split_for_q && !batch.may_have_runs && !in_place) {
      copied_out_.insert(pending_split_->weight);  // this layer's decode attention never reads it in place
    }
    if (in_place) {
      const PendingSplit sp = *std::exchange(pending_split_, std::nullopt);
      float* const all = const_cast<float*>(sp.all);
      rope->args.q = all, rope->args.k = all + sp.cols[0], rope->args.v = all + sp.cols[0] + sp.cols[1];
      rope->args.q_stride = rope->args.k_stride = rope->args.v_stride = sp.ld;
      q = all;
    }
    if (!BeginOp()) return;
    const cuda::RopeStoreArgs* const ra = rope ? &rope->args : nullptr;
    const int64_t n_in = static_cast<int64_t>(n_heads) * cache.head_dim;
    if (next && next->cols() == n_in && sw_.attn_quant_out &&
        matmul_->FusedInt8Input(next->type, out, batch.n_tokens, n_in,
                                [&](DType format, void* buffer, internal::QuantizedActivations* activations) {
                                  return cuda::PagedAttentionQuantized(cache, batch, q, n_heads, scale, out, num_sms_,
                                                                       scratch_.get(), format, buffer, stream_,
                                                                       activations, ra);
                                })) {
      return;
    }
    if (next && next->cols() == n_in && sw_.attn_half_out &&
        matmul_->FusedHalfInput(next->type, out, batch.n_tokens, n_in, [&](bool bf16, void* buffer) {
          return cuda::PagedAttentionHalf(cache, batch, q, n_heads, scale, out, num_sms_, scratch_.get(), bf16, buffer,
                                          stream_, ra);
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
  void DrawRows(const float* x, int64_t n_rows, int64_t n_cols, const RowDraw* draws, int32_t* ids) override {
    if (!BeginOp()) return;
    cuda::DrawRows(x, n_rows, n_cols, draws, ids, stream_);
  }
  void PenalizeRows(float* x, int64_t n_rows, int64_t n_cols, const RowPenalty* penalties,
                    const PenaltyEntry* entries) override {
    if (!BeginOp()) return;
    cuda::PenalizeRows(x, n_rows, n_cols, penalties, entries, stream_);
  }
  void LogprobStatsRows(const float* x, int64_t n_rows, int64_t n_cols, const int32_t* ids,
                        RowLogprobStats* stats) override {
    if (!BeginOp()) return;
    cuda::LogprobStatsRows(x, n_rows, n_cols, ids, stats, stream_);
  }
  void GatherRows(const float* x, const int32_t* rows, int64_t n, int64_t n_cols, float* out) override {
    if (!BeginOp()) return;
    cuda::GatherRows(x, rows, n, n_cols, out, stream_);
  }
  void AddRmsNorm(float* x, const float* y, const float* weight, float eps, int64_t n_rows, int64_t n_cols,
                  float* out) override {
    DIAG_SKIP("norm", n_rows);
    const std::optional<TensorView> next = std::exchange(next_matmul_, std::nullopt);
    if (graphs_.replaying()) return;
    if (!sw_.fuse) return Backend::AddRmsNorm(x, y, weight, eps, n_rows, n_cols, out);
    std::optional<PendingSlices> slices;  // y as partial sums, added by the norm kernel
    if (pending_slices_ && pending_slices_->y == y && pending_slices_->n_tok == n_rows &&
        pending_slices_->rows == n_cols) {
      slices = std::exchange(pending_slices_, std::nullopt);
    }
    // Read before BeginOp, which forgets it; nothing pending that BeginOp would launch first.
    const bool after_blas =
        matmul_->EndedInCublas() && !pending_norm_ && !pending_split_ && !pending_rope_ && !pending_slices_;
    if (!BeginOp()) return;
    if (slices) {
      LaunchAddRmsNorm(x, y, weight, eps, n_rows, n_cols, out, next, !after_blas || sw_.norm_pdl_after_blas, &*slices);
      return;
    }
    if (next && n_rows == 1 && n_cols <= sw_.norm_in_gemv_max_cols && next->cols() == n_cols &&
        ((Traits(next->type).quantized && Traits(next->type).block_size == 256) ||
         (next->type == DType::kQ8_0 && n_cols >= sw_.norm_in_gemv_q8_0_min_cols))) {
      pending_norm_ = PendingNorm{x, y, weight, eps, n_cols, out, *next};
      return;
    }
    LaunchAddRmsNorm(x, y, weight, eps, n_rows, n_cols, out, next, /*pdl=*/!after_blas || sw_.norm_pdl_after_blas);
  }
  // Deferred to the next op: PagedAttention takes it (into its decode kernel where it can), any
  // other op or memory operation launches it first (FlushRope).
  void RopeStoreKv(const KvLayerView& cache, const AttentionBatch& batch, float* q, int32_t n_heads, float* k,
                   const float* v, const int32_t* positions, const float* inv_freq, int32_t n_rot) override {
    DIAG_SKIP("rope", batch.n_tokens);
    if (graphs_.replaying()) return;
    if (!sw_.fuse) return Backend::RopeStoreKv(cache, batch, q, n_heads, k, v, positions, inv_freq, n_rot);
    const bool reads_split =
        pending_split_ && pending_split_->ys[0] == q && pending_split_->ys[1] == k && pending_split_->ys[2] == v;
    if (!BeginOp(/*matmul=*/false, /*keep_split=*/reads_split)) return;
    pending_rope_ = PendingRope{cache, batch, n_heads, {q, k, v, positions, inv_freq, n_rot}};
  }

 private:
  // Every op starts here: false while a graph replays (the op is in the graph). A hint applies
  // only to the op right after it, and a fused matmul input only to the matmul right after its
  // producer: any other op forgets them.
  bool BeginOp(bool matmul = false, bool keep_split = false) {
    next_matmul_.reset();
    FlushNorm();
    if (!keep_split) FlushSplit();
    FlushSlices();
    FlushRope();
    if (graphs_.replaying()) return false;
    Bind();
    if (!matmul) matmul_->DropPreparedInput();
    return true;
  }
  void ForgetFusion() {
    next_matmul_.reset();
    matmul_->DropPreparedInput();
  }

  // AddRmsNorm's kernel: with the int8 input of the announced quantized GEMV where it can.
  // `slices`: y is pending as MatMulSlicedK's partial sums, which the norm kernel adds where it
  // takes them (else they are summed into y first).
  void LaunchAddRmsNorm(float* x, const float* y, const float* weight, float eps, int64_t n_rows, int64_t n_cols,
                        float* out, const std::optional<TensorView>& next, bool pdl = true,
                        const PendingSlices* slices = nullptr) {
    const float* y_in = slices != nullptr ? slices->parts : y;
    const int n_slices = slices != nullptr ? slices->n : 1;
    const int64_t stride = slices != nullptr ? slices->n_tok * slices->rows : 0;
    if (next && next->cols() == n_cols &&
        matmul_->FusedRmsNorm(next->type, x, y_in, weight, eps, n_rows, n_cols, out, pdl, n_slices, stride)) {
      return;
    }
    if (slices != nullptr)
      internal::SumSplitsInto(slices->y, slices->rows, slices->parts, slices->n, slices->n_tok, stream_);
    cuda::AddRmsNorm(x, y, weight, eps, n_rows, n_cols, out, stream_);
  }
  // The pending one-row norm run inside the GEMV of ws (GemvQuantAddNorm) when that GEMV reads its
  // output; false, the norm still pending (BeginOp launches it), where the kernel does not apply.
  bool NormInGemv(std::span<const TensorView> ws, const float* x, int64_t n_tok, std::span<float* const> ys) {
    if (!pending_norm_ || n_tok != 1 || x != pending_norm_->out || pending_norm_->next.data != ws[0].data) {
      return false;
    }
    const PendingNorm& pn = *pending_norm_;
    Bind();
    if (!internal::GemvQuantAddNorm(ws, ys, pn.x, pn.y, pn.weight, pn.eps, norm_counter_, stream_)) return false;
    pending_norm_.reset();
    matmul_->DropPreparedInput();
    return true;
  }
  void FlushNorm() {
    if (!pending_norm_) return;
    const PendingNorm pn = *std::exchange(pending_norm_, std::nullopt);
    Bind();
    LaunchAddRmsNorm(pn.x, pn.y, pn.weight, pn.eps, 1, pn.n_cols, pn.out, pn.next);
  }

  void LaunchRope(const PendingRope& r) {
    FlushSplit();  // it reads q, k and v
    Bind();
    cuda::RopeStoreKv(r.cache, r.batch, r.args.q, r.n_heads, r.args.k, r.args.v, r.args.positions, r.args.inv_freq,
                      r.args.n_rot, stream_);
  }
  void FlushRope() {
    if (pending_rope_) LaunchRope(*std::exchange(pending_rope_, std::nullopt));
  }

  // y = the sum of the slices, in slice order.
  void FlushSlices() {
    if (!pending_slices_) return;
    const PendingSlices p = *std::exchange(pending_slices_, std::nullopt);
    Bind();
    internal::SumSplitsInto(p.y, p.rows, p.parts, p.n, p.n_tok, stream_);
  }
  // Every deferred op, launched in program order (at most one is pending at a time).
  void FlushDeferred() {
    FlushNorm();
    FlushSplit();
    FlushSlices();
    FlushRope();
  }

  // Copies a pending split's column ranges into their buffers (three 2D copies, graph nodes
  // under capture).
  void FlushSplit() {
    if (!pending_split_) return;
    const PendingSplit sp = *std::exchange(pending_split_, std::nullopt);
    Bind();
    int64_t col = 0;
    for (int i = 0; i < 3; ++i) {
      HERD_CUDA_CHECK(cudaMemcpy2DAsync(sp.ys[i], sizeof(float) * sp.cols[i], sp.all + col, sizeof(float) * sp.ld,
                                        sizeof(float) * sp.cols[i], sp.n_tok, cudaMemcpyDeviceToDevice, stream_));
      col += sp.cols[i];
    }
  }

  void BeforeMemoryOp(bool overwrites) override {
    HERD_CHECK_MSG(!graphs_.capturing() && !graphs_.replaying(), "memory operation between BeginGraph and EndGraph");
    FlushDeferred();
    if (overwrites) ForgetFusion();  // the copy may overwrite a prepared matmul input
  }

  const int num_sms_;
  std::unique_ptr<MatMulRunner> matmul_;
  std::optional<TensorView> next_matmul_;  // PrepareMatMulInput's weight, for the next op
  std::optional<PendingRope> pending_rope_;
  std::optional<PendingNorm> pending_norm_;
  int* norm_counter_ = nullptr;  // GemvQuantAddNorm's arrival counter (zero between launches)
  std::optional<PendingSplit> pending_split_;
  std::optional<PendingSlices> pending_slices_;
  // First weights of MatMulShared calls whose concatenated output a decode attention had to copy
  // out (its kernel cannot take strided q / k / v, e.g. the tensor-core decode of head_dim 64):
  // they run as separate outputs from then on.
  std::unordered_set<const void*> copied_out_;
  std::unique_ptr<AttentionScratch> scratch_ = std::make_unique<AttentionScratch>();
  StepGraphs graphs_{stream_};
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
  if (err == cudaSuccess) DeviceCc();            // device_arch.h's answers, cached before any stream capture
  cudaStream_t stream = nullptr;
  if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return Internal("cuda:" + std::to_string(device_index) +
                    (prop.name[0] != 0 ? " (" + std::string(prop.name) + ")" : "") + ": " + cudaGetErrorString(err) +
                    (err == cudaErrorNoKernelImageForDevice ? " (herd's CUDA code targets compute capability 8.0+ by "
                                                              "default; set HERD_CUDA_ARCHS for this GPU)"
                                                            : ""));
  }
  if (!DeviceIsSm90()) {  // which paths this GPU runs (docs/configuration.md "GPUs")
    HERD_LOG(kInfo,
             "cuda:%d (%s, compute capability %d.%d) runs herd's compute_%d code: %s off; %d bytes of shared "
             "memory per block",
             device_index, prop.name, prop.major, prop.minor, CodeCc(),
             Sm90PlusCode() ? "the sm_90a kernels (TMA, wgmma) are" : "PDL, clusters and the sm_90a kernels are",
             MaxDynamicSmem());
  }
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(device_index, prop.multiProcessorCount, stream));
}

}  // namespace herd::cuda
