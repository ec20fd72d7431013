#include "kernels/cuda/blas_gemm.h"

#include "kernels/cuda/cuda_check.h"

namespace herd::cuda {

BlasGemm::~BlasGemm() {
  tuned_.reset();
  if (handle_ != nullptr) cublasDestroy(handle_);
}

cublasHandle_t BlasGemm::Handle() {
  if (handle_ == nullptr) {
    HERD_CUBLAS_CHECK(cublasCreate(&handle_));
    HERD_CUBLAS_CHECK(cublasSetStream(handle_, stream_));
    HERD_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.Get(kWorkspace, stream_), kWorkspace));
  }
  return handle_;
}

internal::TunedGemm& BlasGemm::Tuned() {
  if (tuned_ == nullptr) {
    Handle();  // the workspace
    tuned_ = std::make_unique<internal::TunedGemm>(stream_, workspace_.ptr, kWorkspace);
  }
  return *tuned_;
}

void BlasGemm::Gemm(const void* a, cudaDataType_t type, int64_t m, int64_t k, const void* xh, int64_t n_tok, float* y,
                    int64_t ldy) {
  if (Tuned().Run(a, type, m, k, xh, n_tok, y, ldy)) return;
  const float one = 1.f, zero = 0.f;
  HERD_CUBLAS_CHECK(cublasGemmEx(Handle(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(n_tok),
                                 static_cast<int>(k), &one, a, type, static_cast<int>(k), xh, type, static_cast<int>(k),
                                 &zero, y, CUDA_R_32F, static_cast<int>(ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void BlasGemm::GemmSlicedK(const void* a, cudaDataType_t type, int64_t m, int64_t k, const void* xh, int64_t n_tok,
                           float* y, int slices) {
  if (Tuned().Run(a, type, m, k, xh, n_tok, y, m, slices)) return;
  const float one = 1.f, zero = 0.f;
  const int64_t band = k / slices;
  HERD_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      Handle(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(n_tok), static_cast<int>(band), &one, a,
      type, static_cast<int>(k), band, xh, type, static_cast<int>(k), band, &zero, y, CUDA_R_32F, static_cast<int>(m),
      m * n_tok, slices, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void BlasGemm::Sgemm(const float* a, int64_t m, int64_t k, const float* x, int64_t n_tok, float* y) {
  const float one = 1.f, zero = 0.f;
  HERD_CUBLAS_CHECK(cublasSgemm(Handle(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(n_tok),
                                static_cast<int>(k), &one, a, static_cast<int>(k), x, static_cast<int>(k), &zero, y,
                                static_cast<int>(m)));
}

}  // namespace herd::cuda
