// How PagedAttention splits contexts over CTAs (flash-decoding): the process-wide policies
// (SetAttentionSplitPolicy, SetSmallDecodePolicy, attention_cuda.h) and the split count per work
// item of a launch (attn::SplitsPerItem, attention_internal.h). Host code only.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "base/check.h"
#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/attention_internal.h"

namespace herd::cuda {
namespace {

// A process-wide policy: read by each launch, set by tests and A/B runs.
template <typename P>
class PolicyCell {
 public:
  explicit PolicyCell(const P& initial) : policy_(initial) {}
  P Load() {
    std::lock_guard<std::mutex> lock(mu_);
    return policy_;
  }
  void Store(const P& policy) {
    std::lock_guard<std::mutex> lock(mu_);
    policy_ = policy;
  }

 private:
  std::mutex mu_;
  P policy_;
};

bool Valid(const AttentionSplitPolicy& p) {
  return p.ctas_per_sm >= 1 && p.min_tiles >= 1 && p.max_splits >= 1 && p.max_splits <= attn::kMaxSplits;
}
bool Valid(const SmallDecodePolicy& p) {
  return p.max_tokens >= 0 && p.max_splits >= 1 && p.max_splits <= attn::kSmallMaxSplits && p.min_split >= 16 &&
         p.min_split % 16 == 0 && p.max_context >= 0;
}

// The split policy (AttentionSplitPolicy), initially from
// HERD_CUDA_ATTN=CTAS_PER_SM:MIN_TILES[:MAX_SPLITS] when set and valid (A/B runs of whole models).
PolicyCell<AttentionSplitPolicy>& SplitPolicy() {
  static PolicyCell<AttentionSplitPolicy> cell([] {
    AttentionSplitPolicy p;
    const char* e = std::getenv("HERD_CUDA_ATTN");
    if (e != nullptr && std::sscanf(e, "%d:%d:%d", &p.ctas_per_sm, &p.min_tiles, &p.max_splits) >= 2 && Valid(p)) {
      return p;
    }
    return AttentionSplitPolicy{};
  }());
  return cell;
}

// The small-batch decode kernel's policy (SmallDecodePolicy), initially from
// HERD_CUDA_ATTN_SMALL=MAX_TOKENS[:MAX_SPLITS[:MIN_SPLIT[:MAX_CONTEXT]]] when set and valid.
PolicyCell<SmallDecodePolicy>& SmallPolicy() {
  static PolicyCell<SmallDecodePolicy> cell([] {
    SmallDecodePolicy p;
    const char* e = std::getenv("HERD_CUDA_ATTN_SMALL");
    if (e != nullptr &&
        std::sscanf(e, "%d:%d:%d:%d", &p.max_tokens, &p.max_splits, &p.min_split, &p.max_context) >= 1 && Valid(p)) {
      return p;
    }
    return SmallDecodePolicy{};
  }());
  return cell;
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
  HERD_CHECK(Valid(policy));
  SplitPolicy().Store(policy);
}

SmallDecodePolicy CurrentSmallDecodePolicy() { return SmallPolicy().Load(); }

void SetSmallDecodePolicy(const SmallDecodePolicy& policy) {
  HERD_CHECK(Valid(policy));
  SmallPolicy().Store(policy);
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
  const AttentionSplitPolicy p = SplitPolicy().Load();
  in->ctas_per_sm = p.ctas_per_sm;
  in->min_tiles = p.min_tiles;
  in->max_splits = p.max_splits;
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
