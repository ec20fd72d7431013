// How fast can a decode attention kernel stream a paged F16 KV cache, before any math? Reads the
// K and V rows of `seqs` sequences x `ctx` positions the way the SIMT decode kernel does (one CTA
// of 128 threads per (sequence, kv head), 32-position tiles copied to shared memory with cp.async,
// STAGES - 1 tiles ahead, a barrier per tile) and does nothing with them, for two cache layouts:
//   nhd: a block is [block_size][n_kv_heads][head_dim] (herd's KvCache): a kv head's row of one
//        position is head_dim * 2 bytes, the next position's row n_kv_heads rows further;
//   hnd: a block is [n_kv_heads][block_size][head_dim]: a kv head's 16 positions are contiguous.
// Occupancy is set with extra dynamic shared memory (CTAS per SM); block tables are in order or
// shuffled. Prints GB/s of K + V bytes (the bytes an attention must read).
//   build/bin/herd_cuda_kv_stream_bench [--seqs 128] [--ctx 576]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_check.h"

namespace {

constexpr int kThreads = 128;
constexpr int kTile = 32;      // positions per stage
constexpr int kHeadDim = 128;  // F16: 256-byte rows
constexpr int kBlock = 16;     // positions per cache block
constexpr int kRowBytes = kHeadDim * 2;
constexpr int kStageBytes = 2 * kTile * kRowBytes;  // K and V of one tile: 16 KB

__device__ __forceinline__ void CpAsync16(void* dst, const void* src, bool valid) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0));
}

template <bool kHnd, int kStages>
__global__ void __launch_bounds__(kThreads)
    StreamKv(const uint8_t* __restrict__ k, const uint8_t* __restrict__ v, const int32_t* __restrict__ tables,
             int max_blocks, int ctx, int n_kv, unsigned* sink) {
  extern __shared__ __align__(16) uint8_t smem[];
  const int seq = blockIdx.x / n_kv, kvh = blockIdx.x % n_kv, tid = threadIdx.x;
  const int32_t* table = tables + static_cast<int64_t>(seq) * max_blocks;
  const int tiles = (ctx + kTile - 1) / kTile;
  constexpr int kPieces = kTile * kRowBytes / 16 / kThreads;  // 16-byte copies per thread per tensor: 4
  auto issue = [&](int tile, int st) {
    uint8_t* kd = smem + st * kStageBytes;
    uint8_t* vd = kd + kTile * kRowBytes;
#pragma unroll
    for (int i = 0; i < kPieces; ++i) {
      const int idx = tid + i * kThreads, j = idx / (kRowBytes / 16), piece = idx % (kRowBytes / 16);
      const int pos = tile * kTile + j;
      const bool ok = pos < ctx;
      int64_t off = 0;
      if (ok) {
        const int64_t blk = table[pos / kBlock], in = pos % kBlock;
        off = (kHnd ? (blk * n_kv + kvh) * kBlock + in : (blk * kBlock + in) * n_kv + kvh) * kRowBytes + piece * 16;
      }
      CpAsync16(kd + j * kRowBytes + piece * 16, k + off, ok);
      CpAsync16(vd + j * kRowBytes + piece * 16, v + off, ok);
    }
  };
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles) issue(s, s);
    asm volatile("cp.async.commit_group;\n" ::);
  }
  unsigned acc = 0;
  for (int t = 0; t < tiles; ++t) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 2));
    __syncthreads();
    if (t + kStages - 1 < tiles) issue(t + kStages - 1, (t + kStages - 1) % kStages);
    asm volatile("cp.async.commit_group;\n" ::);
    acc ^= reinterpret_cast<const unsigned*>(smem + (t % kStages) * kStageBytes)[tid];
  }
  asm volatile("cp.async.wait_group 0;\n" ::);
  if (acc == 0x9e3779b9u) *sink = acc;  // keeps the reads
}

