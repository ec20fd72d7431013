// The attention split count per work item (attn::SplitsPerItem), on the host (needs no GPU):
// the rules the benchmarks chose, on H100's 132 SMs and the llama-3.1-8b shape (8 kv heads,
// head_dim 128) with the default policy (12 CTAs per SM at head_dim 64, min 1 tile, max 64
// splits): a regression here changes attention speed that bench/results/ measured.
#include <gtest/gtest.h>

#include "kernels/cuda/attention_internal.h"

namespace herd::cuda::attn {
namespace {

SplitInputs Launch(int64_t tokens, int64_t context, SplitPath path) {
  SplitInputs in;
  in.num_sms = 132;
  in.head_dim = 128;
  in.units = tokens * 8;                           // 8 kv heads, one head chunk (group 4)
  in.cache_tiles = tokens * context / kTile + 64;  // the cache holds every sequence, and some
  in.path = path;
  return in;
}

TEST(AttentionSplitTest, OneDecodeTokenTakesUpToTheMaximum) {
  // 132 x 12 x 64 / 128 = 792 CTAs wanted over 8 items: capped at 64 splits.
  EXPECT_EQ(SplitsPerItem(Launch(1, 4096, SplitPath::kDefault)), 64);
}

// Splits an item of `tiles` tiles actually uses for a launch's s_max (SplitTiles: equal runs of
// whole tiles); the CTAs of the others exit at once.
int UsedSplits(int s_max, int tiles) {
  const int ns = s_max < tiles ? s_max : tiles;
  const int per = (tiles + ns - 1) / ns;
  return (tiles + per - 1) / per;
}

TEST(AttentionSplitTest, SmallF16BatchesTakeOneWaveOfTheSimtKernel) {
  // 4 tokens of 2048 positions (64 tiles): 32 items; two thirds of 792 = 528 CTAs -> s_max 17,
  // 16 splits of 4 tiles used: 512 working CTAs, one wave of 4 per SM (before: s_max 25, 22
  // splits of 3 tiles, 704 CTAs, 1.33 waves).
  EXPECT_EQ(SplitsPerItem(Launch(4, 2048, SplitPath::kSimtSmallBatch)), 17);
  EXPECT_EQ(UsedSplits(17, 64) * 32, 512);
  EXPECT_EQ(SplitsPerItem(Launch(4, 2048, SplitPath::kDefault)), 25);
  EXPECT_EQ(UsedSplits(25, 64) * 32, 704);
}

TEST(AttentionSplitTest, TheTensorCoreVariantTakesHalfTheTarget) {
  // 16 tokens: 128 items; 792 / 2 = 396 CTAs -> 4 splits (1 before: 7).
  EXPECT_EQ(SplitsPerItem(Launch(16, 1024, SplitPath::kMma)), 4);
  SplitInputs one = Launch(16, 1024, SplitPath::kMma);
  one.mma_divisor = 1;
  EXPECT_EQ(SplitsPerItem(one), 7);
}

TEST(AttentionSplitTest, ManySequencesTakeOneSplit) {
  // 128 tokens: 1,024 items, more than any target: no partials, no merge.
  EXPECT_EQ(SplitsPerItem(Launch(128, 576, SplitPath::kMma)), 1);
  EXPECT_EQ(SplitsPerItem(Launch(128, 576, SplitPath::kDefault)), 1);
}

TEST(AttentionSplitTest, TheHeadDim64TensorCoreKernelTakesAQuarter) {
  SplitInputs in = Launch(2, 2048, SplitPath::kDecodeTc);
  in.head_dim = 64;  // 132 x 12 = 1,584, a quarter 396, over 16 items: 25 splits
  EXPECT_EQ(SplitsPerItem(in), 25);
}

TEST(AttentionSplitTest, NeverMoreThanTheCacheOrThePolicyAllow) {
  SplitInputs in = Launch(1, 0, SplitPath::kDefault);
  in.cache_tiles = 5;
  EXPECT_EQ(SplitsPerItem(in), 5);  // no more splits than tiles in the whole cache
  in.min_tiles = 2;
  EXPECT_EQ(SplitsPerItem(in), 3);  // ceil(5 / 2)
  in.cache_tiles = 4096;
  in.max_splits = 8;
  EXPECT_EQ(SplitsPerItem(in), 8);
  in.units = 1 << 20;
  EXPECT_EQ(SplitsPerItem(in), 1);  // never below one
}

// The small-batch decode kernel's splits per token (SmallDecodeSplits), default policy: one split
// per 128 positions of the context hint, at most 8 (a portable cluster) and at most the SMs per
// (token, kv head).
TEST(AttentionSplitTest, SmallDecodeKernelSplitsByTheContextHint) {
  const SmallDecodePolicy d;
  EXPECT_EQ(SmallDecodeSplits(d, 132, 1, 8, 1), 1);
  EXPECT_EQ(SmallDecodeSplits(d, 132, 1, 8, 128), 1);  // tg128: no cluster
  EXPECT_EQ(SmallDecodeSplits(d, 132, 1, 8, 129), 2);
  EXPECT_EQ(SmallDecodeSplits(d, 132, 1, 8, 512), 4);
  EXPECT_EQ(SmallDecodeSplits(d, 132, 1, 8, 4096), 8);  // capped by max_splits
  EXPECT_EQ(SmallDecodeSplits(d, 132, 8, 8, 512), 2);   // 132 / 64 CTAs per (token, kv head)
  EXPECT_EQ(SmallDecodeSplits(d, 132, 8, 32, 512), 1);  // never below one
  EXPECT_EQ(SmallDecodeSplits(SmallDecodePolicy{8, 2, 16, 512}, 132, 1, 8, 512), 2);
}

// Which batches take the small-batch kernel (DecodeUsesSmallKernel; host only): decode batches
// of up to 8 tokens over F16 caches with head_dim 64 / 128 and group <= 8 whose context hint is
// set and at most 1,024.
TEST(AttentionSplitTest, SmallDecodeKernelTakesShortDecodeBatchesOnly) {
  SetSmallDecodePolicy(SmallDecodePolicy{});  // whatever HERD_CUDA_ATTN_SMALL said
  KvLayerView c;
  c.type = DType::kF16;
  c.n_kv_heads = 8;
  c.head_dim = 128;
  c.block_size = 16;
  c.n_blocks = 64;
  AttentionBatch b;
  b.n_tokens = 1;
  b.max_context = 128;
  EXPECT_TRUE(DecodeUsesSmallKernel(c, b, 32));  // one token: runs impossible even with the hint on
  b.max_context = 512;
  EXPECT_TRUE(DecodeUsesSmallKernel(c, b, 32));
  b.max_context = 1024;
  EXPECT_TRUE(DecodeUsesSmallKernel(c, b, 32));
  b.max_context = 1025;
  EXPECT_FALSE(DecodeUsesSmallKernel(c, b, 32));
  b.max_context = 0;  // unknown
  EXPECT_FALSE(DecodeUsesSmallKernel(c, b, 32));
  b.max_context = 64;
  b.n_tokens = 8;
  EXPECT_FALSE(DecodeUsesSmallKernel(c, b, 32));  // may hold runs
  b.may_have_runs = false;
  EXPECT_TRUE(DecodeUsesSmallKernel(c, b, 32));
  b.n_tokens = 9;
  EXPECT_FALSE(DecodeUsesSmallKernel(c, b, 32));
  b.n_tokens = 2;
  EXPECT_FALSE(DecodeUsesSmallKernel(c, b, 128));  // group 16
  EXPECT_TRUE(DecodeUsesSmallKernel(c, b, 8));     // group 1
  c.head_dim = 96;
  EXPECT_FALSE(DecodeUsesSmallKernel(c, b, 32));
  c.head_dim = 64;
  EXPECT_TRUE(DecodeUsesSmallKernel(c, b, 32));
  c.type = DType::kQ8_0;
  EXPECT_FALSE(DecodeUsesSmallKernel(c, b, 32));
  c.type = DType::kF16;
  SetSmallDecodePolicy(SmallDecodePolicy{0, 8, 128, 512});
  EXPECT_FALSE(DecodeUsesSmallKernel(c, b, 32));
  SetSmallDecodePolicy(SmallDecodePolicy{});
  EXPECT_TRUE(DecodeUsesSmallKernel(c, b, 32));
}

}  // namespace
}  // namespace herd::cuda::attn
