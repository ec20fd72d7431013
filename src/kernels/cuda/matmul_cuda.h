// Matrix multiplication on the GPU: y = x · Wᵀ for every weight type herd loads (kWeightTypes),
// with the shapes of kernels/matmul.h:
//   w: [n_out, n_in] in device memory (CudaBackend::PrepareWeight's upload, same byte layout as
//      the GGUF tensor: rows of RowBytes(type, n_in) bytes; quantized blocks dequantized inside the
//      kernels, never expanded to a full-precision copy of the model)
//   x: [n_tok, n_in] float32, device;  y: [n_tok, n_out] float32, device
// Small n_tok (decode): GEMV-style kernels that stream the weights once. Large n_tok (prefill):
// tensor cores (cuBLAS/cuBLASLt for F16/BF16/F32; quantized weights dequantized tile by tile or
// into a bounded scratch buffer, then tensor-core GEMMs).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <utility>

#include "tensor/tensor.h"

namespace herd::cuda {
namespace internal {
struct QuantizedActivations;  // matmul_internal.h
}  // namespace internal

// Which kernels MatMul uses. kAuto (the default) picks by weight type and n_tok: GEMV kernels
// for small n_tok, tensor cores above. kGemv / kTensorCore force one path for any n_tok (tests
// and benchmarks compare them). On the tensor-core path quantized weights take the fused
// dequantizing kernel (GemmQuantTc) where it supports the weight and the batch is small for the
// weight (QuantTcMaxTok, QuantTcMinElemsPerTok below), else dequantized half tiles and cuBLAS; kTensorCoreFused /
// kTensorCoreCublas force one of the two (kTensorCoreFused still falls back to cuBLAS for weights the kernel does not
// take). F16/BF16 weights likewise take GemmHalfTc (Hopper) or cuBLAS.
enum class MatMulPath { kAuto, kGemv, kTensorCore, kTensorCoreFused, kTensorCoreCublas };

// One per stream (not thread-safe): owns the cuBLAS handle and the scratch buffers (quantized
// activations, dequantized weight tiles) that grow to the largest call seen.
class MatMulRunner {
 public:
  explicit MatMulRunner(cudaStream_t stream);
  ~MatMulRunner();
  MatMulRunner(const MatMulRunner&) = delete;
  MatMulRunner& operator=(const MatMulRunner&) = delete;

  // Queues y = x · wᵀ on the stream. Any kWeightTypes type; w.cols a multiple of its block size.
  void MatMul(const TensorView& w, const float* x, int64_t n_tok, float* y);
  // ys[i] = x · ws[i]ᵀ for weights sharing one input (Q/K/V, gate/up): x is converted once.
  void MatMulShared(std::span<const TensorView> ws, const float* x, int64_t n_tok, std::span<float* const> ys);
  // MatMulShared as ONE matrix: where ws are F16 / BF16 weights of one type and width lying back
  // to back in memory (Backend::PrepareWeightGroup) and n_tok is in ConcatTokRange(), queues
  // y = x · [ws[0]; ws[1]; ...]ᵀ as one GEMM (at 65-128 tokens cuBLAS, which streams the
  // [6144, 4096] Q/K/V of an 8B model in ~24 us against ~31 us for the grouped GemmHalfTc) and
  // returns y: [n_tok, sum of rows] (row t: ws[0]'s outputs, then ws[1]'s, ...) in a buffer of
  // this runner, valid until the next call of this function. nullptr, queueing nothing,
  // otherwise (also on the GEMV path and with a forced path).
  const float* MatMulConcatenated(std::span<const TensorView> ws, const float* x, int64_t n_tok);
  // [lo, hi] token counts for MatMulConcatenated (HERD_CUDA_CONCAT_TOK=lo:hi, default 65:128;
  // 0:0 turns it off).
  static std::pair<int64_t, int64_t> ConcatTokRange();
  // For a float weight that cuBLAS would take at n_tok tokens (65-128 at the defaults) with at
  // least 8192 inputs (an 8B down projection: 4096 x 14336): queues K in *slices equal bands
  // as one batched cuBLASLt GEMM and returns the partial sums [*slices][n_tok][w.rows()] (the
  // output is their sum, added in slice order), in a buffer of this runner valid until the next
  // call of this function: cuBLAS's split-K reduction kernel is left to the consumer (the next
  // AddRmsNorm adds the slices as it reads them). nullptr, queueing nothing, otherwise.
  // HERD_CUDA_SLICED_K=N: N slices (2 or 4, default 2; anything else: off);
  // HERD_CUDA_SLICED_K_MIN_COLS=N: weights of at least N inputs (default 8192, at least 1024).
  const float* MatMulSlicedK(const TensorView& w, const float* x, int64_t n_tok, int* slices);

