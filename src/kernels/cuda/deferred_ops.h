// The ops CudaBackend holds back until the next op decides how they run (cuda_backend.cu): at
// most one is pending at a time; the next op either takes it into its own kernel or launches it
// first (the backend's Flush*). Internal to the CUDA backend.
#pragma once

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/attention_cuda.h"
#include "tensor/tensor.h"

namespace herd::cuda {

// A MatMul's output held as MatMulSlicedK's partial sums [n][n_tok][rows] (CudaBackend::MatMul).
struct PendingSlices {
  float* y;
  const float* parts;
  int n;
  int64_t n_tok, rows;
};

// A one-row AddRmsNorm announced for a K-quant matmul, not yet launched (CudaBackend::AddRmsNorm).
struct PendingNorm {
  float* x;
  const float* y;
  const float* weight;
  float eps;
  int64_t n_cols;
  float* out;
  TensorView next;
};

// A RopeStoreKv not yet launched (CudaBackend::RopeStoreKv).
struct PendingRope {
  KvLayerView cache;
  AttentionBatch batch;
  int32_t n_heads;
  RopeStoreArgs args;
};

// MatMulConcatenated's Q/K/V output not yet copied to the callers' buffers (MatMulShared).
struct PendingSplit {
  const void* weight;  // the first weight's data
  const float* all;    // [n_tok, ld]
  int64_t n_tok, ld;
  float* ys[3];
  int64_t cols[3];
};

}  // namespace herd::cuda
