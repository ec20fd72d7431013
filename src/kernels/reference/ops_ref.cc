// Scalar reference implementations of kernels/ops.h.
#include <cmath>

#include "base/check.h"
#include "kernels/ops.h"
#include "kernels/quants.h"

namespace herd {

void RopeInverseFrequencies(const RopeParams& p, float* inv_freq) {
  HERD_CHECK(p.n_rot > 0 && p.n_rot % 2 == 0);
  for (int32_t i = 0; i < p.n_rot / 2; ++i) {
    double f = std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot) * p.freq_scale;
    if (p.freq_factors != nullptr) f /= p.freq_factors[i];
    inv_freq[i] = static_cast<float>(f);
  }
}

namespace ref {

void RmsNorm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t n_cols, float* out) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n_cols;
    double ss = 0;
    for (int64_t c = 0; c < n_cols; ++c) ss += static_cast<double>(xr[c]) * xr[c];
    const float scale = static_cast<float>(1.0 / std::sqrt(ss / n_cols + eps));
    for (int64_t c = 0; c < n_cols; ++c) out[r * n_cols + c] = xr[c] * scale * weight[c];
  }
}

void Rope(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* positions,
          const float* inv_freq, int32_t n_rot) {
  HERD_CHECK(n_rot <= head_dim);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int32_t i = 0; i < n_rot / 2; ++i) {
      const double angle = static_cast<double>(positions[t]) * inv_freq[i];
      const float c = static_cast<float>(std::cos(angle));
      const float s = static_cast<float>(std::sin(angle));
      for (int64_t h = 0; h < n_heads; ++h) {
        float* v = x + (t * n_heads + h) * head_dim;
        const float a = v[2 * i];
        const float b = v[2 * i + 1];
        v[2 * i] = a * c - b * s;
        v[2 * i + 1] = a * s + b * c;
      }
    }
  }
}

void SwiGlu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void Add(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void GetRows(const TensorView& table, const int32_t* ids, int64_t n, float* out) {
  const int64_t cols = table.cols();
  for (int64_t r = 0; r < n; ++r) {
    HERD_CHECK_MSG(ids[r] >= 0 && ids[r] < table.rows(), "token id %d out of range [0, %lld)", ids[r],
                   static_cast<long long>(table.rows()));
    DequantizeRow(table.type, table.row(ids[r]), out + r * cols, cols);
  }
}

}  // namespace ref
}  // namespace herd