  // Fused input preparation: when the next MatMul/MatMulShared reads x = `out` (n_tok rows of
  // n_in = the weight's columns) with a weight of `weight_type` that converts x (quantized on the
  // GEMV path: int8 activations; F16/BF16/quantized on the tensor cores: half / bfloat16 x),
  // these queue the op that computes x and that conversion as one kernel, and that next call
  // takes the converted x instead of converting it again (only that call, and only if
  // it is the next one: DropPreparedInput in between forgets it). They return false, queueing
  // nothing, where the fusion does not apply; the caller then runs the plain op.
  //   out = RmsNorm(x) * w (y != nullptr: x += y first, as AddRmsNorm), rows of n_in;
  //   out = silu(gate) * up, n_tok rows of n_in.
  // `pdl` false: the norm kernel is launched without programmatic dependent launch. y_slices > 1:
  // y is that many partial sums y + s * y_slice_stride, added in order (MatMulSlicedK's output).
  bool FusedRmsNorm(DType weight_type, float* x, const float* y, const float* w, float eps, int64_t n_tok, int64_t n_in,
                    float* out, bool pdl = true, int y_slices = 1, int64_t y_slice_stride = 0);
  bool FusedSwiGlu(DType weight_type, const float* gate, const float* up, float* out, int64_t n_tok, int64_t n_in);
  // The same for any producer of int8 activations (e.g. PagedAttentionQuantized): when the next
  // call takes them, produce(format, buffer, &activations) must queue the op writing out and its
  // activations of `format` into buffer, or queue nothing and return false.
  using Int8Producer = std::function<bool(DType format, void* buffer, internal::QuantizedActivations* activations)>;
  bool FusedInt8Input(DType weight_type, const float* out, int64_t n_tok, int64_t n_in, const Int8Producer& produce);
  // ... and of half / bfloat16 x (e.g. PagedAttentionHalf): when the next call takes it,
  // produce(bf16, buffer) must queue the op writing out and its rounded copy into buffer, or
  // queue nothing and return false.
  using HalfProducer = std::function<bool(bool bf16, void* buffer)>;
  bool FusedHalfInput(DType weight_type, const float* out, int64_t n_tok, int64_t n_in, const HalfProducer& produce);
  void DropPreparedInput();
  // Whether the last kernel this runner queued on its stream was cuBLAS's (no other op since:
  // DropPreparedInput clears it). On H200 a norm launched with PDL right after a cuBLAS GEMM
  // runs longer than one launched plainly (bench/results/cuda-session25-2026-11-28.md).
  bool EndedInCublas() const;
  // out = silu(x · gateᵀ) * (x · upᵀ) as one launch with the SwiGLU in its epilogue, for float
  // gate/up of one type and shape: on the GEMV path (identical to MatMulShared + SwiGlu), or for
  // F16/BF16 where GemmHalfTc takes them (GemmHalfTcGlu: the same sums; when `next`, the matmul
  // that will read out, takes half / bfloat16 x, that input is written too and prepared for it,
  // as PrepareMatMulInput + SwiGlu would). False, queueing nothing, otherwise. out: [n_tok,
  // gate.rows()].
  bool MatMulSwiGlu(const TensorView& gate, const TensorView& up, const float* x, int64_t n_tok, float* out,
                    const TensorView* next = nullptr);

  // Grows the scratch buffers (below) for any weight with up to n_in columns and calls of up to
  // n_tok tokens, so that such calls allocate nothing: call it before capturing a CUDA graph.
  // Otherwise buffers grow on demand, which synchronizes the stream once per growth. Scratch:
  // 3 x 1.4*n_tok*n_in bytes (int8 activations in each of the three formats, GEMV path;
  // n_in rounded up to 2048) or 2*n_tok*n_in (half activations)
  // + at most 64 MiB (a half tile of dequantized weights) + 32 MiB cuBLAS workspace + 2 x SMs x
  // 64 KiB split-K partials of the fused kernel (tensor-core path).
  void Reserve(int64_t n_tok, int64_t n_in);
  // The path of later calls (initially kAuto, or HERD_CUDA_MATMUL_PATH=gemv|tc|tc-fused|tc-cublas|auto).
  void set_path(MatMulPath path);
  // On its own (kAuto, kTensorCore) the tensor-core path takes the fused kernel for a quantized
  // weight at n_tok tokens when n_tok <= QuantTcMaxTok() (HERD_CUDA_QUANT_TC_MAX_TOK, 0: never)
  // and rows x cols >= QuantTcMinElemsPerTok() x n_tok (HERD_CUDA_QUANT_TC_MIN_ELEMS).
  static int64_t QuantTcMaxTok();
  static int64_t QuantTcMinElemsPerTok();
  // ... and for an F16 / BF16 weight on a Hopper GPU the TMA / wgmma kernel (GemmHalfTc) when
  // n_tok <= HalfTcMaxTok() (HERD_CUDA_HALF_TC_MAX_TOK, default 64; HERD_CUDA_HALF_TC=0: never),
  // else cuBLAS.
  static int64_t HalfTcMaxTok();
  // The same limit for weights sharing one launch (Q/K/V, gate/up; HERD_CUDA_HALF_TC_GROUPED_MAX_TOK,
  // default 128).
  static int64_t HalfTcMaxTokGrouped();
  // The path kAuto takes for a weight of `type` at n_tok tokens (kGemv or kTensorCore).
  static MatMulPath AutoPath(DType type, int64_t n_tok);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace herd::cuda
