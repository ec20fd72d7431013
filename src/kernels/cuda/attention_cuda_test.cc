// StoreKv and PagedAttention of the CUDA backend against ref::StoreKv / ref::PagedAttention.
//
// Each case builds a paged cache whose every byte starts as NaN (F16/F32 NaN, Q8_0 NaN scales),
// stores each sequence's earlier positions with ref::StoreKv (random K/V), gives every sequence
// a non-contiguous block table (a random permutation of the blocks), then runs one batch through
// both implementations: StoreKv of the batch's K/V, then attention. Checks:
//  - the cache bytes after StoreKv equal the reference's exactly (f16 rounding, Q8_0 bytes);
//  - per output row (one token, one head): ||out - ref|| / ||ref|| <= 1e-4. Both dequantize the
//    same stored values and compute in fp32 (GPU) / double (reference); a missing, extra or
//    wrong position changes a row by ~1/sqrt(context) >= 0.02 at the lengths used here.
//    Prefill-run rows of F16 caches with head_dim 64 / 128 (and decode rows with head_dim 64 /
//    128 unless SetDecodeOnTensorCores / SetDecodeMma(false)) run on tensor cores with q and the softmax weights
//    rounded to f16 (relative 2^-11 each; ~6e-4 rms on the scores here): bound 4e-3 for them,
//    still 5× under the effect of one wrong position.
//    Outputs are NaN-poisoned first; reading an unwritten slot would bring in NaN.
// Decode-only batches tell the backend so (AttentionBatch::may_have_runs false, as the model
// does), except in DecodeBatchesWithTheRunsHintLeftOn; every batch gives its max_context hint,
// so decode batches of up to 8 tokens with short contexts run on the small-batch kernel (tensor
// cores: the 4e-3 bound), unless a test sets SmallDecodePolicy otherwise.
// Batches: one decode token; many decode sequences of different lengths (crossing many blocks,
// one 2100 long); a prefill chunk starting at position 70; a 300-token prefill from 0; a mixed
// batch (decode tokens, chunks, a fresh sequence, one sequence's tokens in reverse order).
// Swept over KV type F16/F32/Q8_0 × head_dim 64/128 × GQA group 1/4/8 × block size 16/32, plus
// group 20 (head chunks) and head_dim 80/96 (generic kernel). HERD_CUDA_TEST_QUICK=1 runs a
// subset (for compute-sanitizer).
#include "kernels/cuda/attention_cuda.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/attention_test_fixture.h"
#include "kernels/cuda/device_arch.h"

