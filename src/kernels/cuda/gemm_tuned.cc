#include "kernels/cuda/gemm_tuned.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "base/check.h"
#include "base/log.h"
#include "kernels/cuda/cuda_check.h"

namespace herd::cuda::internal {
namespace {

bool TuningEnabled() {
  static const bool on = [] {
    const char* e = std::getenv("HERD_CUDA_GEMM_TUNE");
    return e == nullptr || std::strcmp(e, "0") != 0;
  }();
  return on;
}
// HERD_CUDA_GEMM_TUNE_LOG=1: one log line per tuned shape (the choice and every candidate's time).
bool TuneLog() {
  static const bool on = [] {
    const char* e = std::getenv("HERD_CUDA_GEMM_TUNE_LOG");
    return e != nullptr && std::strcmp(e, "0") != 0;
  }();
  return on;
}

}  // namespace

TunedGemm::TunedGemm(cudaStream_t stream, void* workspace, size_t workspace_bytes)
    : stream_(stream), workspace_(workspace), workspace_bytes_(workspace_bytes) {}

TunedGemm::~TunedGemm() {
  for (auto& [key, s] : shapes_) {
    if (s.la != nullptr) cublasLtMatrixLayoutDestroy(s.la);
    if (s.lx != nullptr) cublasLtMatrixLayoutDestroy(s.lx);
    if (s.ly != nullptr) cublasLtMatrixLayoutDestroy(s.ly);
    if (s.desc != nullptr) cublasLtMatmulDescDestroy(s.desc);
  }
  if (lt_ != nullptr) cublasLtDestroy(lt_);
}

bool TunedGemm::Run(const void* a, cudaDataType_t type, int64_t m, int64_t k, const void* x, int64_t n, float* y,
                    int64_t ldy, int slices) {
  HERD_CHECK(slices >= 1 && k % slices == 0);
  if (!TuningEnabled() || m * k < kMinElems || n > kMaxTok || n < kMinTok) return false;
  const Key key{m, k, n, ldy, static_cast<int>(type), slices};
  auto it = shapes_.find(key);
  if (it != shapes_.end()) {
    if (!it->second.use) return false;
    Launch(it->second, it->second.algo, a, x, y);
    return true;
  }
  int64_t bucket = 1;
  while (bucket < n) bucket *= 2;
  const Key bucket_key{m, k, bucket, ldy, static_cast<int>(type), slices};
  const auto chosen = tuned_.find(bucket_key);
  if (chosen == tuned_.end()) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    HERD_CUDA_CHECK(cudaStreamIsCapturing(stream_, &capture));
    if (capture != cudaStreamCaptureStatusNone) return false;  // timing needs a live stream
  }
  Shape& s = shapes_.emplace(key, Shape{}).first->second;
  Describe(key, s);
  if (chosen == tuned_.end()) {
    if (!Tune(s, a, x, y)) return false;  // leaves y computed when it tuned
    tuned_.emplace(bucket_key, s.algo);
    return true;
  }
  // The bucket's algorithm, where cuBLASLt takes it at this n.
  cublasLtMatmulHeuristicResult_t check{};
  s.use =
      cublasLtMatmulAlgoCheck(lt_, s.desc, s.la, s.lx, s.ly, s.ly, &chosen->second, &check) == CUBLAS_STATUS_SUCCESS &&
      check.workspaceSize <= workspace_bytes_;
  if (!s.use) return false;
  s.algo = chosen->second;
  Launch(s, s.algo, a, x, y);
  return true;
}

void TunedGemm::Launch(const Shape& s, const cublasLtMatmulAlgo_t& algo, const void* a, const void* x, float* y) {
  const float one = 1.f, zero = 0.f;
  HERD_CUBLAS_CHECK(cublasLtMatmul(lt_, s.desc, &one, a, s.la, x, s.lx, &zero, y, s.ly, y, s.ly, &algo, workspace_,
                                   workspace_bytes_, stream_));
}

