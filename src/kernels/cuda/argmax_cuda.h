// Greedy decoding on the GPU: the argmax of each logit row, so only token ids leave the device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace herd::cuda {

// ids[r] = first index of the largest value of x[r, :] (x: [n_rows, n_cols] float, device);
// NaNs never win; -1 for a row without a number. One block of 1024 threads per row (launches
// of up to 65,535 rows), or for up to 16 rows of 32Ki+ columns a thread-block cluster of 8
// blocks per row (Hopper); float4 loads when x is 16-byte aligned and n_cols % 4 == 0; x is
// read once. Programmatic dependent launch (launch_pdl.cuh): x may come from the kernel before.
void ArgMaxRows(const float* x, int64_t n_rows, int64_t n_cols, int32_t* ids, cudaStream_t stream);

// Pipelined decoding (Backend::ResolveFedBackIds): ids[i] < 0 becomes max(prev[-ids[i] - 1], 0),
// in place; ids, prev: [n] / [rows of the previous pass] int32, device. One thread per id.
void ResolveFedBackIds(int32_t* ids, int64_t n, const int32_t* prev, cudaStream_t stream);

}  // namespace herd::cuda
