// ref::MatMul: the scalar oracle for y = x · Wᵀ. Cost: n_tok * n_out VecDot calls of n_in
// elements each, plus one activation quantization per token row; one scratch row allocated.
#include <cstdint>
#include <vector>

#include "base/check.h"
#include "kernels/matmul.h"
#include "kernels/quants.h"

namespace herd::ref {

void MatMul(const TensorView& w, const float* x, int64_t n_tok, float* y) {
  const int64_t n_in = w.cols();
  const int64_t n_out = w.rows();
  const DType xt = VecDotType(w.type);
  HERD_CHECK_MSG(n_in % Traits(w.type).block_size == 0 && n_in % Traits(xt).block_size == 0,
                 "MatMul: n_in=%lld incompatible with %s", static_cast<long long>(n_in), Traits(w.type).name.data());
  std::vector<uint8_t> xq(RowBytes(xt, n_in));
  for (int64_t t = 0; t < n_tok; ++t) {
    QuantizeRow(xt, x + t * n_in, xq.data(), n_in);
    for (int64_t o = 0; o < n_out; ++o) y[t * n_out + o] = VecDot(w.type, n_in, w.row(o), xq.data());
  }
}

}  // namespace herd::ref
