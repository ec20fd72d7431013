// Phase timing of GemvAddNormKernel (gemv_add_norm.cu), for diagnostic builds only: compile
// gemv_add_norm.cu with -DHERD_DIAG_ADDNORM_PHASES (bench/cuda/build_variants.sh) and run the
// binary as usual; at exit it prints, per launch slot, the median over CTAs of each phase. In
// normal builds the marks compile to nothing and DiagSlot() is 0.
//
// Marks (%globaltimer, ns), recorded by consumer thread 0 of each CTA unless noted: 0 entry,
// 1 the dependency wait returned, 2 x and y loaded, 3 after the first consumer barrier, 4 the
// Q8_K row quantized, 5 the norm done, 6 the dot products done, 7 the rows stored; 8 the
// producer's copies all landed (producer lane 0); 9-16 warp 0's chunks 0-3 (its wait for the
// chunk returned / its items done). A launch's slot is numbered on the host; a CUDA graph
// replays its captured numbers, so each launch of a step keeps its own slot and the last
// replay's times. DIAG_MARK / DIAG_MARK_BY expect the kernel's AddNormArgs `na` in scope. Used in
// bench/results/cuda-session29-2026-11-28.md.
#pragma once

#ifdef HERD_DIAG_ADDNORM_PHASES
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace herd::cuda::internal::gemv {

constexpr int kDiagSlots = 64, kDiagCtas = 256, kDiagMarks = 17;
__device__ unsigned long long g_diag[kDiagSlots][kDiagCtas][kDiagMarks];

__device__ __forceinline__ void DiagMark(int slot, int mark, unsigned thread) {
  if (threadIdx.x != thread || blockIdx.x >= kDiagCtas) return;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  g_diag[slot % kDiagSlots][blockIdx.x][mark] = t;
}

// Per slot with data: median over CTAs of entry -> wait returned, wait -> norm done, norm ->
// dots done, dots -> rows stored (us); then the CTAs' start spread and end spread.
inline void DumpPhases() {
  static unsigned long long h[kDiagSlots][kDiagCtas][kDiagMarks];
  if (cudaDeviceSynchronize() != cudaSuccess || cudaMemcpyFromSymbol(h, g_diag, sizeof(h)) != cudaSuccess) return;
  std::fprintf(stderr,
               "GemvAddNorm phases (us, median over CTAs; marks: 0 entry 1 released 2 x/y loaded 3 sync 4 "
               "quantized 5 norm done 6 dots done 7 rows stored; L: copies landed - released)\n"
               "slot   0-1   1-2   2-3   3-4   4-5   5-6   6-7 |     L | span(first release->last end) | start/end "
               "spread\n");
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  for (int s = 0; s < kDiagSlots; ++s) {
    std::vector<double> d[7], land;
    unsigned long long s_min = ~0ull, s_max = 0, e_min = ~0ull, e_max = 0, w_min = ~0ull;
    for (int c = 0; c < kDiagCtas; ++c) {
      const auto& m = h[s][c];
      if (m[0] == 0 || m[7] == 0) continue;
      for (int k = 0; k < 7; ++k) d[k].push_back(1e-3 * (static_cast<double>(m[k + 1]) - static_cast<double>(m[k])));
      if (m[8] != 0) land.push_back(1e-3 * (static_cast<double>(m[8]) - static_cast<double>(m[1])));
      s_min = std::min(s_min, m[0]), s_max = std::max(s_max, m[0]);
      e_min = std::min(e_min, m[7]), e_max = std::max(e_max, m[7]);
      w_min = std::min(w_min, m[1]);
    }
    if (d[0].empty()) continue;
    std::fprintf(stderr, "%4d", s);
    for (auto& v : d) std::fprintf(stderr, " %5.2f", median(v));
    // warp 0's chunks: wait returned / items done, each relative to the release (mark 1)
    std::fprintf(stderr, " | chunks");
    for (int k = 9; k < 17; ++k) {
      std::vector<double> v;
      for (int c = 0; c < kDiagCtas; ++c)
        if (h[s][c][0] != 0 && h[s][c][7] != 0 && h[s][c][k] != 0)
          v.push_back(1e-3 * (static_cast<double>(h[s][c][k]) - static_cast<double>(h[s][c][1])));
      std::fprintf(stderr, "%s%5.2f", k % 2 ? " " : "/", v.empty() ? -1.0 : median(v));
    }
    std::fprintf(stderr, " | %5.2f | %6.2f | %5.2f %5.2f (%zu CTAs)\n", land.empty() ? -1.0 : median(land),
                 1e-3 * static_cast<double>(e_max - w_min), 1e-3 * static_cast<double>(s_max - s_min),
                 1e-3 * static_cast<double>(e_max - e_min), d[0].size());
  }
}

// The next launch's slot; registers DumpPhases at exit on the first call.
inline int DiagSlot() {
  static std::atomic<int> slots{0};
  static const bool registered = [] { return std::atexit(DumpPhases) == 0; }();
  (void)registered;
  return slots.fetch_add(1);
}

}  // namespace herd::cuda::internal::gemv

#define DIAG_MARK_BY(m, thread) DiagMark(na.diag_slot, m, thread)
#else
namespace herd::cuda::internal::gemv {
inline int DiagSlot() { return 0; }
}  // namespace herd::cuda::internal::gemv
#define DIAG_MARK_BY(m, thread) \
  do {                          \
  } while (0)
#endif
#define DIAG_MARK(m) DIAG_MARK_BY(m, 0u)
