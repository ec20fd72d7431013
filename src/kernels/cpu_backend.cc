// CpuBackend: host memory, SIMD matmuls (kernels/cpu/matmul*) and parallel ops over one
// persistent thread pool. Weights are used in place from the file mapping.
#include "base/thread_pool.h"
#include "kernels/backend.h"
#include "kernels/cpu/ops_cpu.h"
#include "kernels/host_backend.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/matmul.h"

namespace herd {
namespace {

class CpuBackend final : public HostBackend {
 public:
  explicit CpuBackend(int n_threads) : pool_(n_threads) {}
  const char* name() const override { return "cpu"; }

  void GetRows(const TensorView& table, const int32_t* ids, int64_t n, float* out) override {
    ref::GetRows(table, ids, n, out);  // n rows of a table: negligible cost
  }
  void RmsNorm(const float* x, const float* w, float eps, int64_t rows, int64_t cols, float* out) override {
    cpu::RmsNorm(x, w, eps, rows, cols, out, pool_);
  }
  void MatMul(const TensorView& w, const float* x, int64_t n_tok, float* y) override {
    cpu::MatMul(w, x, n_tok, y, pool_);
  }
  // Quantizes x once when every weight uses the same 8-bit activation format.
  void MatMulShared(std::span<const TensorView> ws, const float* x, int64_t n_tok,
                    std::span<float* const> ys) override {
    bool shared = !ws.empty() && Traits(ws[0].type).quantized;
    for (const TensorView& w : ws) shared = shared && cpu::ActivationsCompatible(ws[0].type, w.type);
    if (!shared) {
      Backend::MatMulShared(ws, x, n_tok, ys);
      return;
    }
    cpu::QuantizeActivations(ws[0].type, x, n_tok, ws[0].cols(), &xq_, pool_);
    for (size_t i = 0; i < ws.size(); ++i) cpu::MatMulQuantized(ws[i], xq_, ys[i], pool_);
  }
  void Rope(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* pos, const float* inv_freq,
            int32_t n_rot) override {
    cpu::Rope(x, n_tok, n_heads, head_dim, pos, inv_freq, n_rot, pool_);
  }
  void SwiGlu(const float* gate, const float* up, float* out, int64_t n) override {
    cpu::SwiGlu(gate, up, out, n, pool_);
  }
  void Add(float* x, const float* y, int64_t n) override { ref::Add(x, y, n); }
  void StoreKv(const KvLayerView& c, const AttentionBatch& b, const float* k, const float* v) override {
    cpu::StoreKv(c, b, k, v);
  }
  void PagedAttention(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads, float scale,
                      float* out) override {
    cpu::PagedAttention(c, b, q, n_heads, scale, out, pool_);
  }

 private:
  ThreadPool pool_;
  cpu::QuantizedActivations xq_;  // reused across calls
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(int n_threads) { return std::make_unique<CpuBackend>(n_threads); }

}  // namespace herd
