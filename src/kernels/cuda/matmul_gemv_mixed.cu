// The mixed-pair instances of the quantized GEMV (gemv_quant_kernel.cuh): one launch for weights
// of a type and its MixPartner, e.g. Q/K in Q4_K with V in Q6_K.
#include "kernels/cuda/gemv_quant_kernel.cuh"

namespace herd::cuda::internal::gemv {

namespace {
template <DType T0>
bool Launch(const QuantArgs& a, int blocks, int per_block, bool pdl, cudaStream_t stream) {
  LaunchGemvQuant<T0, MixPartner(T0)>(a, blocks, per_block, pdl, stream);
  return true;
}
}  // namespace

bool LaunchGemvQuantMixed(DType t0, const QuantArgs& a, int blocks, int per_block, bool pdl, cudaStream_t stream) {
  switch (t0) {
    case DType::kQ4_K: return Launch<DType::kQ4_K>(a, blocks, per_block, pdl, stream);
    case DType::kQ5_K: return Launch<DType::kQ5_K>(a, blocks, per_block, pdl, stream);
    case DType::kQ3_K: return Launch<DType::kQ3_K>(a, blocks, per_block, pdl, stream);
    case DType::kQ2_K: return Launch<DType::kQ2_K>(a, blocks, per_block, pdl, stream);
    default: return false;
  }
}

}  // namespace herd::cuda::internal::gemv
