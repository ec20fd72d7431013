// Element-wise and normalisation op families used by transformer forward passes.
// Shapes use the convention [rows, cols] with cols contiguous. All pointers are in the
// memory of the backend that runs the op (host memory for the CPU backends).
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace herd {

// Rotary position embedding parameters of one model (see RopeInverseFrequencies).
struct RopeParams {
  int32_t n_rot = 0;          // rotated dims per head (== head_dim for llama)
  float freq_base = 10000.f;  // theta
  float freq_scale = 1.f;     // linear scaling: positions are multiplied by this (1 / factor)
  const float* freq_factors = nullptr;  // [n_rot / 2] llama3 `rope_freqs` divisors, or null
};

// inv_freq[i] = freq_scale * base^(-2i / n_rot) / factor[i], i < n_rot / 2.
void RopeInverseFrequencies(const RopeParams& params, float* inv_freq);

namespace ref {

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight[:]; x, out: [n_rows, n_cols].
void RmsNorm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t n_cols, float* out);

// In place on x: [n_tok, n_heads, head_dim]. Adjacent-pair ("normal") rotation of dims
// (2i, 2i+1), i < n_rot/2, by angle positions[t] * inv_freq[i] (inv_freq from RopeInverseFrequencies).
void Rope(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* positions,
          const float* inv_freq, int32_t n_rot);

// out[i] = silu(gate[i]) * up[i] over n elements.
void SwiGlu(const float* gate, const float* up, float* out, int64_t n);

// x[i] += y[i].
void Add(float* x, const float* y, int64_t n);

// out[r, :] = dequantize(table row ids[r]); table: [n_rows_table, n_cols] any weight type.
void GetRows(const TensorView& table, const int32_t* ids, int64_t n, float* out);

}  // namespace ref
}  // namespace herd
