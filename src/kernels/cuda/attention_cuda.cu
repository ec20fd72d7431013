// The split-K merge kernel and the PagedAttention dispatch (attention_cuda.h); StoreKv and
// RopeStoreKv: kv_store_cuda.cu. The attention kernel itself: attention_kernel.cuh (instances in
// attention_{f16,f32,q8}.cu). Every kernel here is launched with programmatic
// dependent launch (launch_pdl.cuh).
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "base/check.h"
#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_simt_mma.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_arch.h"
#include "kernels/cuda/diag_skip.h"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/rope_cuda.cuh"

namespace herd::cuda {
namespace {

// Merges the split partials of tokens whose item used more than one split. One CTA per
// (token, head), up to kMergeThreads threads: the first warp turns the splits' (max, sum) into weights,
// the threads sum (chunk of kMergeChunk splits, dim) pairs into shared memory (independent
// loads), then each dim's chunk sums are added in order (the order MergeQuantizeKernel uses).
constexpr int kMergeThreads = 256;
__global__ void __launch_bounds__(kMergeThreads)
    MergeSplitsKernel(const float* __restrict__ part_o, const float2* __restrict__ part_ml,
                      const int32_t* __restrict__ nsplit, int32_t n_heads, int32_t head_dim, int32_t s_max,
                      float* __restrict__ out, void* out_half, int out_bf16) {
  __shared__ float weight[attn::kMaxSplits];
  __shared__ float sums[attn::kMergeChunks * attn::kMaxHeadDim];  // [chunk][head_dim]
  PdlTrigger();
  PdlWait();
  const int64_t th = blockIdx.x;  // token * n_heads + head
  const int ns = nsplit[th / n_heads];
  if (ns <= 1) return;  // written directly by the attention kernel
  if (threadIdx.x < 32) attn::SplitWeights(part_ml, th, s_max, ns, weight);
  __syncthreads();
  const float* o = part_o + th * s_max * head_dim;
  const int nc = (ns + attn::kMergeChunk - 1) / attn::kMergeChunk;
  for (int i = threadIdx.x; i < nc * head_dim; i += blockDim.x) {
    const int c = i / head_dim, d = i - c * head_dim;
    float acc[1];
    attn::MergeChunk<1>(weight, o + d, head_dim, ns, c, acc);
    sums[i] = acc[0];
  }
  __syncthreads();
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float total[1];
    for (int c = 0; c < nc; ++c) {
      const float x[1] = {sums[c * head_dim + d]};
      attn::MergeAddChunk(c, x, total);
    }
    attn::StoreOut(out, out_half, out_bf16, th * head_dim + d, total[0]);
  }
}

}  // namespace

namespace attn {
void CheckCache(const KvLayerView& c) {
  HERD_CHECK_MSG(c.type == DType::kF16 || c.type == DType::kF32 || c.type == DType::kQ8_0,
                 "CUDA KV cache type %s not supported", std::string(DTypeName(c.type)).c_str());
  HERD_CHECK_MSG(c.head_dim > 0 && c.head_dim % Traits(c.type).block_size == 0,
                 "head_dim %d not a multiple of the %s block", c.head_dim, std::string(DTypeName(c.type)).c_str());
  HERD_CHECK(c.block_size > 0 && c.n_kv_heads > 0 && c.n_blocks > 0);
}
}  // namespace attn

AttentionScratch::~AttentionScratch() {
  if (data_ != nullptr) cudaFree(data_);
  for (void* p : retired_) cudaFree(p);
}

void* AttentionScratch::Reserve(size_t bytes, cudaStream_t stream) {
  if (bytes <= bytes_) return data_;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  HERD_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  HERD_CHECK_MSG(capture == cudaStreamCaptureStatusNone, "attention scratch must grow during graph capture");
  // A captured graph may still point into the old buffer: keep it until destruction.
  if (data_ != nullptr) retired_.push_back(data_);
  bytes_ = std::max(bytes, bytes_ * 2);
  HERD_CUDA_CHECK(cudaMalloc(&data_, bytes_));
  return data_;
}

