// Element-wise and normalisation ops on the GPU, with the semantics of the reference ops in
// kernels/ops.h (herd::ref). Every pointer is device memory; every call only queues work on
// `stream` (no host synchronisation). Shapes are [rows, cols] with cols contiguous.
// The kernels are launched with programmatic dependent launch (launch_pdl.cuh); index inputs
// (positions, rows) and inv_freq are read before the previous kernel ends, so they must come
// from host copies (CopyToDevice), not from kernels of the same stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace herd::cuda {

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight[:]; x, out: [n_rows, n_cols].
// out may equal x. Sum of squares in fp32 (the reference uses double: relative difference ~1e-6).
void RmsNorm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t n_cols, float* out,
             cudaStream_t stream);

// Fused residual add + RmsNorm: x[r, :] += y[r, :], then out[r, :] = RmsNorm(x[r, :]) (x updated
// in place; the same float additions as Add). One launch instead of two. out may alias y, not x.
void AddRmsNorm(float* x, const float* y, const float* weight, float eps, int64_t n_rows, int64_t n_cols, float* out,
                cudaStream_t stream);

// In place on x: [n_tok, n_heads, head_dim]; adjacent pairs (2i, 2i+1), i < n_rot / 2, rotated by
// positions[t] * inv_freq[i]. positions: [n_tok] device, inv_freq: [n_rot / 2] device. The angle,
// its sine and cosine are computed in double as the reference does (positions up to 2^20 stay exact).
void Rope(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* positions, const float* inv_freq,
          int32_t n_rot, cudaStream_t stream);

// out[i] = silu(gate[i]) * up[i]; out may equal gate or up.
void SwiGlu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);

// x[i] += y[i].
void Add(float* x, const float* y, int64_t n, cudaStream_t stream);

// out[i, :] = x[rows[i], :] for i < n; rows: [n] device; x, out: [*, n_cols]; must not overlap.
void GatherRows(const float* x, const int32_t* rows, int64_t n, int64_t n_cols, float* out, cudaStream_t stream);

// cudaSuccess when this binary holds code the current GPU can run (cudaErrorNoKernelImageForDevice
// on a GPU older than the build's targets). Launches nothing. `code_cc` (if not null): the
// architecture the loaded code was compiled for, as major * 10 + minor (device_arch.h).
cudaError_t ProbeKernels(int* code_cc = nullptr);

}  // namespace herd::cuda