// The tensor-core decode kernel's structure (attention_decode_tc.cu): the CTA's 4 warps stream
// 16-position chunks w, w + 4, ... each through its own ring of kStages stages, no CTA barrier.
template <int kStages>
__global__ void __launch_bounds__(kThreads)
    StreamKvWarpRings(const uint8_t* __restrict__ k, const uint8_t* __restrict__ v, const int32_t* __restrict__ tables,
                      int max_blocks, int ctx, int n_kv, unsigned* sink) {
  extern __shared__ __align__(16) uint8_t smem[];
  constexpr int kChunk = 16, kChunkBytes = 2 * kChunk * kRowBytes;  // 8 KB
  const int seq = blockIdx.x / n_kv, kvh = blockIdx.x % n_kv, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int32_t* table = tables + static_cast<int64_t>(seq) * max_blocks;
  const int chunks = (ctx + kChunk - 1) / kChunk;
  const int mine = chunks > warp ? (chunks - warp + 3) / 4 : 0;
  uint8_t* ring = smem + warp * kStages * kChunkBytes;
  auto issue = [&](int c, int st) {
    uint8_t* kd = ring + st * kChunkBytes;
    uint8_t* vd = kd + kChunk * kRowBytes;
#pragma unroll
    for (int i = 0; i < kChunk * kRowBytes / 16 / 32; ++i) {
      const int idx = lane + 32 * i, j = idx / (kRowBytes / 16), piece = idx % (kRowBytes / 16);
      const int pos = c * kChunk + j;
      const bool ok = pos < ctx;
      int64_t off = 0;
      if (ok)
        off =
            ((static_cast<int64_t>(table[pos / kBlock]) * kBlock + pos % kBlock) * n_kv + kvh) * kRowBytes + piece * 16;
      CpAsync16(kd + j * kRowBytes + piece * 16, k + off, ok);
      CpAsync16(vd + j * kRowBytes + piece * 16, v + off, ok);
    }
  };
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < mine) issue(warp + 4 * s, s);
    asm volatile("cp.async.commit_group;\n" ::);
  }
  unsigned acc = 0;
  for (int c = 0; c < mine; ++c) {
    if (c + kStages - 1 < mine) issue(warp + 4 * (c + kStages - 1), (c + kStages - 1) % kStages);
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kStages - 1));
    __syncwarp();
    acc ^= reinterpret_cast<const unsigned*>(ring + (c % kStages) * kChunkBytes)[lane];
    __syncwarp();
  }
  asm volatile("cp.async.wait_group 0;\n" ::);
  if (acc == 0x9e3779b9u) *sink = acc;
}

template <typename Kernel>
float Time(Kernel kernel, const char* name, int min_smem, const uint8_t* k, const uint8_t* v, const int32_t* tables,
           int max_blocks, int seqs, int ctx, int n_kv, int ctas_per_sm, unsigned* sink) {
  // Shared memory per CTA so that at most ctas_per_sm fit on an SM (228 KB, 1 KB reserved per CTA).
  const int smem = std::max(min_smem, 228 * 1024 / ctas_per_sm - 1024 - 16);
  HERD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaEvent_t a, b;
  HERD_CUDA_CHECK(cudaEventCreate(&a));
  HERD_CUDA_CHECK(cudaEventCreate(&b));
  const int reps = 20;
  for (int r = 0; r < 3; ++r) kernel<<<seqs * n_kv, kThreads, smem>>>(k, v, tables, max_blocks, ctx, n_kv, sink);
  HERD_CUDA_CHECK(cudaEventRecord(a));
  for (int r = 0; r < reps; ++r) kernel<<<seqs * n_kv, kThreads, smem>>>(k, v, tables, max_blocks, ctx, n_kv, sink);
  HERD_CUDA_CHECK(cudaEventRecord(b));
  HERD_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  HERD_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  int per_sm = 0;
  HERD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
  std::printf("%s  CTAs/SM %d: %7.1f us  %6.0f GB/s\n", name, per_sm, 1000.f * ms / reps,
              2.0 * seqs * ctx * n_kv * kRowBytes / (1e6 * ms / reps));
  return ms / reps;
}

