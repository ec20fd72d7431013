// ReferenceBackend: host memory, every op from kernels/reference, one thread. The oracle the
// optimized backends are compared against (forward-pass tests run the same model on both).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "base/check.h"
#include "kernels/backend.h"
#include "kernels/host_backend.h"
#include "kernels/matmul.h"

namespace herd {
namespace {

class ReferenceBackend final : public HostBackend {
 public:
  const char* name() const override { return "reference"; }
  void GetRows(const TensorView& table, const int32_t* ids, int64_t n, float* out) override {
    ref::GetRows(table, ids, n, out);
  }
  void RmsNorm(const float* x, const float* w, float eps, int64_t rows, int64_t cols, float* out) override {
    ref::RmsNorm(x, w, eps, rows, cols, out);
  }
  void MatMul(const TensorView& w, const float* x, int64_t n_tok, float* y) override { ref::MatMul(w, x, n_tok, y); }
  void Rope(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* pos, const float* inv_freq,
            int32_t n_rot) override {
    ref::Rope(x, n_tok, n_heads, head_dim, pos, inv_freq, n_rot);
  }
  void SwiGlu(const float* gate, const float* up, float* out, int64_t n) override { ref::SwiGlu(gate, up, out, n); }
  void Add(float* x, const float* y, int64_t n) override { ref::Add(x, y, n); }
  void StoreKv(const KvLayerView& c, const AttentionBatch& b, const float* k, const float* v) override {
    ref::StoreKv(c, b, k, v);
  }
  void PagedAttention(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads, float scale,
                      float* out) override {
    ref::PagedAttention(c, b, q, n_heads, scale, out);
  }
};

}  // namespace

void* HostBackend::Alloc(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  HERD_CHECK_MSG(p != nullptr, "out of host memory allocating %zu bytes", bytes);
  std::memset(p, 0, rounded);
  return p;
}

void HostBackend::Free(void* ptr) { std::free(ptr); }

void HostBackend::CopyToDevice(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void HostBackend::CopyToHost(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void HostBackend::CopyOnDevice(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }

void HostBackend::GatherRows(const float* x, const int32_t* rows, int64_t n, int64_t n_cols, float* out) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * n_cols, x + rows[i] * n_cols, sizeof(float) * n_cols);
}

void Backend::ArgMaxRows(const float* x, int64_t n_rows, int64_t n_cols, int32_t* ids) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* row = x + r * n_cols;
    int32_t best = -1;
    for (int64_t i = 0; i < n_cols; ++i) {
      if (row[i] == row[i] && (best < 0 || row[i] > row[best])) best = static_cast<int32_t>(i);
    }
    ids[r] = best;
  }
}

void Backend::ResolveFedBackIds(int32_t* ids, int64_t n, const int32_t* prev) {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0) ids[i] = std::max(prev[-ids[i] - 1], 0);
  }
}

void Backend::TopKRows(const float* x, int64_t n_rows, int64_t n_cols, int32_t k, int32_t* ids, float* vals) {
  HERD_CHECK(k >= 1 && k <= kMaxTopK);
  std::vector<int32_t> idx;
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* row = x + r * n_cols;
    idx.clear();
    for (int64_t i = 0; i < n_cols; ++i) {
      if (row[i] > -std::numeric_limits<float>::infinity()) idx.push_back(static_cast<int32_t>(i));  // not NaN
    }
    const size_t m = std::min(idx.size(), static_cast<size_t>(k));
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(m), idx.end(),
                      [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    for (int32_t j = 0; j < k; ++j) {
      const bool has = static_cast<size_t>(j) < m;
      ids[r * k + j] = has ? idx[static_cast<size_t>(j)] : -1;
      vals[r * k + j] = has ? row[idx[static_cast<size_t>(j)]] : -std::numeric_limits<float>::infinity();
    }
  }
}

void Backend::DrawRows(const float* x, int64_t n_rows, int64_t n_cols, const RowDraw* draws, int32_t* ids) {
  for (int64_t r = 0; r < n_rows; ++r) ids[r] = ref::DrawRow(x + r * n_cols, n_cols, draws[r]);
}

void Backend::PenalizeRows(float* x, int64_t n_rows, int64_t n_cols, const RowPenalty* penalties,
                           const PenaltyEntry* entries) {
  for (int64_t r = 0; r < n_rows; ++r) ref::PenalizeRow(x + r * n_cols, penalties[r], entries);
}

void Backend::LogprobStatsRows(const float* x, int64_t n_rows, int64_t n_cols, const int32_t* ids,
                               RowLogprobStats* stats) {
  for (int64_t r = 0; r < n_rows; ++r) stats[r] = ref::LogprobStatsOfRow(x + r * n_cols, n_cols, ids[r]);
}

std::unique_ptr<Backend> MakeReferenceBackend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace herd
