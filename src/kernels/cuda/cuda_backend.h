// CudaBackend: the Backend (kernels/backend.h) on one NVIDIA GPU. Tensors live in device memory
// (cudaMalloc); ops are queued on one CUDA stream in call order; Synchronize() waits for them.
// Weights are uploaded once by PrepareWeight in their file layout (quantized blocks stay
// quantized). Matmuls go through MatMulRunner (matmul_cuda.h).
#pragma once

#include <memory>

#include "base/status.h"
#include "kernels/backend.h"

namespace herd::cuda {

// Errors: no usable device (reason from the driver), index out of range.
Result<std::unique_ptr<Backend>> MakeCudaBackend(int device_index);

}  // namespace herd::cuda
