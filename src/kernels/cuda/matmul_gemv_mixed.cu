// The mixed-pair instances of the quantized GEMV (gemv_quant_kernel.cuh): one launch for weights
// of a type and its MixPartner, e.g. Q/K in Q4_K with V in Q6_K.
#include "kernels/cuda/gemv_quant_kernel.cuh"

namespace herd::cuda::internal::gemv {

bool LaunchGemvQuantMixed(DType t0, const QuantArgs& a, int blocks, int per_block, bool pdl, cudaStream_t stream) {
  switch (t0) {
    case DType::kQ4_K:
      LaunchGemvQuant<DType::kQ4_K, MixPartner(DType::kQ4_K)>(a, blocks, per_block, pdl, stream);
      return true;
    case DType::kQ5_K:
      LaunchGemvQuant<DType::kQ5_K, MixPartner(DType::kQ5_K)>(a, blocks, per_block, pdl, stream);
      return true;
    case DType::kQ3_K:
      LaunchGemvQuant<DType::kQ3_K, MixPartner(DType::kQ3_K)>(a, blocks, per_block, pdl, stream);
      return true;
    case DType::kQ2_K:
      LaunchGemvQuant<DType::kQ2_K, MixPartner(DType::kQ2_K)>(a, blocks, per_block, pdl, stream);
      return true;
    default: return false;
  }
}

}  // namespace herd::cuda::internal::gemv
