// The attention split merge fused with the activation quantization of the O projection's GEMV
// input (LaunchMergeQuantize, attention_internal.h): one kernel instead of MergeSplitsKernel
// followed by QuantizeActivations. One CTA per (token, kv head): `workers` groups of
// group * head_dim / 8 threads, each thread 8 consecutive output values (the group's rows are
// consecutive in the output row). The warps turn each row's split (max, sum) pairs into weights
// (SplitWeights); worker w sums chunks w, w + workers, ... of kMergeChunk splits (MergeChunk, the
// order MergeSplitsKernel uses, so out is the same bit for bit) into shared memory; worker 0 adds
// the chunk sums in order — or reads the row back where the attention kernel wrote it itself (one
// split) — then QuantizeOctet writes them as QuantizeActivations does (a warp per Q8_K block).
// Cost: the partials once from L2, out and ~1.2 bytes per value written. At one token and 50-64
// splits the workers turn ~60 dependent L2 round trips into a few (1B Q4_K_M tg128 at 4,096
// positions on H200: 1,176 -> 1,345 tok/s; bench/results/cuda-session34-2026-11-29.md).
#include <algorithm>

#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/quant_act.cuh"

namespace herd::cuda::attn {
namespace {

template <DType F>
__global__ void MergeQuantizeKernel(const Params p, internal::ActOut o) {
  extern __shared__ float smem[];  // weights [group][kMaxSplits], then chunk sums [chunks][group * head_dim]
  PdlTrigger();
  PdlWait();  // the attention kernel's partials and rows
  const int t = blockIdx.x / p.n_kv_heads, kvh = blockIdx.x % p.n_kv_heads;
  const int hd = p.head_dim, gh = p.group * hd, n_oct = gh / 8;
  const int workers = static_cast<int>(blockDim.x) / n_oct, worker = static_cast<int>(threadIdx.x) / n_oct;
  const int ns = p.s_max > 1 ? p.nsplit[t] : 1;
  const int e0 = 8 * (static_cast<int>(threadIdx.x) % n_oct), r = e0 / hd, d0 = e0 - r * hd;
  const int64_t th0 = static_cast<int64_t>(t) * p.n_heads + static_cast<int64_t>(kvh) * p.group;  // first row
  float* dst = p.out + (th0 + r) * hd + d0;
  float v[8];
  if (ns > 1) {
    float* weights = smem;
    float* sums = smem + p.group * kMaxSplits;
    for (int rr = static_cast<int>(threadIdx.x / 32); rr < p.group; rr += static_cast<int>(blockDim.x / 32)) {
      SplitWeights(p.part_ml, th0 + rr, p.s_max, ns, weights + rr * kMaxSplits);
    }
    __syncthreads();
    const float* src = p.part_o + (th0 + r) * p.s_max * hd + d0;
    const float* w = weights + r * kMaxSplits;
    const int nc = (ns + kMergeChunk - 1) / kMergeChunk;
    float chunk[8];
    if (workers == 1) {
      for (int c = 0; c < nc; ++c) {
        MergeChunk<8>(w, src, hd, ns, c, chunk);
        MergeAddChunk(c, chunk, v);
      }
    } else {
      for (int c = worker; c < nc; c += workers) {
        MergeChunk<8>(w, src, hd, ns, c, chunk);
        float4* to = reinterpret_cast<float4*>(sums + c * gh + e0);
        to[0] = make_float4(chunk[0], chunk[1], chunk[2], chunk[3]);
        to[1] = make_float4(chunk[4], chunk[5], chunk[6], chunk[7]);
      }
      __syncthreads();
      if (worker != 0) return;
      for (int c = 0; c < nc; ++c) {
        const float4* from = reinterpret_cast<const float4*>(sums + c * gh + e0);
        const float4 a = from[0], b = from[1];
        const float x[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        MergeAddChunk(c, x, v);
      }
    }
    reinterpret_cast<float4*>(dst)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(dst)[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else {
    if (worker != 0) return;
    const float4 a = reinterpret_cast<const float4*>(dst)[0], b = reinterpret_cast<const float4*>(dst)[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  }
  internal::QuantizeOctet<F>(v, t, static_cast<int64_t>(kvh) * p.group * hd + e0, o);
}

}  // namespace

bool MergeQuantizeTakes(int32_t n_heads, int32_t group, int32_t head_dim, DType format) {
  const int64_t gh = static_cast<int64_t>(group) * head_dim;
  return (format == DType::kQ8_0 || format == DType::kQ8_1 || format == DType::kQ8_K) && gh % 256 == 0 && gh <= 8192 &&
         (static_cast<int64_t>(n_heads) * head_dim) % kStepValues == 0;
}

bool LaunchMergeQuantize(const Params& p, DType format, void* buffer, cudaStream_t stream,
                         internal::QuantizedActivations* q) {
  if (!MergeQuantizeTakes(p.n_heads, p.group, p.head_dim, format) || p.n_tokens <= 0) return false;
  const int64_t n_in = static_cast<int64_t>(p.n_heads) * p.head_dim;
  const internal::ActOut o = internal::MakeActOut(buffer, internal::MakeActLayout(p.n_tokens, n_in));
  const auto grid = static_cast<unsigned>(p.n_tokens * p.n_kv_heads);
  // Workers: one per chunk of splits, as many as 1,024 threads and 48 KB of shared memory (the
  // weights and the chunk sums; no opt-in needed) allow.
  const int64_t gh = static_cast<int64_t>(p.group) * p.head_dim, n_oct = gh / 8;
  const int64_t chunks = (std::max(p.s_max, 1) + kMergeChunk - 1) / kMergeChunk;
  const int64_t weight_floats = static_cast<int64_t>(p.group) * kMaxSplits;
  int64_t workers = std::min<int64_t>(chunks, 1024 / n_oct);
  if (workers < 2 || (weight_floats + chunks * gh) * static_cast<int64_t>(sizeof(float)) > 48 * 1024) workers = 1;
  const auto threads = static_cast<unsigned>(n_oct * workers);
  const auto smem = static_cast<size_t>(weight_floats + (workers > 1 ? chunks * gh : 0)) * sizeof(float);
  switch (format) {
    case DType::kQ8_0: LaunchPdl(MergeQuantizeKernel<DType::kQ8_0>, grid, threads, smem, stream, p, o); break;
    case DType::kQ8_1: LaunchPdl(MergeQuantizeKernel<DType::kQ8_1>, grid, threads, smem, stream, p, o); break;
    default: LaunchPdl(MergeQuantizeKernel<DType::kQ8_K>, grid, threads, smem, stream, p, o); break;
  }
  *q = internal::ActView(format, o);
  return true;
}

}  // namespace herd::cuda::attn
