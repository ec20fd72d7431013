// Tensor-core paged attention for prefill runs over an F16 KV cache (head_dim 64 or 128, GQA
// group <= 64): flash-attention-2 style with mma.sync m16n8k16 (f16 inputs, fp32 accumulators).
// Same work split as the SIMT PrefillKernel (attention_kernel.cuh) but with 64 query rows per
// item (tokens × the kv head's query heads, rows r = token * group + head) and 64-position KV
// tiles; split-K partials in the same format, merged by the same kernel.
//
// Per CTA: 4 warps, warp w owns rows [16w, 16w + 16). Q is read once from global memory, scaled
// by scale·log2(e), rounded to f16 and kept as A fragments in registers. Per KV tile (double-
// buffered cp.async, 16-byte chunks, slots through the block table; rows padded by 16 bytes so
// ldmatrix is conflict-free): S = Q·Kᵀ (ldmatrix of K rows = B fragments), causal mask, online
// softmax in fp32 on the accumulators (a row lives in one quad of lanes), P rounded to f16 and
// reused as A fragments, O += P·V (ldmatrix.trans of V rows). Numerics: Q and P in f16 (2^-11
// relative rounding), everything else fp32.
#include <cuda_fp16.h>

#include <atomic>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_pdl.cuh"

namespace herd::cuda::attn {
namespace {

constexpr int kRows = 64;  // query rows per CTA
constexpr int kBn = 64;    // KV positions per tile
constexpr int kStagesTc = 2;

template <int HD>
constexpr int kPitch = HD * 2 + 16;  // bytes per K/V row in shared memory
template <int HD>
constexpr int kSmem = kStagesTc * 2 * kBn* kPitch<HD>;

// Grid: one CTA per (token, split, kv head), kv head fastest; CTAs whose token does not start a
// run item exit. Rows per item: nh = group heads × len tokens, len <= kRows / group.
template <int HD>
__global__ void __launch_bounds__(128) PrefillTcKernel(const Params p) {
  extern __shared__ float4 smem4[];
  uint8_t* smem = reinterpret_cast<uint8_t*>(smem4);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  int rest = blockIdx.x;
  const int kvh = rest % p.n_kv_heads;
  rest /= p.n_kv_heads;
  const int split = rest % p.s_max;
  const int t = rest / p.s_max;
  const int seq = p.seq[t], pos0 = p.pos[t];
  const bool has_prev = t > 0 && p.seq[t - 1] == seq && p.pos[t - 1] == pos0 - 1;
  const bool has_next = t + 1 < p.n_tokens && p.seq[t + 1] == seq && p.pos[t + 1] == pos0 + 1;
  if (!has_prev && !has_next) return;  // a decode token
  const int nh = p.group;
  const int run_cap = kRows / nh;
  if (has_prev && pos0 % run_cap != 0) return;  // inside an item that starts earlier
  int len = 1;
  while (len < run_cap && t + len < p.n_tokens && p.seq[t + len] == seq && p.pos[t + len] == pos0 + len &&
         (pos0 + len) % run_cap != 0) {
    ++len;
  }
  const int rows = len * nh;
  const int ctx = pos0 + len;
  const int n_tiles = (ctx + kBn - 1) / kBn;
  int ns = (n_tiles + kMinTilesPerSplit - 1) / kMinTilesPerSplit;
  ns = ns < p.s_max ? ns : p.s_max;
  const int tps = (n_tiles + ns - 1) / ns;
  ns = (n_tiles + tps - 1) / tps;
  if (p.nsplit != nullptr && split == 0 && kvh == 0 && tid < len) p.nsplit[t + tid] = ns;
  if (split >= ns) return;
  const int tile_begin = split * tps, tile_end = min(n_tiles, tile_begin + tps);
  const int h0 = kvh * p.group;
  const int32_t* table = p.tables[seq];

  // K/V tile copies: 64 positions × HD/8 chunks of 16 bytes each for K and V.
  constexpr int kChunks = HD / 8;
  auto issue = [&](int tile, int st) {
    uint8_t* kd = smem + st * 2 * kBn * kPitch<HD>;
    uint8_t* vd = kd + kBn * kPitch<HD>;
    constexpr int kIters = kBn * kChunks / 128;
    int64_t off[kIters];
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int idx = tid + it * 128, j = idx / kChunks, c = idx % kChunks;
      const int pp = tile * kBn + j;
      off[it] = -1;
      if (pp < ctx) {
        const int lb = p.block_shift >= 0 ? pp >> p.block_shift : pp / p.block_size;
        const int64_t slot = static_cast<int64_t>(table[lb]) * p.block_size + (pp - lb * p.block_size);
        off[it] = (slot * p.n_kv_heads + kvh) * p.vec_bytes + c * 16;
      }
    }
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int idx = tid + it * 128, j = idx / kChunks, c = idx % kChunks;
      const bool ok = off[it] >= 0;
      CpAsync16(kd + j * kPitch<HD> + c * 16, p.k + (ok ? off[it] : 0), ok);
      CpAsync16(vd + j * kPitch<HD> + c * 16, p.v + (ok ? off[it] : 0), ok);
    }
  };
  issue(tile_begin, 0);
  asm volatile("cp.async.commit_group;\n" ::);