// An environment switch that is on unless set to "0" (read once by each caller's static).
static bool EnvNotZero(const char* name) {
  const char* e = std::getenv(name);
  return e == nullptr || std::strcmp(e, "0") != 0;
}

// HERD_CUDA_ROPE_IN_ATTN=0: PagedAttention runs a RoPE it is handed as its own kernel (A/B runs).
static bool RopeFusionEnabled() {
  static const bool on = EnvNotZero("HERD_CUDA_ROPE_IN_ATTN");
  return on;
}

static std::atomic<bool>& DecodeTcFlag() {
  static std::atomic<bool> on{EnvNotZero("HERD_CUDA_ATTN_TC_DECODE")};
  return on;
}

void SetDecodeOnTensorCores(bool on) { DecodeTcFlag().store(on); }

static std::atomic<bool>& DecodeMmaFlag() {
  static std::atomic<bool> on{EnvNotZero("HERD_CUDA_ATTN_MMA")};
  return on;
}

void SetDecodeMma(bool on) { DecodeMmaFlag().store(on); }

bool DecodeUsesMma(DType type, int head_dim, int64_t n_tokens) {
  return type == DType::kF16 && (head_dim == 64 || head_dim == 128) && n_tokens >= attn::kMmaMinTokens &&
         DecodeMmaFlag().load(std::memory_order_relaxed);
}

// Params::copy_before_wait for a launch on `stream`: only while it is being captured into a
// CUDA graph (HERD_CUDA_ATTN_EARLY_COPY=0: never, for A/B runs).
static bool CopyBeforeWait(cudaStream_t stream) {
  static const bool on = EnvNotZero("HERD_CUDA_ATTN_EARLY_COPY");
  if (!on) return false;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  HERD_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  return capture == cudaStreamCaptureStatusActive;
}

namespace attn {
bool DecodeMmaEnabled() { return DecodeMmaFlag().load(std::memory_order_relaxed); }
}  // namespace attn

bool DecodeOnTensorCores(DType type, int head_dim, int group) {
  return type == DType::kF16 && attn::DecodeTcApplies(head_dim, group) &&
         DecodeTcFlag().load(std::memory_order_relaxed);
}

bool RopeFusesIntoAttention(const KvLayerView& c, const AttentionBatch& b, int32_t n_heads) {
  const int32_t group = n_heads / c.n_kv_heads;
  const bool runs = b.n_tokens > 1 && b.may_have_runs;
  const bool simt = !runs && !DecodeOnTensorCores(c.type, c.head_dim, group) &&
                    (group + attn::kItemRows - 1) / attn::kItemRows == 1 && c.type != DType::kQ8_0 &&
                    (c.head_dim == 64 || c.head_dim == 128);
  return (simt || DecodeUsesSmallKernel(c, b, n_heads)) && RopeFusionEnabled();
}

size_t AttentionSmemBytes(DType type, int32_t head_dim) {
  const attn::KvKind kind =
      type == DType::kF16 ? attn::KvKind::kF16 : (type == DType::kF32 ? attn::KvKind::kF32 : attn::KvKind::kQ8_0);
  const int vec = static_cast<int>(KvVectorBytes(type, head_dim));
  size_t bytes = attn::SmemBytes(kind, vec, head_dim, attn::kItemRows);  // the decode and prefill maximum
  if (kind == attn::KvKind::kF16) bytes = std::max(bytes, attn::MmaSmemBytes(vec, head_dim, attn::kItemRows));
  return bytes;
}

bool AttentionFitsDevice(DType type, int32_t head_dim) {
  return AttentionSmemBytes(type, head_dim) <= static_cast<size_t>(MaxDynamicSmem());
}

