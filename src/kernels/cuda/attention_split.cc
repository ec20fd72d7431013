// How PagedAttention splits contexts over CTAs (flash-decoding): the process-wide policies
// (SetAttentionSplitPolicy, SetSmallDecodePolicy, attention_cuda.h) and the split count per work
// item of a launch (attn::SplitsPerItem, attention_internal.h). Host code only.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "base/check.h"
#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/attention_internal.h"

namespace herd::cuda {
namespace {

// The split policy (AttentionSplitPolicy), initially from
// HERD_CUDA_ATTN=CTAS_PER_SM:MIN_TILES[:MAX_SPLITS] when set (A/B runs of whole models).
struct PolicyState {
  std::atomic<int> ctas_per_sm, min_tiles, max_splits;
  PolicyState() {
    AttentionSplitPolicy d;
    const char* e = std::getenv("HERD_CUDA_ATTN");
    int c = d.ctas_per_sm, m = d.min_tiles, x = d.max_splits;
    if (e != nullptr && std::sscanf(e, "%d:%d:%d", &c, &m, &x) >= 2 && c >= 1 && m >= 1 && x >= 1 &&
        x <= attn::kMaxSplits) {
      d = AttentionSplitPolicy{c, m, x};
    }
    ctas_per_sm = d.ctas_per_sm;
    min_tiles = d.min_tiles;
    max_splits = d.max_splits;
  }
};
PolicyState& Policy() {
  static PolicyState state;
  return state;
}

// How many times fewer split CTAs the tensor-core variant of the split decode kernel wants than
// the SIMT one: HERD_CUDA_ATTN_MMA_SPLIT_DIV (1..8, A/B runs), default 2.
int MmaSplitDivisor() {
  static const int v = [] {
    const char* e = std::getenv("HERD_CUDA_ATTN_MMA_SPLIT_DIV");
    const int n = e == nullptr ? 2 : std::atoi(e);
    return n >= 1 && n <= 8 ? n : 2;
  }();
  return v;
}

}  // namespace

void SetAttentionSplitPolicy(const AttentionSplitPolicy& policy) {
  HERD_CHECK(policy.ctas_per_sm >= 1 && policy.min_tiles >= 1 && policy.max_splits >= 1 &&
             policy.max_splits <= attn::kMaxSplits);
  Policy().ctas_per_sm.store(policy.ctas_per_sm);
  Policy().min_tiles.store(policy.min_tiles);
  Policy().max_splits.store(policy.max_splits);
}

// The small-batch decode kernel's policy (SmallDecodePolicy), initially from
// HERD_CUDA_ATTN_SMALL=MAX_TOKENS[:MAX_SPLITS[:MIN_SPLIT[:MAX_CONTEXT]]] when set (A/B runs).
namespace {

struct SmallPolicyState {
  std::atomic<int> max_tokens, max_splits, min_split, max_context;
  SmallPolicyState() {
    SmallDecodePolicy d;
    const char* e = std::getenv("HERD_CUDA_ATTN_SMALL");
    int m = d.max_tokens, c = d.max_splits, s = d.min_split, x = d.max_context;
    if (e != nullptr && std::sscanf(e, "%d:%d:%d:%d", &m, &c, &s, &x) >= 1 && m >= 0 && c >= 1 &&
        c <= attn::kSmallMaxSplits && s >= 16 && s % 16 == 0 && x >= 0) {
      d = SmallDecodePolicy{m, c, s, x};
    }
    max_tokens = d.max_tokens;
    max_splits = d.max_splits;
    min_split = d.min_split;
    max_context = d.max_context;
  }
};
SmallPolicyState& SmallState() {
  static SmallPolicyState state;
  return state;
}
}  // namespace

SmallDecodePolicy CurrentSmallDecodePolicy() {
  SmallPolicyState& s = SmallState();
  return SmallDecodePolicy{s.max_tokens.load(std::memory_order_relaxed), s.max_splits.load(std::memory_order_relaxed),
                           s.min_split.load(std::memory_order_relaxed), s.max_context.load(std::memory_order_relaxed)};
}

void SetSmallDecodePolicy(const SmallDecodePolicy& policy) {
  HERD_CHECK(policy.max_tokens >= 0 && policy.max_splits >= 1 && policy.max_splits <= attn::kSmallMaxSplits &&
             policy.min_split >= 16 && policy.min_split % 16 == 0 && policy.max_context >= 0);
  SmallState().max_tokens.store(policy.max_tokens);
  SmallState().max_splits.store(policy.max_splits);
  SmallState().min_split.store(policy.min_split);
  SmallState().max_context.store(policy.max_context);
}

bool DecodeUsesSmallKernel(const KvLayerView& c, const AttentionBatch& b, int32_t n_heads) {
  const SmallDecodePolicy sp = CurrentSmallDecodePolicy();
  return c.type == DType::kF16 && attn::SmallDecodeShapeApplies(c.head_dim, n_heads / c.n_kv_heads) &&
         b.n_tokens >= 1 && b.n_tokens <= sp.max_tokens && (b.n_tokens == 1 || !b.may_have_runs) && b.max_context > 0 &&
         b.max_context <= sp.max_context;
}

namespace attn {

int32_t SmallDecodeSplits(const SmallDecodePolicy& policy, int num_sms, int64_t n_tokens, int32_t n_kv_heads,
                          int32_t max_context) {
  HERD_CHECK(n_tokens > 0 && n_kv_heads > 0 && policy.min_split > 0);
  const int64_t per_token = std::max<int64_t>(1, num_sms / (n_tokens * n_kv_heads));
  const int64_t by_context = (static_cast<int64_t>(max_context) + policy.min_split - 1) / policy.min_split;
  return static_cast<int32_t>(std::max<int64_t>(1, std::min<int64_t>({per_token, by_context, policy.max_splits})));
}

void FillSplitPolicy(SplitInputs* in) {
  in->ctas_per_sm = Policy().ctas_per_sm.load(std::memory_order_relaxed);
  in->min_tiles = Policy().min_tiles.load(std::memory_order_relaxed);
  in->max_splits = Policy().max_splits.load(std::memory_order_relaxed);
  in->mma_divisor = MmaSplitDivisor();
}

int32_t SplitsPerItem(const SplitInputs& in) {
  // About ctas_per_sm * 64 / head_dim CTAs per SM (several waves of the ~4 resident for many
  // sequences, so the last wave's tail is short; for a few sequences up to max_splits splits of
  // at least min_tiles tiles, so each CTA's latency chain is short), scaled per path:
  //  - the tensor-core decode kernel (head_dim 64): its 4 warps stream chunks of their own, a CTA
  //    does what 4 SIMT CTAs do: a quarter (1B shape on H100: 10-25% faster from 1 to 128
  //    sequences, bench/results/cuda-pipeline-2026-11-25.md);
  //  - the split kernel's tensor-core variant (decode batches of 8+ tokens) finishes a tile
  //    sooner: 1 / mma_divisor (8B F16 shape, 8-64 sequences of 512-4096 positions: 2-16%
  //    faster at 2; bench/results/cuda-session10-2026-11-26.md);
  //  - F16 decode batches of 2-7 tokens on the SIMT kernel: two thirds, one wave of its 4
  //    resident CTAs per SM at head_dim 128 instead of 1.5 (4 x 2048 positions: 32.3 -> 23.0 us,
  //    the other 1-4 token cases unchanged; same file).
  // Never more than the cache could need.
  const int64_t target = static_cast<int64_t>(std::max(in.num_sms, 1)) * in.ctas_per_sm * 64 / in.head_dim;
  int64_t ctas = target;
  switch (in.path) {
    case SplitPath::kDecodeTc: ctas = target / 4; break;
    case SplitPath::kMma: ctas = target / std::max(in.mma_divisor, 1); break;
    case SplitPath::kSimtSmallBatch: ctas = target * 2 / 3; break;
    case SplitPath::kDefault: break;
  }
  ctas = std::max<int64_t>(1, ctas);
  const int64_t units = std::max<int64_t>(1, in.units);
  const int64_t want = (ctas + units - 1) / units;
  const int64_t cap = std::max<int64_t>(1, (in.cache_tiles + in.min_tiles - 1) / in.min_tiles);
  return static_cast<int32_t>(std::clamp<int64_t>(want, 1, std::min<int64_t>(in.max_splits, cap)));
}

}  // namespace attn
}  // namespace herd::cuda
