// MatMulRunner's cuBLAS / cuBLASLt GEMMs on one stream: y = x · aᵀ with fp32 accumulation and
// output, half / bfloat16 operands through TunedGemm (gemm_tuned.h) where it takes the shape and
// cublasGemmEx otherwise, F32 through SGEMM (no TF32). The handle and its 32 MiB workspace are
// made on first use (Init: before any graph capture). Internal to the CUDA backend.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/gemm_tuned.h"

namespace herd::cuda {

class BlasGemm {
 public:
  explicit BlasGemm(cudaStream_t stream) : stream_(stream) {}
  ~BlasGemm();
  BlasGemm(const BlasGemm&) = delete;
  BlasGemm& operator=(const BlasGemm&) = delete;

  // Creates the handle and the workspace now (a capture cannot).
  void Init() { Handle(); }

  // y[:, 0:m] (rows of ldy floats) = xh · aᵀ, a: [m, k] and xh: [n_tok, k] of `type`
  // (CUDA_R_16F / CUDA_R_16BF).
  void Gemm(const void* a, cudaDataType_t type, int64_t m, int64_t k, const void* xh, int64_t n_tok, float* y,
            int64_t ldy);
  // The same in `slices` K bands of k / slices (dividing it), band s into y + s * m * n_tok
  // (rows of m floats): partial sums for the caller to add.
  void GemmSlicedK(const void* a, cudaDataType_t type, int64_t m, int64_t k, const void* xh, int64_t n_tok, float* y,
                   int slices);
  // y [n_tok, m] = x · aᵀ for F32 a: [m, k], x: [n_tok, k].
  void Sgemm(const float* a, int64_t m, int64_t k, const float* x, int64_t n_tok, float* y);

 private:
  static constexpr size_t kWorkspace = size_t{32} << 20;
  cublasHandle_t Handle();
  internal::TunedGemm& Tuned();

  cudaStream_t stream_;
  cublasHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  std::unique_ptr<internal::TunedGemm> tuned_;  // after workspace_: it uses that buffer
};

}  // namespace herd::cuda
