// Optimized host implementations of the non-matmul ops (parallel over the thread pool,
// vectorised where it matters). Same contracts as the herd::ref versions in kernels/ops.h
// and kernels/attention.h.
#pragma once

#include "base/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/ops.h"

namespace herd::cpu {

void RmsNorm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t n_cols, float* out,
             ThreadPool& pool);
void Rope(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* positions, const float* inv_freq,
          int32_t n_rot, ThreadPool& pool);
void SwiGlu(const float* gate, const float* up, float* out, int64_t n, ThreadPool& pool);
void StoreKv(const KvLayerView& cache, const AttentionBatch& batch, const float* k, const float* v);
// Online-softmax attention; the query heads that share a kv head are processed together so
// each K/V vector is loaded once per token. Parallel over (token, kv head).
void PagedAttention(const KvLayerView& cache, const AttentionBatch& batch, const float* q, int32_t n_heads, float scale,
                    float* out, ThreadPool& pool);

}  // namespace herd::cpu
