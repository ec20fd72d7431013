// Paged attention on the GPU, with the semantics of ref::StoreKv / ref::PagedAttention
// (kernels/attention.h): cache layout [n_blocks, block_size, n_kv_heads, KvVectorBytes] per layer,
// KV types F16, F32 and Q8_0. Everything in AttentionBatch is DEVICE memory here (pos, seq,
// block_table_lens, and block_tables: a device array of device pointers), so the host never
// looks at the batch: the kernels find each token's sequence, position and neighbours on the
// device, and one launch handles any mix of decode tokens, prefill chunks (first position > 0
// allowed) and sequences. Shapes only (n_tokens, heads, head_dim) decide grids, so a launch
// sequence can be captured in a CUDA graph and replayed for other batches of the same size.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/attention.h"

namespace herd::cuda {
namespace internal {
struct QuantizedActivations;  // matmul_internal.h
}  // namespace internal

// Device scratch of PagedAttention (split-K partial outputs). Grows on demand (not while the
// stream is being captured: the first, eager pass of a graph key reaches its size); a grown-out
// buffer is kept until destruction, since captured graphs may still use it. Not thread-safe;
// one per stream.
class AttentionScratch {
 public:
  AttentionScratch() = default;
  ~AttentionScratch();
  AttentionScratch(const AttentionScratch&) = delete;
  AttentionScratch& operator=(const AttentionScratch&) = delete;
  void* Reserve(size_t bytes, cudaStream_t stream);

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  std::vector<void*> retired_;
};

// k, v: [n_tokens, n_kv_heads * head_dim] float, device. Writes each token's vectors into its
// slot (block_tables[seq[t]][pos[t] / block_size], pos[t] % block_size): rounded to f16 (round to
// nearest even), copied (F32), or quantized per 32 values exactly as ref::QuantizeRow does (Q8_0:
// the same bytes).
void StoreKv(const KvLayerView& cache, const AttentionBatch& batch, const float* k, const float* v,
             cudaStream_t stream);

// Rope(q: [n_tokens, n_heads, head_dim]) and Rope(k: [n_tokens, n_kv_heads, head_dim]) in place
// (ops_cuda.h: Rope), then StoreKv(k, v): one launch, the same results as the three calls.
// positions: [n_tokens] device (uploaded, not written by kernels), inv_freq: [n_rot / 2].
void RopeStoreKv(const KvLayerView& cache, const AttentionBatch& batch, float* q, int32_t n_heads, float* k,
                 const float* v, const int32_t* positions, const float* inv_freq, int32_t n_rot, cudaStream_t stream);

// RopeStoreKv's arguments (q: PagedAttention's q), for PagedAttention to run that op first.
// Row strides (floats between token rows; 0: dense, n_heads / n_kv_heads * head_dim) other than
// dense only where RopeFusesIntoAttention: q, k and v may then be the column ranges of one
// [n_tokens, q + k + v] matmul output (MatMulRunner::MatMulConcatenated). 16-byte aligned.
struct RopeStoreArgs {
  float* q;
  float* k;
  const float* v;
  const int32_t* positions;
  const float* inv_freq;
  int32_t n_rot;
  int64_t q_stride = 0;
  int64_t k_stride = 0;
  int64_t v_stride = 0;
};

// Shared memory per block that the attention kernels for a `type` cache of `head_dim` need at
// most (decode and prefill, 16 query rows), and whether that fits this device (MaxDynamicSmem):
// false e.g. for an F32 cache of head_dim 128 or an F16 cache of head_dim 256 on a 99 KB GPU.
size_t AttentionSmemBytes(DType type, int32_t head_dim);
bool AttentionFitsDevice(DType type, int32_t head_dim);

// Whether PagedAttention(cache, batch, .., n_heads, .., rope) runs the RoPE + K/V store inside
// its decode kernel (else as RopeStoreKv before it, which needs dense q / k / v).
bool RopeFusesIntoAttention(const KvLayerView& cache, const AttentionBatch& batch, int32_t n_heads);

// q: [n_tokens, n_heads * head_dim] -> out: [n_tokens, n_heads * head_dim] float, device (out
// 16-byte aligned).
// out[t, h] = softmax(q[t, h] · K[0..pos[t]]ᵀ * scale) · V[0..pos[t]] of the token's own sequence;
// query head h reads kv head h / (n_heads / n_kv_heads). head_dim: 64 and 128 have tuned kernels;
// any multiple of 16 up to 256 works (Q8_0: multiple of 32).
// Work split (all decided on the device, see attention_kernel.cuh): a token whose neighbours in
// the batch are not the next/previous positions of its sequence (decode) is one work item with
// its query heads of one kv head together (GQA: K/V read once for the group); runs of
// consecutive positions (prefill) are cut into items of up to 16 query rows (tokens × heads).
// Long contexts are split across up to 64 CTAs per item (flash-decoding, AttentionSplitPolicy),
// merged by a second kernel. Small decode batches with a short AttentionBatch::max_context take
// the small-batch kernel instead (SmallDecodePolicy below: one launch, tensor cores). Softmax is online, in
// fp32; products in fp32, except on tensor cores (F16 caches: prefill runs with head_dim 64 /
// 128, decode tokens with head_dim 64 / 128 unless SetDecodeOnTensorCores / SetDecodeMma(false)), where q and the
// softmax weights are rounded to f16. The batch description (pos, seq, tables) is read before the previous
// kernel in the stream ends (programmatic dependent launch): it must come from host copies.
// `num_sms`: the device's multiprocessor count (sizes the split).
// rope non-null: RopeStoreKv(cache, batch, rope->q (= q), n_heads, rope...) runs first, inside the decode
// kernel where the batch allows (every sequence once: AttentionBatch::may_have_runs false; F16 /
// F32 cache; SIMT decode; group <= 16), else as its own kernel; q and rope->k may then keep their
// unrotated values (they are inputs only; results and cache bytes equal the two calls').
void PagedAttention(const KvLayerView& cache, const AttentionBatch& batch, const float* q, int32_t n_heads, float scale,
                    float* out, int num_sms, AttentionScratch* scratch, cudaStream_t stream,
                    const RopeStoreArgs* rope = nullptr);

// PagedAttention that also writes out rounded to half (bf16: bfloat16) into half_out
// [n_tokens, n_heads * head_dim], as ConvertActivations would: the O projection's tensor-core
// input, written by the attention kernel (or the split merge) instead of a conversion kernel.
// Returns false, queueing nothing, for batches that may hold prefill runs (n_tokens > 1 and
// may_have_runs: the prefill tensor-core kernel writes floats only).
bool PagedAttentionHalf(const KvLayerView& cache, const AttentionBatch& batch, const float* q, int32_t n_heads,
                        float scale, float* out, int num_sms, AttentionScratch* scratch, bool bf16, void* half_out,
                        cudaStream_t stream, const RopeStoreArgs* rope = nullptr);

// PagedAttention that also writes out as the int8 activations of `format` (Q8_0, Q8_1 or Q8_K)
// into `buffer` (internal::QuantizedActivationBytes of n_tokens rows), as QuantizeActivations
// would, with the split merge in the same kernel (attention_merge_quant.cu); *activations
// describes them. Returns false, queueing nothing, unless group * head_dim is a multiple of 256
// (up to 8192) and n_heads * head_dim a multiple of 2048.
bool PagedAttentionQuantized(const KvLayerView& cache, const AttentionBatch& batch, const float* q, int32_t n_heads,
                             float scale, float* out, int num_sms, AttentionScratch* scratch, DType format,
                             void* buffer, cudaStream_t stream, internal::QuantizedActivations* activations,
                             const RopeStoreArgs* rope = nullptr);

// How PagedAttention splits contexts (process-wide; benchmarks compare settings, the defaults
// are the ones measured best on H100, bench/results/cuda-attention-2026-11-22.md): splits per
// item = min(max_splits, ceil(num_sms * ctas_per_sm * 64 / head_dim / items),
// ceil(context tiles / min_tiles)), tiles of 32 positions: ctas_per_sm is the figure for
// head_dim 64 and scales down with wider heads, whose CTAs carry more work each (head_dim 128:
// 6 per SM; bench/results/cuda-quant-tc-2026-11-24.md, "Attention split policy"), and is
// divided by 4 where decode runs on tensor cores (SetDecodeOnTensorCores).
// HERD_CUDA_ATTN=CTAS_PER_SM:MIN_TILES:MAX_SPLITS sets the initial policy.
struct AttentionSplitPolicy {
  int ctas_per_sm = 12;  // at head_dim 64
  int min_tiles = 1;
  int max_splits = 64;  // at most 64 (kMaxSplits)
};
void SetAttentionSplitPolicy(const AttentionSplitPolicy& policy);

// Decode batches of up to max_tokens tokens (each its sequence's only token; F16 cache, head_dim
// 64 / 128, GQA group <= 8) whose AttentionBatch::max_context hint is set and at most max_context
// run on the small-batch decode kernel (attention_decode_small.cu: tensor cores as the decode
// kernels below, the split merge (a thread-block cluster) and the output conversions in the same
// launch) instead of those kernels. Splits per token: min(max_splits (<= 8), num_sms / (tokens *
// kv heads), ceil(max_context / min_split)) (min_split a multiple of 16); one split launches
// without clusters. Process-wide; initially
// HERD_CUDA_ATTN_SMALL=MAX_TOKENS[:MAX_SPLITS[:MIN_SPLIT[:MAX_CONTEXT]]] when set (max_tokens 0:
// off). Defaults measured on H100: kernel alone (8B shape, warm instruction cache), one sequence
// of 64 / 128 / 512 / 4,096 positions 3.2 / 4.1 / 8.6 / 25.5 us against 6.7 / 7.2 / 7.8 / 18.5
// for the kernels below (bench/results/cuda-session12-2026-11-26.md); inside models decoding at
// positions 384-511 it is still faster (8B Q4_K_M +1.9%, 1B Q4_K_M +12.6%;
// bench/results/cuda-session13-2026-11-26.md), and on H200 at positions 600-615 and 1,000-1,015
// too (tg16 against the kernels below with the chunked merge, two rounds: 1B Q4_K_M +5.1-12.5%,
// 8B Q4_K_M +5.4-9.7%; bench/results/cuda-session34-2026-11-29.md), hence the 1,024-position
// limit (the model gives the hint below 1,024 positions only).
struct SmallDecodePolicy {
  int max_tokens = 8;
  int max_splits = 8;
  int min_split = 128;
  int max_context = 1024;
};
void SetSmallDecodePolicy(const SmallDecodePolicy& policy);
SmallDecodePolicy CurrentSmallDecodePolicy();
// Whether PagedAttention(cache, batch, .., n_heads, ..) runs on that kernel.
bool DecodeUsesSmallKernel(const KvLayerView& cache, const AttentionBatch& batch, int32_t n_heads);

// Decode tokens of F16 caches with head_dim 64 and GQA group <= 16 run on tensor cores
// (attention_decode_tc.cu: q and the softmax weights rounded to f16, like prefill runs) while
// this is on (process-wide; initially HERD_CUDA_ATTN_TC_DECODE != "0"); otherwise, and for
// other shapes and KV types, on the SIMT kernel in fp32.
void SetDecodeOnTensorCores(bool on);

// The split-K decode kernel of F16 caches with head_dim 64 / 128 (every decode token that the
// kernel above does not take, e.g. head_dim 128), in batches of 8 tokens or more, computes its tiles' Q·Kᵀ and P·V on
// tensor cores (attention_simt_mma.cuh: q and the softmax weights rounded to f16) while this is on (process-wide;
// initially HERD_CUDA_ATTN_MMA != "0"); otherwise in fp32 SIMT.
void SetDecodeMma(bool on);
// That variant's K/V tiles come from a producer warp through TMA (sm_90; same bits) while this
// is on (process-wide; initially HERD_CUDA_ATTN_TMA != "0").
void SetDecodeTma(bool on);
// Launches of that TMA form so far (process-wide): tests check that it, not the fallback, ran.
uint64_t DecodeTmaLaunches();
// Whether decode tokens of this cache type and head_dim, in a batch of n_tokens, run on that
// variant when the tensor-core decode kernel above does not take them (SetDecodeMma).
bool DecodeUsesMma(DType type, int head_dim, int64_t n_tokens);
bool DecodeOnTensorCores(DType type, int head_dim, int group);

}  // namespace herd::cuda