namespace herd::cuda {
namespace {

using attention_test::Batches;
using attention_test::BatchSpec;
using attention_test::Config;
using attention_test::CudaAttentionTest;
using attention_test::Quick;
using attention_test::SeqSpec;

void Sweep(CudaAttentionTest* t, DType type) {
  uint32_t seed = 1;
  for (int32_t hd : {64, 128}) {
    for (int32_t group : {1, 4, 8}) {
      for (int32_t bs : {16, 32}) {
        if (Quick() && (bs == 32 || group == 1 || (hd == 64 && group == 8))) continue;
        for (const BatchSpec& b : Batches()) t->RunCase(Config{type, hd, group, bs}, b, seed++);
      }
    }
  }
}

TEST_F(CudaAttentionTest, F16) { Sweep(this, DType::kF16); }
// Decode tokens of F16 caches on the SIMT kernel (fp32 throughout) instead of tensor cores.
TEST_F(CudaAttentionTest, F16DecodeWithoutTensorCores) {
  SetDecodeOnTensorCores(false);
  SetDecodeMma(false);
  Sweep(this, DType::kF16);
  SetDecodeMma(true);
  SetDecodeOnTensorCores(true);
}
// Decode tokens of F16 caches on the SIMT kernel's tensor-core variant with cp.async tiles,
// head_dim 64 as well.
TEST_F(CudaAttentionTest, F16DecodeOnTheSplitKernelsTensorCores) {
  SetDecodeOnTensorCores(false);
  SetDecodeMma(true);
  SetDecodeTma(false);
  const uint64_t launches = DecodeTmaLaunches();
  Sweep(this, DType::kF16);
  EXPECT_EQ(DecodeTmaLaunches(), launches);
  SetDecodeTma(true);
  SetDecodeOnTensorCores(true);
}
// The same variant with its tiles from TMA (SetDecodeTma), head_dim 64 as well.
TEST_F(CudaAttentionTest, F16DecodeWithTmaTiles) {
  SetDecodeOnTensorCores(false);
  SetDecodeTma(true);
  const uint64_t launches = DecodeTmaLaunches();
  Sweep(this, DType::kF16);
  if (DeviceIsSm90()) {
    EXPECT_GT(DecodeTmaLaunches(), launches) << "the sweep's decode batches of 8+ tokens must take the TMA form";
  } else {
    EXPECT_EQ(DecodeTmaLaunches(), launches) << "no TMA form without sm_90 code: the fallback runs";
  }
  SetDecodeOnTensorCores(true);
}
// Decode batches of 1-8 tokens on the other decode kernels (the small-batch kernel off).
TEST_F(CudaAttentionTest, F16WithoutTheSmallBatchKernel) {
  SetSmallDecodePolicy(SmallDecodePolicy{0, 1, 64, 0});
  Sweep(this, DType::kF16);
  SetSmallDecodePolicy(SmallDecodePolicy{});
}
// The small-batch kernel with splits of 16 positions (up to 8 splits, merged in a cluster) and
// with one split per token (several shared-memory stages per CTA).
TEST_F(CudaAttentionTest, F16SmallBatchKernelSplits) {
  uint32_t seed = 300;
  for (const SmallDecodePolicy policy :
       {SmallDecodePolicy{8, 8, 16, 1 << 20}, SmallDecodePolicy{8, 1, 4096, 1 << 20}}) {
    SetSmallDecodePolicy(policy);
    for (const BatchSpec& b : Batches()) {
      SCOPED_TRACE("min split " + std::to_string(policy.min_split));
      RunCase(Config{DType::kF16, 128, 4, 16}, b, seed++);
      RunCase(Config{DType::kF16, 64, 8, 32}, b, seed++);
      RunCase(Config{DType::kF16, 128, 1, 16}, b, seed++);
    }
  }
  SetSmallDecodePolicy(SmallDecodePolicy{});
}
TEST_F(CudaAttentionTest, F32) { Sweep(this, DType::kF32); }
TEST_F(CudaAttentionTest, Q8_0) { Sweep(this, DType::kQ8_0); }

// The shared memory the attention kernels need (SmemBytes at 16 rows) decides which caches a GPU
// runs; the backend refuses the others when the cache is created, naming the types that fit.
TEST_F(CudaAttentionTest, KvCacheShapesBeyondTheGpu) {
  // Figures from attention_internal.h's layout: 3 stages of 32 padded K and V rows, then floats.
  EXPECT_EQ(AttentionSmemBytes(DType::kF32, 128), 118976u);
  EXPECT_EQ(AttentionSmemBytes(DType::kF16, 128), 69824u);
  EXPECT_EQ(AttentionSmemBytes(DType::kF16, 256), 127680u);
  EXPECT_EQ(AttentionSmemBytes(DType::kQ8_0, 256), 79424u);
  for (const DType type : {DType::kF16, DType::kF32, DType::kQ8_0}) {
    for (const int32_t hd : {64, 128, 256}) {
      SCOPED_TRACE(std::string(DTypeName(type)) + " hd" + std::to_string(hd));
      const Status st = backend_->CheckKvCache(type, hd);
      const bool fits = AttentionSmemBytes(type, hd) <= static_cast<size_t>(MaxDynamicSmem());
      EXPECT_EQ(st.ok(), fits) << st.message();
      if (!fits) {
        EXPECT_NE(st.message().find("shared memory"), std::string::npos) << st.message();
      }
    }
  }
  if (MaxDynamicSmem() < 118976) {  // Ada-like (HERD_CUDA_SMEM_CAP=101376): f32 hd128 names f16 and q8_0
    EXPECT_NE(backend_->CheckKvCache(DType::kF32, 128).message().find("use --kv-type f16 or q8_0"), std::string::npos);
  }
}

// Query heads of one kv head split across CTAs (group > 16), and the generic head_dim kernel.
TEST_F(CudaAttentionTest, LargeGroupsAndOtherHeadDims) {
  uint32_t seed = 500;
  for (const BatchSpec& b : Batches()) {
    RunCase(Config{DType::kF16, 128, 20, 16, 1}, b, seed++);
    RunCase(Config{DType::kF16, 80, 4, 16}, b, seed++);
    RunCase(Config{DType::kQ8_0, 96, 2, 32}, b, seed++);
    if (Quick()) break;
    RunCase(Config{DType::kF32, 96, 1, 16}, b, seed++);
  }
}

// Decode-only batches with the prefill kernels launched anyway (AttentionBatch::may_have_runs
// left true, as a caller that does not know gives it): the same results.
TEST_F(CudaAttentionTest, DecodeBatchesWithTheRunsHintLeftOn) {
  uint32_t seed = 700;
  for (const BatchSpec& b : Batches()) {
    if (std::any_of(b.seqs.begin(), b.seqs.end(), [](const SeqSpec& s) { return s.n_new > 1; })) continue;
    for (DType type : {DType::kF16, DType::kF32, DType::kQ8_0}) {
      for (int32_t hd : {64, 128}) RunCase(Config{type, hd, 4, 16}, b, seed++, /*force_runs_hint=*/true);
    }
  }
}

// The split policy does not change results beyond rounding: fewer / more splits per item (up to
// 64 partials, splits of one tile each), on long single decodes and the mixed batch.
TEST_F(CudaAttentionTest, SplitPoliciesAgree) {
  uint32_t seed = 900;
  const std::vector<BatchSpec> batches = {
      {"decode_2100", {{2100, 1}}}, {"decode_600_x3", {{600, 1}, {90, 1}, {1, 1}}}, Batches().back()};
  for (const AttentionSplitPolicy policy : {AttentionSplitPolicy{12, 1, 64}, AttentionSplitPolicy{12, 2, 32},
                                            AttentionSplitPolicy{1, 4, 32}, AttentionSplitPolicy{64, 1, 64}}) {
    SetAttentionSplitPolicy(policy);
    for (const BatchSpec& b : batches) {
      SCOPED_TRACE("policy " + std::to_string(policy.ctas_per_sm) + "/" + std::to_string(policy.min_tiles) + "/" +
                   std::to_string(policy.max_splits));
      RunCase(Config{DType::kF16, 128, 4, 16}, b, seed++);
      RunCase(Config{DType::kQ8_0, 64, 8, 16}, b, seed++);
    }
  }
  SetAttentionSplitPolicy(AttentionSplitPolicy{});
}

TEST_F(CudaAttentionTest, EmptyBatchIsANoOp) {
  KvLayerView c;
  c.type = DType::kF16;
  c.n_blocks = 1;
  c.n_kv_heads = 1;
  c.head_dim = 64;
  c.k = backend_->Alloc(16 * 64 * 2);
  c.v = backend_->Alloc(16 * 64 * 2);
  owned_.push_back(c.k);
  owned_.push_back(c.v);
  const AttentionBatch b{};
  backend_->StoreKv(c, b, nullptr, nullptr);
  backend_->PagedAttention(c, b, nullptr, 1, 1.f, nullptr);
  backend_->Synchronize();
}

}  // namespace
}  // namespace herd::cuda