namespace {

// The Params fields every attention kernel reads (no split, no RoPE).
attn::Params BaseParams(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads, float scale,
                        float* out, void* out_half, bool out_bf16) {
  HERD_CHECK_MSG(reinterpret_cast<uintptr_t>(out) % 16 == 0, "attention output must be 16-byte aligned");
  attn::Params p{};
  p.out_half = out_half;
  p.out_half_bf16 = out_bf16 ? 1 : 0;
  p.k = static_cast<const uint8_t*>(c.k);
  p.v = static_cast<const uint8_t*>(c.v);
  p.block_size = c.block_size;
  p.n_kv_heads = c.n_kv_heads;
  p.head_dim = c.head_dim;
  p.vec_bytes = static_cast<int32_t>(KvVectorBytes(c.type, c.head_dim));
  p.block_shift = (c.block_size & (c.block_size - 1)) == 0 ? __builtin_ctz(static_cast<unsigned>(c.block_size)) : -1;
  p.pos = b.pos;
  p.seq = b.seq;
  p.tables = b.block_tables;
  p.n_tokens = static_cast<int32_t>(b.n_tokens);
  p.n_heads = n_heads;
  p.group = n_heads / c.n_kv_heads;
  p.head_chunks = (p.group + attn::kItemRows - 1) / attn::kItemRows;
  p.scale_log2 = scale * 1.4426950408889634f;
  p.q = q;
  p.q_stride = static_cast<int64_t>(n_heads) * c.head_dim;
  p.out = out;
  p.n_slots = static_cast<int64_t>(c.n_blocks) * c.block_size;
  return p;
}

// Split-K partials of s_max splits per query row in `scratch` (Params::part_o, part_ml, nsplit).
void ReservePartials(attn::Params* p, AttentionScratch* scratch, cudaStream_t stream) {
  const size_t rows = static_cast<size_t>(p->n_tokens) * p->n_heads * p->s_max;
  const size_t o_bytes = rows * p->head_dim * sizeof(float);
  const size_t ml_bytes = rows * sizeof(float2);
  auto* base = static_cast<uint8_t*>(
      scratch->Reserve(o_bytes + ml_bytes + sizeof(int32_t) * static_cast<size_t>(p->n_tokens), stream));
  p->part_o = reinterpret_cast<float*>(base);
  p->part_ml = reinterpret_cast<float2*>(base + o_bytes);
  p->nsplit = reinterpret_cast<int32_t*>(base + o_bytes + ml_bytes);
}

// The RoPE + K/V store handed to PagedAttention: into p (the decode kernel does it, where
// RopeFusesIntoAttention) or queued now as RopeStoreKv.
void SetUpRope(attn::Params* p, const KvLayerView& c, const AttentionBatch& b, int32_t n_heads,
               const RopeStoreArgs* rope, cudaStream_t stream) {
  if (rope == nullptr) return;
  HERD_CHECK(rope->q == p->q);
  if (RopeFusesIntoAttention(c, b, n_heads)) {
    HERD_CHECK(rope->n_rot > 0 && rope->n_rot % 2 == 0 && rope->n_rot <= c.head_dim);
    const int64_t kv_dim = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
    p->rope_inv_freq = rope->inv_freq;
    p->rope_positions = rope->positions;
    p->rope_half = rope->n_rot / 2;
    p->new_k = rope->k;
    p->new_v = rope->v;
    p->q_stride = rope->q_stride > 0 ? rope->q_stride : p->q_stride;
    p->new_k_stride = rope->k_stride > 0 ? rope->k_stride : kv_dim;
    p->new_v_stride = rope->v_stride > 0 ? rope->v_stride : kv_dim;
    for (const int64_t stride : {p->q_stride, p->new_k_stride, p->new_v_stride}) HERD_CHECK(stride % 4 == 0);
    HERD_CHECK(((reinterpret_cast<uintptr_t>(p->q) | reinterpret_cast<uintptr_t>(rope->k) |
                 reinterpret_cast<uintptr_t>(rope->v)) &
                15) == 0);
    p->kc = static_cast<uint8_t*>(c.k);
    p->vc = static_cast<uint8_t*>(c.v);
    p->copy_before_wait = CopyBeforeWait(stream) ? 1 : 0;
  } else {
    HERD_CHECK_MSG(rope->q_stride == 0 && rope->k_stride == 0 && rope->v_stride == 0,
                   "strided q / k / v need the RoPE inside the attention kernel");
    RopeStoreKv(c, b, rope->q, n_heads, rope->k, rope->v, rope->positions, rope->inv_freq, rope->n_rot, stream);
  }
}

// The small-batch decode kernel (DecodeUsesSmallKernel): attention, merge and outputs in one launch;
// int8 activations of `format` into buffer unless kF32.
void LaunchSmall(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads, float scale,
                 float* out, int num_sms, cudaStream_t stream, const RopeStoreArgs* rope, void* out_half, bool out_bf16,
                 DType format, void* buffer, internal::QuantizedActivations* activations) {
  attn::Params p = BaseParams(c, b, q, n_heads, scale, out, out_half, out_bf16);
  const SmallDecodePolicy sp = CurrentSmallDecodePolicy();
  // Its splits merge inside a thread-block cluster: one split (the whole context, at most the
  // policy's max_context) on code without clusters.
  p.s_max = Sm90PlusCode() ? attn::SmallDecodeSplits(sp, num_sms, b.n_tokens, c.n_kv_heads, b.max_context) : 1;
  SetUpRope(&p, c, b, n_heads, rope, stream);
  attn::LaunchSmallDecode(p, sp.min_split, format, buffer, activations, stream);
}

// PagedAttention's attention kernels, not the split merge (n_tokens > 0); returns their
// parameters (p.s_max > 1: partials to merge).
// out_half (optional): the outputs' half / bfloat16 copy (Params::out_half).
attn::Params LaunchAttention(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads,
                             float scale, float* out, int num_sms, AttentionScratch* scratch, cudaStream_t stream,
                             const RopeStoreArgs* rope, void* out_half = nullptr, bool out_bf16 = false) {
  using namespace attn;
  Params p = BaseParams(c, b, q, n_heads, scale, out, out_half, out_bf16);

  // Splits per item (attn::SplitsPerItem, the rules and their measurements there).
  attn::SplitInputs si;
  attn::FillSplitPolicy(&si);
  si.num_sms = num_sms;
  si.head_dim = c.head_dim;
  si.units = b.n_tokens * c.n_kv_heads * p.head_chunks;
  si.cache_tiles = (static_cast<int64_t>(c.n_blocks) * c.block_size + kTile - 1) / kTile;
  const bool decode_tc = DecodeOnTensorCores(c.type, c.head_dim, p.group);
  const bool decode_only = b.n_tokens == 1 || !b.may_have_runs;
  if (decode_tc) {
    si.path = attn::SplitPath::kDecodeTc;
  } else if (decode_only && DecodeUsesMma(c.type, c.head_dim, b.n_tokens)) {
    si.path = attn::SplitPath::kMma;
  } else if (decode_only && c.type == DType::kF16 && b.n_tokens >= 2) {
    si.path = attn::SplitPath::kSimtSmallBatch;
  }
  p.s_max = attn::SplitsPerItem(si);
  const int64_t units = si.units;
  p.min_tiles = si.min_tiles;
  if (p.s_max > 1) ReservePartials(&p, scratch, stream);
  const int64_t grid = units * p.s_max;
  HERD_CHECK_MSG(grid < (1ll << 31), "attention grid too large (%lld CTAs)", static_cast<long long>(grid));
  const int rows_small = p.group <= 4 ? 4 : (p.group <= 8 ? 8 : kItemRows);
  // Prefill kernels only where the batch may hold runs of positions (their CTAs exit at once on
  // decode tokens, but each launch costs a kernel boundary per layer).
  const bool runs = b.n_tokens > 1 && b.may_have_runs;
  SetUpRope(&p, c, b, n_heads, rope, stream);
  bool tc = false;
  switch (c.type) {
    case DType::kF16: {
      tc = runs && LaunchPrefillTcF16(p, stream);  // runs of positions on tensor cores
      if (decode_tc && (!runs || tc)) {
        LaunchDecodeTcF16(p, static_cast<unsigned>(grid), stream);
      } else {
        LaunchF16(p, rows_small, runs && !tc, static_cast<unsigned>(grid), stream);
      }
      break;
    }
    case DType::kF32: LaunchF32(p, rows_small, runs, static_cast<unsigned>(grid), stream); break;
    default: LaunchQ8_0(p, rows_small, runs, static_cast<unsigned>(grid), stream); break;
  }
  return p;
}

// MergeSplitsKernel for the partials of p (s_max > 1), one CTA per (token, head).
void LaunchMerge(const attn::Params& p, int32_t head_dim, cudaStream_t stream) {
  HERD_CHECK(head_dim <= attn::kMaxHeadDim && p.s_max <= attn::kMaxSplits);
  // A thread per (chunk, dim) pair up to kMergeThreads: up to 8 splits (one chunk), a thread per
  // dim as before the chunks, so the many CTAs of large batches stay small.
  const int chunks = (p.s_max + attn::kMergeChunk - 1) / attn::kMergeChunk;
  const int threads = std::min(kMergeThreads, (chunks * head_dim + 31) / 32 * 32);
  LaunchPdl(MergeSplitsKernel, static_cast<unsigned>(p.n_tokens * p.n_heads), threads, 0, stream, p.part_o, p.part_ml,
            p.nsplit, p.n_heads, head_dim, p.s_max, p.out, p.out_half, static_cast<int>(p.out_half_bf16));
}

void CheckShapes(const KvLayerView& c, int32_t n_heads) {
  attn::CheckCache(c);
  HERD_CHECK(n_heads > 0 && n_heads % c.n_kv_heads == 0);
  HERD_CHECK_MSG(c.head_dim % 16 == 0 && c.head_dim <= attn::kMaxHeadDim,
                 "CUDA attention needs head_dim a multiple of 16 up to %d, got %d", attn::kMaxHeadDim, c.head_dim);
}

}  // namespace