  // Q fragments: rows ra = 16 warp + lane / 4 and rb = ra + 8; k-step kk covers dims 16 kk ..
  const int ra = warp * 16 + lane / 4, rb = ra + 8;
  uint32_t qf[HD / 16][4];
  {
    auto q_pair = [&](int r, int d) -> uint32_t {
      if (r >= rows) return 0u;
      const float2 v =
          *reinterpret_cast<const float2*>(p.q + (static_cast<int64_t>(t + r / nh) * p.n_heads + h0 + r % nh) * HD + d);
      return PackHalf2(v.x * p.scale_log2, v.y * p.scale_log2);
    };
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      const int d = kk * 16 + (lane % 4) * 2;
      qf[kk][0] = q_pair(ra, d);
      qf[kk][1] = q_pair(rb, d);
      qf[kk][2] = q_pair(ra, d + 8);
      qf[kk][3] = q_pair(rb, d + 8);
    }
  }
  const int pos_a = pos0 + ra / nh, pos_b = pos0 + rb / nh;  // causal limits (rows past `rows` masked)
  const bool live_a = ra < rows, live_b = rb < rows;
  float o[HD / 8][4];
#pragma unroll
  for (int i = 0; i < HD / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m_a = -INFINITY, m_b = -INFINITY, l_a = 0.f, l_b = 0.f;

  for (int tile = tile_begin, it = 0; tile < tile_end; ++tile, ++it) {
    if (tile + 1 < tile_end) issue(tile + 1, (it + 1) % kStagesTc);
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.wait_group 1;\n" ::);
    __syncthreads();
    const uint8_t* ks = smem + (it % kStagesTc) * 2 * kBn * kPitch<HD>;
    const uint8_t* vs = ks + kBn * kPitch<HD>;

    // S = Q Kᵀ: 8 n-tiles of 8 positions.
    float s[kBn / 8][4];
#pragma unroll
    for (int nt = 0; nt < kBn / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
#pragma unroll
      for (int nt = 0; nt < kBn / 8; nt += 2) {
        // lanes 0-7: rows nt*8+i at dims kk*16; 8-15: same rows, +8 dims; 16-31: rows +8.
        const int row = nt * 8 + (lane & 7) + ((lane >> 4) << 3);
        const int col = kk * 16 + ((lane >> 3) & 1) * 8;
        uint32_t b[4];
        LdMatrixX4(b, ks + row * kPitch<HD> + col * 2);
        Mma(s[nt], qf[kk], b[0], b[1]);
        Mma(s[nt + 1], qf[kk], b[2], b[3]);
      }
    }
    // Mask, online softmax (rows a: s[.][0..1], rows b: s[.][2..3]; a row spans the 4 lanes of a quad).
    const int base = tile * kBn + (lane % 4) * 2;
    float mx_a = -INFINITY, mx_b = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < kBn / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int kp = base + nt * 8 + e;
        if (!live_a || kp > pos_a) s[nt][e] = -INFINITY;
        if (!live_b || kp > pos_b) s[nt][2 + e] = -INFINITY;
        mx_a = fmaxf(mx_a, s[nt][e]);
        mx_b = fmaxf(mx_b, s[nt][2 + e]);
      }
    }
    QuadMax(mx_a, mx_b);
    const float mn_a = fmaxf(m_a, mx_a), mn_b = fmaxf(m_b, mx_b);
    const float al_a = mn_a == -INFINITY ? 1.f : exp2f(m_a - mn_a);
    const float al_b = mn_b == -INFINITY ? 1.f : exp2f(m_b - mn_b);
    m_a = mn_a;
    m_b = mn_b;
    float sum_a = 0.f, sum_b = 0.f;
    uint32_t pf[kBn / 16][4];  // P as A fragments: k-step = 16 positions = n-tiles 2k, 2k+1