template <bool kHnd, int kStages>
float Run(const uint8_t* k, const uint8_t* v, const int32_t* tables, int max_blocks, int seqs, int ctx, int n_kv,
          int ctas_per_sm, unsigned* sink) {
  char name[64];
  std::snprintf(name, sizeof(name), "%s stages %d", kHnd ? "hnd" : "nhd", kStages);
  return Time(StreamKv<kHnd, kStages>, name, kStages * kStageBytes, k, v, tables, max_blocks, seqs, ctx, n_kv,
              ctas_per_sm, sink);
}

template <int kStages>
float RunRings(const uint8_t* k, const uint8_t* v, const int32_t* tables, int max_blocks, int seqs, int ctx, int n_kv,
               int ctas_per_sm, unsigned* sink) {
  char name[64];
  std::snprintf(name, sizeof(name), "nhd warp rings, stages %d", kStages);
  return Time(StreamKvWarpRings<kStages>, name, 4 * kStages * 8192, k, v, tables, max_blocks, seqs, ctx, n_kv,
              ctas_per_sm, sink);
}

}  // namespace

int main(int argc, char** argv) {
  int seqs = 128, ctx = 576;
  const int n_kv = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seqs") == 0) seqs = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--ctx") == 0) ctx = std::atoi(argv[i + 1]);
  }
  const int max_blocks = (ctx + kBlock - 1) / kBlock;
  const int64_t n_blocks = static_cast<int64_t>(seqs) * max_blocks;
  const size_t bytes = n_blocks * kBlock * n_kv * kRowBytes;
  uint8_t *k = nullptr, *v = nullptr;
  unsigned* sink = nullptr;
  int32_t* tables = nullptr;
  HERD_CUDA_CHECK(cudaMalloc(&k, bytes));
  HERD_CUDA_CHECK(cudaMalloc(&v, bytes));
  HERD_CUDA_CHECK(cudaMemset(k, 1, bytes));
  HERD_CUDA_CHECK(cudaMemset(v, 1, bytes));
  HERD_CUDA_CHECK(cudaMalloc(&sink, 4));
  HERD_CUDA_CHECK(cudaMalloc(&tables, n_blocks * 4));
  std::printf("%d seqs x %d positions, 8 kv heads x 128 dims F16: K + V %.1f MB\n", seqs, ctx, 2.0 * bytes / 1e6);
  for (int shuffled = 0; shuffled < 2; ++shuffled) {
    std::vector<int32_t> t(n_blocks);
    std::iota(t.begin(), t.end(), 0);
    if (shuffled) std::shuffle(t.begin(), t.end(), std::mt19937(7));
    HERD_CUDA_CHECK(cudaMemcpy(tables, t.data(), n_blocks * 4, cudaMemcpyHostToDevice));
    std::printf("block tables %s\n", shuffled ? "shuffled" : "in order");
    Run<false, 3>(k, v, tables, max_blocks, seqs, ctx, n_kv, 4, sink);
    Run<true, 3>(k, v, tables, max_blocks, seqs, ctx, n_kv, 4, sink);
    Run<false, 2>(k, v, tables, max_blocks, seqs, ctx, n_kv, 4, sink);
    Run<true, 2>(k, v, tables, max_blocks, seqs, ctx, n_kv, 4, sink);
    Run<false, 4>(k, v, tables, max_blocks, seqs, ctx, n_kv, 3, sink);
    Run<true, 4>(k, v, tables, max_blocks, seqs, ctx, n_kv, 3, sink);
    RunRings<2>(k, v, tables, max_blocks, seqs, ctx, n_kv, 3, sink);
    RunRings<2>(k, v, tables, max_blocks, seqs, ctx, n_kv, 2, sink);
    RunRings<3>(k, v, tables, max_blocks, seqs, ctx, n_kv, 2, sink);
  }
  return 0;
}
