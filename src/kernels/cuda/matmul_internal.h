// The launchers behind MatMulRunner and GetRows (matmul_gemv*.cu, quant_*.cu, dequantize_cuda.cu), shared by
// the runner, its test and its benchmark. All queue work on `stream` and return at once; all
// pointers are device memory. Not part of the backend interface.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "tensor/tensor.h"

namespace herd::cuda::internal {

// Integer-GEMV activation format: each token row quantized exactly as
// ref::QuantizeRow(format) does (format = ref::VecDotType of the weight type: Q8_0, Q8_1 or
// Q8_K; bit-identical int8 values and scales), stored for the GEMV lanes (quant_dot.cuh):
//   q:    [n_tok][q_stride] int8, q_stride = n_in rounded up to 2048; value v at ActBytePos(v)
//         (2048-value spans, lane-major 16-byte vectors); padding zero;
//   d:    [n_tok][d_stride] float block scales (d_stride = q_stride / 32): Q8_0/Q8_1 one per 32
//         values (Q8_0: the half-rounded scale, as a float), Q8_K one per 256 (first entries);
//   s:    [n_tok][d_stride] Q8_1 only: d * (sum of the block's 32 int8), the reference's s;
//   sums: [n_tok][g_stride] int16 sum of each group of 16 int8 (Q8_K's bsums; every format),
//         g_stride = q_stride / 16.
struct QuantizedActivations {
  DType format = DType::kQ8_0;
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const float* s = nullptr;
  const int16_t* sums = nullptr;
  int64_t q_stride = 0, d_stride = 0, g_stride = 0;
};
// Device bytes QuantizeActivations needs for n_tok rows of n_in (a multiple of 32).
size_t QuantizedActivationBytes(int64_t n_tok, int64_t n_in);
// Writes the format into `buffer` (QuantizedActivationBytes, 256-byte aligned). n_in must be a
// multiple of the format's block (32 or 256). Cost: one read of x, ~1.4 bytes written per value.
QuantizedActivations QuantizeActivations(DType format, const float* x, int64_t n_tok, int64_t n_in, void* buffer,
                                         cudaStream_t stream);

// The added y of RmsNormQuantize / RmsNormToHalf as n partial sums y + s * stride (n = 1, 2 or 4;
// 2 and 4 for rows of at most 4096 values, else they decline), added in slice order (as
// SumSplits) before x += y: MatMulSlicedK's output.
struct YSlices {
  int n = 1;
  int64_t stride = 0;
};

// The op that computes a GEMV input fused with QuantizeActivations (quant_fused.cu; one kernel
// instead of two, the float result written too): RmsNormQuantize: out = RmsNorm(x) * weight per
// row of n_cols (y != nullptr: x += y first and stored, as AddRmsNorm; out may alias y or, without
// y, x); SwiGluQuantize: out = silu(gate) * up, rows of n_in (out may alias gate or up). The
// quantized values equal QuantizeActivations(format, out) bit for bit. They return false and
// queue nothing for what they do not take (the caller runs the two steps): rows not a multiple
// of the format's block, norm rows over 8192 values, pointers not 16-byte aligned. `pdl` false
// (the norm follows a cuBLAS GEMM): launched without programmatic dependent launch and, for
// several rows, letting the next kernel launch only once each CTA has its sum.
bool RmsNormQuantize(DType format, float* x, const float* y, const float* weight, float eps, int64_t n_tok,
                     int64_t n_cols, float* out, void* buffer, cudaStream_t stream, QuantizedActivations* q,
                     bool pdl = true, YSlices y_slices = {});
bool SwiGluQuantize(DType format, const float* gate, const float* up, float* out, int64_t n_tok, int64_t n_in,
                    void* buffer, cudaStream_t stream, QuantizedActivations* q);
// The same ops writing the tensor-core path's input instead: half_out [n_tok, n] = the float
// output rounded to half (bf16: bfloat16) exactly as ConvertActivations rounds it.
bool RmsNormToHalf(bool bf16, float* x, const float* y, const float* weight, float eps, int64_t n_tok, int64_t n_cols,
                   float* out, void* half_out, cudaStream_t stream, bool pdl = true, YSlices y_slices = {});
bool SwiGluToHalf(bool bf16, const float* gate, const float* up, float* out, int64_t n_tok, int64_t n_in,
                  void* half_out, cudaStream_t stream);

// out[i] = x[i] rounded to half (bf16 = false) or bfloat16 (bf16 = true), n elements.
void ConvertActivations(const float* x, int64_t n, bool bf16, void* out, cudaStream_t stream);

// ys[k][0, o] = sum_i ws[k][o, i] * x'[i] for one token of K-quant weights (one type, or a type
// then its mix partner; up to 4 weights of one n_in) or of Q8_0 weights (n_in a multiple of 256),
// where x' = RmsNorm(x + y) * norm_w quantized to Q8_K (Q8_0 for Q8_0 weights) exactly as
// RmsNormQuantize does, computed inside the GEMV's own CTAs
// (gemv_add_norm.cu): no norm kernel before it. Also x += y (AddRmsNorm's update; the normalized
// row itself is not stored). `counter`: a device int, zero before the call and left zero. x, y,
// norm_w and the weights' rows 16-byte aligned. False, queueing nothing, where it does not apply
// (not an sm_90 GPU, other types, misaligned data). The kernels before it in the stream need not
// have finished (programmatic dependent launch, as GemvQuant).
bool GemvQuantAddNorm(std::span<const TensorView> ws, std::span<float* const> ys, float* x, const float* y,
                      const float* norm_w, float eps, int* counter, cudaStream_t stream);

// GemvQuant at one token of already quantized activations x (Q8_K for K-quants, Q8_0 for Q8_0),
// through GemvQuantAddNorm's kernel without its norm: one CTA per SM whose producer streams the
// rows into a shared-memory ring by TMA bulk copies. The same weights and alignment as
// GemvQuantAddNorm; false, queueing nothing, where it does not apply. Programmatic dependent
// launch as GemvQuant. The backend routes large launches here (RingFor, matmul_gemv.cu).
bool GemvQuantRing(std::span<const TensorView> ws, std::span<float* const> ys, const QuantizedActivations& x,
                   cudaStream_t stream);

// ys[k][t, o] = sum_i ws[k][o, i] * x[t, i] for quantized weights of one n_in and one activation
// format (any n_tok; weights are streamed once per group of 8 tokens; up to 4 weights per launch:
// of one type, or of a type and its mix partner, e.g. Q4_K Q/K and a Q6_K V; HERD_CUDA_GEMV_MIXED=0
// launches each type apart), from the format above (x.format == ref::VecDotType(type)), which the kernel right
// before in the stream must have written (the GEMV starts its weight loads before waiting for that kernel: programmatic
// dependent launch). Rows 16-byte aligned: 16-byte asynchronous copies into shared memory;
// otherwise the same kernels with 2-byte copies.
void GemvQuant(std::span<const TensorView> ws, std::span<float* const> ys, const QuantizedActivations& x, int64_t n_tok,
               cudaStream_t stream);

// Launch choices of the GEMV kernels, settable for A/B benchmarks (process-wide; the defaults
// are the ones measured best on H100): programmatic dependent launch of the activation
// quantization and quantized GEMV (pdl) and of float GEMV launches with at most
// float_pdl_max_mb MiB of weights (0: none; HERD_CUDA_FLOAT_PDL_MB sets the initial value); row
// groups per block of the quantized kernels (0: persistent, one wave of blocks looping over
// rows; -1: automatic, 2 for rows of one 2048-value step when there are at least 8192 rows,
// else 1); rows split over up to 4 warps while a warp would have more than split_stages stages;
// float rows split while the grid has fewer than float_want_warps warps or a part has more than
// float_per_part 512-byte units (HERD_CUDA_FLOAT_WANT_WARPS / _PER_PART set the initial values);
// float_vectors (2 or 4) 16-byte loads per lane in flight and float_split4_units (0: off), where
// 4096-row launches split rows of up to that many units over 4 warps: 0 / -1 take the choice for
// the device's bandwidth (matmul_gemv_float.cu; HERD_CUDA_FLOAT_VECTORS / _SPLIT4_UNITS).
struct GemvOptions {
  bool pdl = true;
  int64_t float_pdl_max_mb = 512;
  int64_t float_want_warps = 4096;
  int64_t float_per_part = int64_t{1} << 40;
  int float_vectors = 0;
  int64_t float_split4_units = -1;
  int groups_per_block = -1;
  int split_stages = 2;
  // One-token GEMVs of K-quant weights read in place (gemv_quant_direct.cu) instead of staged in
  // shared memory: 1 on, 0 off, -1 the measured default (HERD_CUDA_GEMV_DIRECT).
  int quant_direct = -1;
  // One-token float launches of at most this many MiB of weights through the shared-memory ring
  // kernel (gemv_float_ring.cu) where it applies (0: none; HERD_CUDA_FLOAT_RING_MB).
  int64_t float_ring_max_mb = 16;
  // One-token quantized launches of at least this many MiB of weights through GemvQuantRing, for
  // rows of >= 8192 values / shorter rows (0: none; HERD_CUDA_RING_GEMV_MB / _NARROW_MB; RingFor
  // in matmul_gemv.cu has the measurements).
  int64_t quant_ring_mb = 16;
  int64_t quant_ring_narrow_mb = 32;
};
bool GemvProgrammaticLaunch();
void SetGemvOptions(const GemvOptions& options);

// The same for F32/F16/BF16 weights of one type with float32 x (products and sums in float32).
void GemvFloat(std::span<const TensorView> ws, std::span<float* const> ys, const float* x, int64_t n_tok,
               cudaStream_t stream);

// out[t, j] = silu(x · gate[j]) * (x · up[j]) for float gate/up of one type and shape: the two
// GEMVs of one launch with the SwiGLU in their epilogue (a block computes gate rows and the same
// up rows; the dot products are GemvFloat's, so out equals GemvFloat + SwiGlu bit for bit).
// out: [n_tok, gate.rows()]. Returns false, queueing nothing, where GemvFloat would split a row
// over more than 2 warps (fewer than ~512 rows each: tiny models).
bool GemvFloatGlu(const TensorView& gate, const TensorView& up, const float* x, int64_t n_tok, float* out,
                  cudaStream_t stream);

// ys[k] = x · ws[k]ᵀ on the tensor cores for quantized weights of one type and one n_in (up to 4
// weights per launch), dequantized inside the kernel (matmul_quant_tc.cu): each weight value is
// the half DequantizeRowsToHalf gives, x is half [n_tok, n_in] (16-byte aligned), products
// accumulate in float32. Weights must pass GemmQuantTcSupports. `scratch` (GemmQuantTcScratchBytes,
// enough for any call) holds split-K partial sums; deterministic (fixed summation order).
bool GemmQuantTcSupports(const TensorView& w);  // quantized, n_in % 256 == 0, 16-byte aligned rows
size_t GemmQuantTcScratchBytes();
void GemmQuantTc(std::span<const TensorView> ws, std::span<float* const> ys, const void* x_half, int64_t n_tok,
                 void* scratch, size_t scratch_bytes, cudaStream_t stream);

// ys[k] = x · ws[k]ᵀ on Hopper's tensor cores for F16 or BF16 weights of one type and one n_in
// (up to 4 weights per launch; matmul_half_tc.cu): x is half (bf16 for BF16 weights)
// [n_tok, n_in], 16-byte aligned; products accumulate in float32. Weights must pass
// GemmHalfTcSupports; only where GemmHalfTcAvailable (an sm_90 GPU, a driver with tensor maps,
// not switched off by HERD_CUDA_HALF_TC=0 or SetGemmHalfTcEnabled(false)). Split-K partial sums
// are added inside thread-block clusters from 33 tokens on, below that through `scratch`
// (GemmQuantTcScratchBytes); deterministic either way.
bool GemmHalfTcAvailable();
void SetGemmHalfTcEnabled(bool on);
bool GemmHalfTcSupports(const TensorView& w);  // F16/BF16, n_in % 8 == 0, 16-byte aligned
void GemmHalfTc(std::span<const TensorView> ws, std::span<float* const> ys, const void* x_half, int64_t n_tok,
                void* scratch, size_t scratch_bytes, cudaStream_t stream);
// out[t, j] = silu(x · gate[j]) * (x · up[j]) ([n_tok, gate.rows()] float, computed as SwiGlu
// does from the two GemmHalfTc sums) and, when half_out is set, the same values rounded to half
// (half_out_bf16: bfloat16) as ConvertActivations rounds them: the gate/up GEMM with the SwiGLU
// and the down projection's input conversion in its epilogue (a CTA takes 64 gate rows and the
// same 64 up rows, above 64 tokens GemmHalfTcGluWide's 128 + 128; no split-K). Gate and up: one
// supported type and shape; x as for GemmHalfTc.
void GemmHalfTcGlu(const TensorView& gate, const TensorView& up, const void* x_half, int64_t n_tok, float* out,
                   void* half_out, bool half_out_bf16, cudaStream_t stream);
// GemmHalfTcGlu's work for n_tok > 64 in tiles of 128 gate + 128 up rows (half the L2 reads of x
// per weight byte; matmul_half_tc_glu_wide.cu), the same bits. Arguments as GemmHalfTcGlu has
// checked them: GemmHalfTcGlu calls it first. False, launching nothing, with n_tok <= 64 or when
// switched off (SetGemmHalfTcGluWide(0) / HERD_CUDA_HALF_TC_GLU_WIDE=0; on by default).
bool GemmHalfTcGluWide(const TensorView& gate, const TensorView& up, const void* x_half, int64_t n_tok, float* out,
                       void* half_out, bool half_out_bf16, cudaStream_t stream);
void SetGemmHalfTcGluWide(int mode);
// Rows [row0, row0 + n_rows) of a quantized w dequantized to half: out [n_rows, w.cols()].
// Each value is computed in float exactly as ref::DequantizeRow does, then rounded to half.
void DequantizeRowsToHalf(const TensorView& w, int64_t row0, int64_t n_rows, void* out, cudaStream_t stream);

}  // namespace herd::cuda::internal
