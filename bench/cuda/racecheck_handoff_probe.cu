// Does compute-sanitizer racecheck follow GemmQuantTc's producer/consumer handoff? Warp 1 fills
// buf[h & 1] for steps h = 0..7 and arrives on FULL[h & 1] (named barrier 1 + b); warp 0 syncs on
// FULL, reads (ldmatrix.x4 in mode 0, as the mma warps do; plain loads in mode 1) and arrives on
// EMPTY (3 + b) for steps h + 2 < 8; the producer syncs on EMPTY before refilling a buffer.
// Build: nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -lineinfo racecheck_handoff_probe.cu
// Run:   compute-sanitizer --tool racecheck ./a.out   (H100, 2026-11-24: 0 hazards, sums 28)
#include <cstdio>
#include <cstdint>
__device__ __forceinline__ void BarSync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void BarArrive(int id, int n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__global__ void Probe(int* out, int mode) {
  __shared__ __align__(16) uint16_t buf[2][32][8];  // 2 buffers of four 8x8 b16 matrices
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  constexpr int kSteps = 8;
  if (warp == 1) {
    for (int h = 0; h < kSteps; ++h) {
      const int b = h & 1;
      if (h - 2 >= 0) BarSync(3 + b, 64);
      for (int i = 0; i < 8; ++i) buf[b][lane][i] = static_cast<uint16_t>(h);
      BarArrive(1 + b, 64);
    }
    return;
  }
  int sum = 0;
  for (int h = 0; h < kSteps; ++h) {
    const int b = h & 1;
    BarSync(1 + b, 64);
    uint32_t r0, r1 = 0, r2 = 0, r3 = 0;
    const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(&buf[b][lane][0]));
    if (mode == 0) {
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
    } else {
      r0 = buf[b][lane][0] | (buf[b][lane][1] << 16);
    }
    sum += static_cast<int>(r0 & 0xFFFF) + static_cast<int>((r1 | r2 | r3) & 0);
    if (h + 2 < kSteps) BarArrive(3 + b, 64);
  }
  out[lane] = sum;
}
int main() {
  int* d;
  cudaMalloc(&d, 32 * sizeof(int));
  for (int mode = 0; mode < 2; ++mode) {
    Probe<<<1, 64>>>(d, mode);
    int h[32];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    std::printf("mode %d (%s): sum %d (expected 28)\n", mode, mode ? "lds" : "ldmatrix", h[7]);
  }
  return 0;
}
