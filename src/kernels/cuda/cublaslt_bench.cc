// Times each cuBLASLt algorithm its heuristic offers for the tensor-core GEMM of MatMulRunner
// (y [n, m] float = x [n, k] half · W [m, k]ᵀ half, fp32 accumulation) against cublasGemmEx with
// CUBLAS_GEMM_DEFAULT (what MatMulRunner::Impl::Gemm calls), to see how far the default pick is
// from the best one at decode batch sizes. Weights are rotated over copies that together exceed
// the L2 cache (each call streams its weight from DRAM, as in a decode step).
//   herd_cuda_cublaslt_bench [--shapes M:K,...] [--tok N,...] [--algos A] [--iters I]
// Default shapes: llama-3.1-8b's Q/K/V as one matrix (6144:4096), O (4096:4096), down
// (4096:14336), gate/up (28672:4096), lm_head (128256:4096); tokens 128.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)
#define CB(x)                                                                    \
  do {                                                                           \
    cublasStatus_t s_ = (x);                                                     \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                           \
      std::fprintf(stderr, "%s:%d: cuBLAS status %d\n", __FILE__, __LINE__, s_); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

// "6144:4096,4096:4096" or "1,8,128": the numbers in order.
std::vector<long> ParseList(const char* s) {
  std::vector<long> v;
  for (const char* p = s; *p != '\0';) {
    char* end = nullptr;
    const long x = std::strtol(p, &end, 10);
    if (end == p) break;
    v.push_back(x);
    p = *end == ':' || *end == ',' ? end + 1 : end;
  }
  return v;
}

// Uploads n pseudo-random halves in [-1, 1] to p.
void Fill(__half* p, size_t n, unsigned seed) {
  std::vector<__half> h(n);
  for (size_t i = 0; i < n; ++i) {
    const unsigned r = (static_cast<unsigned>(i) * 2654435761u) ^ seed;
    h[i] = __float2half(static_cast<float>(r % 2001) / 1000.f - 1.f);
  }
  CK(cudaMemcpy(p, h.data(), n * sizeof(__half), cudaMemcpyHostToDevice));
}

// Mean microseconds per call of `call(copy)` over iters calls rotating the weight copies.
template <typename F>
float Time(cudaStream_t stream, int copies, int iters, F call) {
  for (int i = 0; i < 3; ++i) call(i % copies);
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a, stream));
  for (int i = 0; i < iters; ++i) call(i % copies);
  CK(cudaEventRecord(b, stream));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return 1000.f * ms / static_cast<float>(iters);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long> shapes = {6144, 4096, 4096, 4096, 4096, 14336, 28672, 4096, 128256, 4096};
  std::vector<long> toks = {128};
  int max_algos = 24, iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--shapes") == 0) shapes = ParseList(argv[i + 1]);
    if (std::strcmp(argv[i], "--tok") == 0) toks = ParseList(argv[i + 1]);
    if (std::strcmp(argv[i], "--algos") == 0) max_algos = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--iters") == 0) iters = std::atoi(argv[i + 1]);
  }
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  cublasHandle_t blas;
  CB(cublasCreate(&blas));
  CB(cublasSetStream(blas, stream));
  cublasLtHandle_t lt;
  CB(cublasLtCreate(&lt));
  const size_t ws_bytes = size_t{32} << 20;
  void* ws = nullptr;
  CK(cudaMalloc(&ws, ws_bytes));
  CB(cublasSetWorkspace(blas, ws, ws_bytes));

  for (size_t s = 0; s + 1 < shapes.size(); s += 2) {
    const long m = shapes[s], k = shapes[s + 1];
    const size_t w_elems = static_cast<size_t>(m) * k;
    const int copies = static_cast<int>(std::max<size_t>(2, (size_t{200} << 20) / (w_elems * 2) + 1));
    std::vector<__half*> w(copies);
    for (int c = 0; c < copies; ++c) {
      CK(cudaMalloc(&w[c], w_elems * 2));
      Fill(w[c], w_elems, 17u + static_cast<unsigned>(c));
    }
    for (long n : toks) {
      __half* x = nullptr;
      float* y = nullptr;
      CK(cudaMalloc(&x, static_cast<size_t>(n) * k * 2));
      CK(cudaMalloc(&y, static_cast<size_t>(n) * m * 4));
      Fill(x, static_cast<size_t>(n) * k, 5u);
      const float one = 1.f, zero = 0.f;
      const float t_default = Time(stream, copies, iters, [&](int c) {
        CB(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                        &one, w[c], CUDA_R_16F, static_cast<int>(k), x, CUDA_R_16F, static_cast<int>(k), &zero, y,
                        CUDA_R_32F, static_cast<int>(m), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      });
      cublasLtMatmulDesc_t desc;
      CB(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
      CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
      cublasLtMatrixLayout_t la, lb, lc;
      CB(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, k, m, k));
      CB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, k, n, k));
      CB(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));
      cublasLtMatmulPreference_t pref;
      CB(cublasLtMatmulPreferenceCreate(&pref));
      CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                              sizeof(ws_bytes)));
      std::vector<cublasLtMatmulHeuristicResult_t> res(static_cast<size_t>(max_algos));
      int found = 0;
      CB(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, max_algos, res.data(), &found));
      const double gb = static_cast<double>(w_elems) * 2 / 1e9;
      std::printf("shape %ld:%ld tok %ld: cublasGemmEx default %.1f us (%.0f GB/s); %d Lt algorithms\n", m, k, n,
                  t_default, gb / (t_default * 1e-6), found);
      float best = 1e30f;
      int best_i = -1;
      for (int a = 0; a < found; ++a) {
        if (res[a].state != CUBLAS_STATUS_SUCCESS) continue;
        const float t = Time(stream, copies, iters, [&](int c) {
          CB(cublasLtMatmul(lt, desc, &one, w[c], la, x, lb, &zero, y, lc, y, lc, &res[a].algo, ws, ws_bytes, stream));
        });
        int tile = 0, splitk = 0, stages = 0, red = 0;
        size_t got = 0;
        cublasLtMatmulAlgoConfigGetAttribute(&res[a].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &got);
        cublasLtMatmulAlgoConfigGetAttribute(&res[a].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof(splitk),
                                             &got);
        cublasLtMatmulAlgoConfigGetAttribute(&res[a].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages),
                                             &got);
        cublasLtMatmulAlgoConfigGetAttribute(&res[a].algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof(red),
                                             &got);
        std::printf("  algo %2d: %8.1f us (%4.0f GB/s)  tile %d splitK %d stages %d reduction %d ws %zu\n", a, t,
                    gb / (t * 1e-6), tile, splitk, stages, red, res[a].workspaceSize);
        if (t < best) best = t, best_i = a;
      }
      std::printf("  best: algo %d %.1f us = %.2fx the default\n", best_i, best, t_default / best);
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatrixLayoutDestroy(la);
      cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(lc);
      cublasLtMatmulDescDestroy(desc);
      CK(cudaFree(x));
      CK(cudaFree(y));
    }
    for (__half* p : w) CK(cudaFree(p));
  }
  return 0;
}