void PagedAttention(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads, float scale,
                    float* out, int num_sms, AttentionScratch* scratch, cudaStream_t stream,
                    const RopeStoreArgs* rope) {
  CheckShapes(c, n_heads);
  if (b.n_tokens <= 0) return;
  if (DecodeUsesSmallKernel(c, b, n_heads)) {
    LaunchSmall(c, b, q, n_heads, scale, out, num_sms, stream, rope, nullptr, false, DType::kF32, nullptr, nullptr);
    return;
  }
  const attn::Params p = LaunchAttention(c, b, q, n_heads, scale, out, num_sms, scratch, stream, rope);
  if (p.s_max > 1) {
#ifdef HERD_DIAG_SKIP_OPS
    if (DiagSkip("merge", b.n_tokens)) return;  // leave-one-out timing (diag_skip.h)
#endif
    LaunchMerge(p, c.head_dim, stream);
  }
}

bool PagedAttentionHalf(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads, float scale,
                        float* out, int num_sms, AttentionScratch* scratch, bool bf16, void* half_out,
                        cudaStream_t stream, const RopeStoreArgs* rope) {
  CheckShapes(c, n_heads);
  // The prefill tensor-core kernel writes only the float output.
  if (b.n_tokens <= 0 || half_out == nullptr || (b.n_tokens > 1 && b.may_have_runs)) return false;
  if (DecodeUsesSmallKernel(c, b, n_heads)) {
    LaunchSmall(c, b, q, n_heads, scale, out, num_sms, stream, rope, half_out, bf16, DType::kF32, nullptr, nullptr);
    return true;
  }
  const attn::Params p = LaunchAttention(c, b, q, n_heads, scale, out, num_sms, scratch, stream, rope, half_out, bf16);
  if (p.s_max > 1) LaunchMerge(p, c.head_dim, stream);
  return true;
}

bool PagedAttentionQuantized(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads,
                             float scale, float* out, int num_sms, AttentionScratch* scratch, DType format,
                             void* buffer, cudaStream_t stream, internal::QuantizedActivations* activations,
                             const RopeStoreArgs* rope) {
  CheckShapes(c, n_heads);
  if (b.n_tokens <= 0 || !attn::MergeQuantizeTakes(n_heads, n_heads / c.n_kv_heads, c.head_dim, format)) return false;
  if (DecodeUsesSmallKernel(c, b, n_heads)) {
    LaunchSmall(c, b, q, n_heads, scale, out, num_sms, stream, rope, nullptr, false, format, buffer, activations);
    return true;
  }
  const attn::Params p = LaunchAttention(c, b, q, n_heads, scale, out, num_sms, scratch, stream, rope);
  HERD_CHECK(attn::LaunchMergeQuantize(p, format, buffer, stream, activations));
  return true;
}

}  // namespace herd::cuda
