// Sampling on the GPU: each logit row's k most likely tokens, so only k candidates per row leave
// the device (the host sampler finishes from them: Sampler::SampleTopCandidates).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace herd::cuda {

// ids, vals: [n_rows, k] (device) = the k most likely entries of each row of x: [n_rows, n_cols]
// (device float), most likely first: higher value, then the lower index (+0 and -0 equal); NaN
// and -inf are never taken; slots past a row's count of other entries get id -1 and -inf.
// 1 <= k <= 64. One CTA per row: a 3-pass radix select of the k-th value over the row (~4 reads
// of the row from L2; 128256 columns: a few µs per row, rows in parallel), then the entries
// above it and the lowest-index ties at it, sorted.
void TopKRows(const float* x, int64_t n_rows, int64_t n_cols, int32_t k, int32_t* ids, float* vals,
              cudaStream_t stream);

}  // namespace herd::cuda
