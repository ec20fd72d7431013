// Row gathers on the GPU (token embeddings): the CUDA counterpart of ref::GetRows (kernels/ops.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/tensor.h"

namespace herd::cuda {

// out[r, :] = DequantizeRow(table row ids[r]) for r < n; out: [n, table.cols()] float32.
// table: device memory, any kWeightTypes type; ids: device int32. Bit-identical to
// ref::GetRows (the same float operations per element). Ids are not range-checked on the GPU
// (an id outside [0, table.rows()) reads out of bounds): the caller validates them on the host.
// Queued on `stream`; no allocation, no synchronization.
void GetRows(const TensorView& table, const int32_t* ids, int64_t n, float* out, cudaStream_t stream);

}  // namespace herd::cuda