void TunedGemm::Describe(const Key& key, Shape& s) {
  const auto [m, k, n, ldy, type_int, slices] = key;
  const auto type = static_cast<cudaDataType_t>(type_int);
  s.m = m, s.k = k, s.n = n, s.slices = slices;
  if (lt_ == nullptr) HERD_CUBLAS_CHECK(cublasLtCreate(&lt_));
  // Column-major, as cublasGemmEx(T, N, m, n, k): y (m x n, ld ldy) = aᵀ (a: k x m, ld k) · x (k x n).
  HERD_CUBLAS_CHECK(cublasLtMatmulDescCreate(&s.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tx = CUBLAS_OP_N;
  HERD_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  HERD_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tx, sizeof(tx)));
  // With slices: each batch entry is a k / slices column band of a and x (offset k / slices
  // elements, the same leading dimension) and its own y (offset ldy * n).
  const int64_t ks = k / slices;
  HERD_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s.la, type, static_cast<uint64_t>(ks), static_cast<uint64_t>(m), k));
  HERD_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s.lx, type, static_cast<uint64_t>(ks), static_cast<uint64_t>(n), k));
  HERD_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&s.ly, CUDA_R_32F, static_cast<uint64_t>(m), static_cast<uint64_t>(n), ldy));
  if (slices > 1) {
    const int32_t count = slices;
    const int64_t band = ks, out = ldy * n;
    for (cublasLtMatrixLayout_t l : {s.la, s.lx, s.ly}) {
      HERD_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      const int64_t& stride = l == s.ly ? out : band;
      HERD_CUBLAS_CHECK(
          cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
  }
}

bool TunedGemm::Tune(Shape& s, const void* a, const void* x, float* y) {
  cublasLtMatmulPreference_t pref = nullptr;
  HERD_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  HERD_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &workspace_bytes_, sizeof(workspace_bytes_)));
  std::vector<cublasLtMatmulHeuristicResult_t> found(kCandidates);
  int n_found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(lt_, s.desc, s.la, s.lx, s.ly, s.ly, pref, kCandidates, found.data(), &n_found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || n_found == 0) return false;  // cublasGemmEx runs this shape
  cudaEvent_t begin = nullptr, end = nullptr;
  HERD_CUDA_CHECK(cudaEventCreate(&begin));
  HERD_CUDA_CHECK(cudaEventCreate(&end));
  // Each candidate's time: the least of kRounds timings of kRunsPerRound launches, the rounds
  // going over all candidates in turn (a slow moment of the GPU then costs every candidate one
  // round, not one candidate its only timing).
  std::vector<float> ms(static_cast<size_t>(n_found), std::numeric_limits<float>::infinity());
  int first = -1;  // the heuristic's first working choice
  for (int i = 0; i < n_found; ++i) {
    if (found[i].state != CUBLAS_STATUS_SUCCESS) continue;
    if (first < 0) first = i;
    Launch(s, found[i].algo, a, x, y);  // warm-up
  }
  for (int round = 0; round < kRounds && first >= 0; ++round) {
    for (int i = first; i < n_found; ++i) {
      if (found[i].state != CUBLAS_STATUS_SUCCESS) continue;
      HERD_CUDA_CHECK(cudaEventRecord(begin, stream_));
      for (int r = 0; r < kRunsPerRound; ++r) Launch(s, found[i].algo, a, x, y);
      HERD_CUDA_CHECK(cudaEventRecord(end, stream_));
      HERD_CUDA_CHECK(cudaEventSynchronize(end));
      float t = 0.f;
      HERD_CUDA_CHECK(cudaEventElapsedTime(&t, begin, end));
      ms[i] = std::min(ms[i], t);
    }
  }
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  if (first < 0) return false;
  int best = first;
  for (int i = first; i < n_found; ++i)
    if (ms[i] < ms[best]) best = i;
  const float first_ms = ms[first], best_ms = ms[best];
  // Keep the heuristic's first choice unless another is clearly faster.
  const int chosen = best_ms < 0.95f * first_ms ? best : first;
  s.algo = found[chosen].algo;
  if (TuneLog()) {
    char times[kCandidates * 24] = "";
    size_t used = 0;
    for (int i = first; i < n_found && used < sizeof(times); ++i) {
      if (found[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const int w = std::snprintf(times + used, sizeof(times) - used, " %d:%.1f", i, ms[i] * 1e3f / kRunsPerRound);
      if (w > 0) used += static_cast<size_t>(w);
    }
    HERD_LOG(kInfo, "TunedGemm %ldx%ld n=%ld slices=%d: candidate %d of %d (us per run:%s)", static_cast<long>(s.m),
             static_cast<long>(s.k), static_cast<long>(s.n), s.slices, chosen, n_found, times);
  }
  s.use = true;
  Launch(s, s.algo, a, x, y);  // y as the chosen algorithm computes it
  return true;
}

}  // namespace herd::cuda::internal