#pragma unroll
    for (int nt = 0; nt < kBn / 8; ++nt) {
      const float p0 = mn_a == -INFINITY ? 0.f : exp2f(s[nt][0] - mn_a);
      const float p1 = mn_a == -INFINITY ? 0.f : exp2f(s[nt][1] - mn_a);
      const float p2 = mn_b == -INFINITY ? 0.f : exp2f(s[nt][2] - mn_b);
      const float p3 = mn_b == -INFINITY ? 0.f : exp2f(s[nt][3] - mn_b);
      sum_a += p0 + p1;
      sum_b += p2 + p3;
      pf[nt / 2][(nt % 2) * 2 + 0] = PackHalf2(p0, p1);
      pf[nt / 2][(nt % 2) * 2 + 1] = PackHalf2(p2, p3);
    }
    QuadSum(sum_a, sum_b);
    l_a = l_a * al_a + sum_a;
    l_b = l_b * al_b + sum_b;
#pragma unroll
    for (int i = 0; i < HD / 8; ++i) {
      o[i][0] *= al_a;
      o[i][1] *= al_a;
      o[i][2] *= al_b;
      o[i][3] *= al_b;
    }
    // O += P V: k-steps of 16 positions, n-tiles of 8 dims (two per ldmatrix.x4.trans).
#pragma unroll
    for (int kk = 0; kk < kBn / 16; ++kk) {
#pragma unroll
      for (int nt = 0; nt < HD / 8; nt += 2) {
        // lanes 0-7: positions kk*16+i at dims nt*8; 8-15: positions +8; 16-31: dims +8.
        const int row = kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
        const int col = nt * 8 + ((lane >> 4) << 3);
        uint32_t b[4];
        LdMatrixX4Trans(b, vs + row * kPitch<HD> + col * 2);
        Mma(o[nt], pf[kk], b[0], b[1]);
        Mma(o[nt + 1], pf[kk], b[2], b[3]);
      }
    }
    __syncthreads();  // this stage is refilled by the next iteration's issue
  }
  asm volatile("cp.async.wait_group 0;\n" ::);

  // Epilogue: rows ra (o[.][0..1]) and rb (o[.][2..3]), dims nt*8 + (lane % 4) * 2 + {0, 1}.
  const float inv_a = l_a > 0.f ? 1.f / l_a : 0.f, inv_b = l_b > 0.f ? 1.f / l_b : 0.f;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = half == 0 ? ra : rb;
    if (r >= rows) continue;
    const float inv = half == 0 ? inv_a : inv_b;
    const int64_t th = static_cast<int64_t>(t + r / nh) * p.n_heads + h0 + r % nh;
    float* dst = ns == 1 ? p.out + th * HD : p.part_o + (th * p.s_max + split) * HD;
#pragma unroll
    for (int nt = 0; nt < HD / 8; ++nt) {
      const int d = nt * 8 + (lane % 4) * 2;
      *reinterpret_cast<float2*>(dst + d) = make_float2(o[nt][2 * half] * inv, o[nt][2 * half + 1] * inv);
    }
    if (ns > 1 && lane % 4 == 0) {
      p.part_ml[th * p.s_max + split] = make_float2(half == 0 ? m_a : m_b, half == 0 ? l_a : l_b);
    }
  }
}

template <int HD>
void Launch(const Params& p, unsigned grid, cudaStream_t stream) {
  static std::atomic<uint64_t> raised{0};
  RaiseDynamicSmem(PrefillTcKernel<HD>, kSmem<HD>, raised);
  PrefillTcKernel<HD><<<grid, 128, kSmem<HD>, stream>>>(p);
  HERD_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool LaunchPrefillTcF16(const Params& p, cudaStream_t stream) {
  if ((p.head_dim != 64 && p.head_dim != 128) || p.group > kRows) return false;
  const int64_t grid = static_cast<int64_t>(p.n_tokens) * p.s_max * p.n_kv_heads;
  if (grid >= (int64_t{1} << 31)) return false;
  if (p.head_dim == 128) {
    Launch<128>(p, static_cast<unsigned>(grid), stream);
  } else {
    Launch<64>(p, static_cast<unsigned>(grid), stream);
  }
  return true;
}

}  // namespace herd::cuda::attn
