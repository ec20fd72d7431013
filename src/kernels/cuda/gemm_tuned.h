// The tensor-core GEMM of MatMulRunner for large F16 / BF16 weights at decode batch sizes,
// through cuBLASLt with a per-shape algorithm choice: cublasGemmEx's default pick is far from
// the best for some shapes (H100, 8B down projection 4096 x 14336 at 128 tokens: 54.3 us with
// a 3-way split-K and its reduction kernel, 46.4 us with the heuristic's fourth candidate, no
// split; bench/results/cuda-switches-qkv-2026-11-26.md, herd_cuda_cublaslt_bench).
// Internal to the CUDA backend.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <tuple>

namespace herd::cuda::internal {

// One per stream (not thread-safe). Weights with m * k >= kMinElems at kMinTok..kMaxTok tokens are
// tuned once per token bucket (n rounded up to a power of two: a serving batch changes size
// every few steps), on the bucket's first call outside a graph capture: the heuristic's first
// kCandidates algorithms are timed on the caller's buffers (after a warm-up each, the least of
// kRounds timings of kRunsPerRound runs, the rounds going over all candidates in turn) and the
// fastest is kept if it beats the heuristic's first choice by 5% (close calls keep that one, so
// the choice, and with it the float summation order, rarely differs between processes). Session
// 25 saw separate processes pick lm_head kernels 13% apart with a single timing of 2 runs.
// Other token counts of the bucket reuse that algorithm where cuBLASLt accepts it for them.
// HERD_CUDA_GEMM_TUNE=0: never (Run returns false).
class TunedGemm {
 public:
  // Weights of at least 64 MiB in F16 (more than the H100's 50 MB L2, so the timing streams
  // them from memory as a decode step does; a smaller weight would be timed hot) at 17-128
  // tokens (three buckets: a few ms of timing per weight shape and process).
  static constexpr int64_t kMinElems = int64_t{32} << 20;
  static constexpr int64_t kMinTok = 17;
  static constexpr int64_t kMaxTok = 128;
  static constexpr int kCandidates = 8;
  static constexpr int kRounds = 3;
  static constexpr int kRunsPerRound = 2;

  // workspace: device memory of `workspace_bytes` for the algorithms (shared with cuBLAS:
  // both run on `stream` only).
  TunedGemm(cudaStream_t stream, void* workspace, size_t workspace_bytes);
  ~TunedGemm();
  TunedGemm(const TunedGemm&) = delete;
  TunedGemm& operator=(const TunedGemm&) = delete;

  // Queues y[:, 0:m] (rows of ldy floats) = x · aᵀ with a: [m, k] and x: [n, k] of `type`
  // (CUDA_R_16F / CUDA_R_16BF), fp32 accumulation. False, queueing nothing, where the shape is
  // not tuned (too small, too many tokens, tuning off, or first seen during a capture): the
  // caller then runs cublasGemmEx.
  // slices > 1 (dividing k): K in that many equal slices as one batched GEMM, slice s writing
  // y + s * ldy * n (the caller adds the slices: a split-K without cuBLAS's reduction kernel).
  bool Run(const void* a, cudaDataType_t type, int64_t m, int64_t k, const void* x, int64_t n, float* y, int64_t ldy,
           int slices = 1);

 private:
  // The descriptors of one exact shape and its algorithm.
  struct Shape {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lx = nullptr, ly = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool use = false;             // false: no algorithm (cublasGemmEx runs)
    int64_t m = 0, k = 0, n = 0;  // for the tuning log
    int slices = 1;
  };
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int, int>;  // m, k, n (or bucket), ldy, type, slices
  // The bucket's choice (tuning it at this call's n, which leaves y computed) or the heuristic's.
  void Describe(const Key& key, Shape& s);
  bool Tune(Shape& s, const void* a, const void* x, float* y);
  void Launch(const Shape& s, const cublasLtMatmulAlgo_t& algo, const void* a, const void* x, float* y);

  cudaStream_t stream_;
  void* workspace_;
  size_t workspace_bytes_;
  cublasLtHandle_t lt_ = nullptr;
  std::map<Key, Shape> shapes_;                // exact shapes
  std::map<Key, cublasLtMatmulAlgo_t> tuned_;  // per bucket: the chosen algorithm
};

}  // namespace herd::cuda::internal
