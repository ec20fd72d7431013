// The attention ops the backend fuses, against the same ops run apart (attention_test_fixture.h):
// RopeStoreKv against Rope + Rope + StoreKv, the RoPE and K/V store inside the decode attention
// against RopeStoreKv + PagedAttention, and the TMA decode kernel against the cp.async one; each
// compares bits (outputs and caches), eagerly and inside CUDA graphs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/attention_test_fixture.h"
#include "kernels/cuda/device_arch.h"

namespace herd::cuda {
namespace {

using attention_test::CudaAttentionTest;
using testing::RandomNormal;

// RopeStoreKv (one kernel) against Rope, Rope and StoreKv of the same backend: q, k and both
// caches bit-identical. Batch: a decode token (position 37 of a 3-block sequence) and a
// 5-token chunk of another sequence.
TEST_F(CudaAttentionTest, RopeStoreKvEqualsTheThreeOps) {
  for (DType type : {DType::kF16, DType::kF32, DType::kQ8_0}) {
    for (int32_t hd : {64, 128}) {
      for (int32_t n_rot : {hd, hd / 2}) {
        SCOPED_TRACE(std::string(DTypeName(type)) + " hd" + std::to_string(hd) + " n_rot" + std::to_string(n_rot));
        const auto [a, b] = TwinCaches(type, 8, hd, std::vector<uint8_t>(CacheBytes(type, 8, hd), 0x3c));
        const std::vector<int32_t> pos = {37, 3, 4, 5, 6, 7}, seq = {0, 1, 1, 1, 1, 1};
        const std::vector<int32_t> flat = {5, 2, 7, 0}, lens = {3, 1};
        const int32_t* dflat = Upload(flat);
        const std::vector<const int32_t*> ptrs = {dflat, dflat + 3};
        const int32_t* dpos = Upload(pos);
        const AttentionBatch batch{6, dpos, Upload(seq), Upload(ptrs), Upload(lens)};
        const int32_t n_heads = 8;
        const auto q = RandomNormal(6 * n_heads * hd, 71 + hd + n_rot, 2.f);
        const auto k = RandomNormal(6 * 2 * hd, 72 + hd + n_rot, 2.f);
        const auto v = RandomNormal(6 * 2 * hd, 73 + hd + n_rot);
        const float* dinv = InverseFrequencies(n_rot);
        const float* dv = Upload(v);
        float *qa = Upload(q), *ka = Upload(k), *qb = Upload(q), *kb = Upload(k);
        backend_->Rope(qa, 6, n_heads, hd, dpos, dinv, n_rot);
        backend_->Rope(ka, 6, 2, hd, dpos, dinv, n_rot);
        backend_->StoreKv(a, batch, ka, dv);
        backend_->RopeStoreKv(b, batch, qb, n_heads, kb, dv, dpos, dinv, n_rot);
        EXPECT_EQ(Download(qa, q.size()), Download(qb, q.size()));
        EXPECT_EQ(Download(ka, k.size()), Download(kb, k.size()));
        ExpectSameCaches(a, b);
        EXPECT_NE(Download(qa, q.size()), q);  // something was rotated
      }
    }
  }
}

// RopeStoreKv right before PagedAttention on a decode batch (every sequence once,
// may_have_runs false): the backend hands the RoPE and K/V store to the attention, whose decode
// kernel does them (F16 / F32 caches on the SIMT decode kernel; else RopeStoreKv runs first).
// Against the same two ops with a Synchronize between them (RopeStoreKv alone): output and both
// caches bit-identical; q left unrotated exactly where the fusion ran. Contexts of one split and
// of several (the last split stores), partial rotation, one and three tokens, group 4 and 16;
// and with one split per context, where the tile holding the new position is issued after the
// first tiles' scores (the 200-position context: 7 tiles); and the fused form once more inside a
// CUDA graph, where the decode kernel copies earlier positions before its wait.
TEST_F(CudaAttentionTest, RopeFusedIntoDecodeAttentionEqualsTheSeparateOps) {
  for (const int max_splits : {8, 1}) {
    SetAttentionSplitPolicy(AttentionSplitPolicy{12, 1, max_splits});  // 8: several splits from 2 tiles on
    // The small-batch kernel (group 4): splits of 16 positions, or one split of several stages.
    SetSmallDecodePolicy(SmallDecodePolicy{8, max_splits == 8 ? 8 : 1, max_splits == 8 ? 16 : 4096, 1 << 20});
    for (DType type : {DType::kF16, DType::kF32, DType::kQ8_0}) {
      for (int32_t hd : {64, 128}) {
        if (!AttentionFitsDevice(type, hd)) continue;  // refused at KV cache creation (an F32 cache on Ada)
        for (int32_t group : {4, 16}) {
          for (int32_t n_tok : {1, 3}) {
            const int32_t n_rot = n_tok == 1 ? hd : hd / 2;
            SCOPED_TRACE(std::string(DTypeName(type)) + " hd" + std::to_string(hd) + " group" + std::to_string(group) +
                         " tokens" + std::to_string(n_tok) + " max splits " + std::to_string(max_splits));
            std::vector<uint8_t> init(CacheBytes(type, 40, hd));  // small finite values
            std::mt19937 rng(5 + hd + group);
            for (uint8_t& x : init) x = static_cast<uint8_t>(rng() % 7 + (type == DType::kF32 ? 0x30 : 0x28));
            const auto [a, b] = TwinCaches(type, 40, hd, init);
            // Sequence s owns blocks [13 s, 13 s + 13): contexts 38, 4 and 200 positions.
            const std::vector<int32_t> all_pos = {37, 3, 199};
            const std::vector<int32_t> pos(all_pos.begin(), all_pos.begin() + n_tok);
            const AttentionBatch batch = DecodeBatch(pos, 3, 13, 7, 200);
            const int32_t* dpos = batch.pos;
            const int32_t n_heads = 2 * group;
            const auto [q, k, v] = RandomQkv(n_tok, n_heads, hd, 81 + hd + group);
            const float* dinv = InverseFrequencies(n_rot);
            const float* dv = Upload(v);
            float *qa = Upload(q), *ka = Upload(k), *qb = Upload(q), *kb = Upload(k);
            const size_t n_out = q.size();
            float* out_a = Upload(std::vector<float>(n_out, -1.f));
            float* out_b = Upload(std::vector<float>(n_out, -2.f));
            const float scale = 1.f / std::sqrt(static_cast<float>(hd));
            backend_->RopeStoreKv(a, batch, qa, n_heads, ka, dv, dpos, dinv, n_rot);
            backend_->Synchronize();  // launches it on its own
            backend_->PagedAttention(a, batch, qa, n_heads, scale, out_a);
            backend_->RopeStoreKv(b, batch, qb, n_heads, kb, dv, dpos, dinv, n_rot);
            backend_->PagedAttention(b, batch, qb, n_heads, scale, out_b);
            const auto got = Download(out_b, n_out);
            EXPECT_EQ(Download(out_a, n_out), got);
            ExpectSameCaches(a, b);
            EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](float x) { return std::isfinite(x); }));
            const bool fused = RopeFusesIntoAttention(a, batch, n_heads);
            EXPECT_EQ(fused, type != DType::kQ8_0 && (group <= 8 || !DecodeOnTensorCores(type, hd, group)));
            EXPECT_EQ(Download(qb, n_out) == q, fused);  // the fused kernel rotates q as it loads it
            // The same in a CUDA graph, where the fused kernel copies the earlier positions' K/V
            // before waiting for the kernel before it (Params::copy_before_wait).
            auto [c, unused] = TwinCaches(type, 40, hd, init);
            float *qc = Upload(q), *kc = Upload(k);
            float* out_c = Upload(std::vector<float>(n_out, -3.f));
            ExpectGraphRunMatches(c, batch, qc, kc, dv, dpos, dinv, n_rot, n_heads, scale, out_c);
            EXPECT_EQ(Download(out_c, n_out), got);
            ExpectSameCaches(a, c);
          }
        }
      }
    }
  }
  SetAttentionSplitPolicy(AttentionSplitPolicy{});
  SetSmallDecodePolicy(SmallDecodePolicy{});
}

// The TMA variant of the split kernel's tensor-core decode (SetDecodeTma) against the
// cp.async one: the same bits for outputs and caches, with and without the fused RoPE + K/V store,
// for one split per context (up to 19 tiles, more than the stages) and several; and once more in
// a CUDA graph, where the producer loads the earlier positions before its wait. Contexts end
// inside, at and past block and tile boundaries (the cache's other bytes are finite here; the
// sweep above has NaN there).
TEST_F(CudaAttentionTest, TmaDecodeGivesTheCpAsyncBits) {
  SetDecodeOnTensorCores(false);
  const std::vector<int32_t> ctx = {1, 16, 17, 33, 64, 100, 300, 599, 31};  // 9 decode tokens
  const int32_t n_tok = static_cast<int32_t>(ctx.size()), blocks_per_seq = 38, n_blocks = n_tok * blocks_per_seq;
  for (const int max_splits : {8, 1}) {
    SetAttentionSplitPolicy(AttentionSplitPolicy{12, 1, max_splits});
    for (int32_t hd : {64, 128}) {
      for (int32_t group : {4, 8, 16}) {
        for (const bool rope : {false, true}) {
          SCOPED_TRACE("hd" + std::to_string(hd) + " group" + std::to_string(group) + (rope ? " rope" : "") +
                       " max splits " + std::to_string(max_splits));
          std::vector<uint8_t> init(CacheBytes(DType::kF16, n_blocks, hd));
          std::mt19937 rng(7 + hd + group);
          for (uint8_t& x : init) x = static_cast<uint8_t>(rng() % 7 + 0x28);  // small finite halves
          auto [a, b] = TwinCaches(DType::kF16, n_blocks, hd, init);
          std::vector<int32_t> pos(ctx.size());
          for (size_t t = 0; t < ctx.size(); ++t) pos[t] = ctx[t] - 1;
          const AttentionBatch batch = DecodeBatch(pos, n_tok, blocks_per_seq, 101, 599);
          const int32_t* dpos = batch.pos;
          const int32_t n_heads = 2 * group;
          const auto [q, k, v] = RandomQkv(n_tok, n_heads, hd, 91 + hd + group);
          const float* dinv = InverseFrequencies(hd);
          const float* dv = Upload(v);
          const size_t n_out = q.size();
          const float scale = 1.f / std::sqrt(static_cast<float>(hd));
          std::vector<float> outs[2];
          for (const bool tma : {false, true}) {
            SetDecodeTma(tma);
            const uint64_t launches = DecodeTmaLaunches();
            const KvLayerView& cache = tma ? b : a;
            float *dq = Upload(q), *dk = Upload(k);
            float* out = Upload(std::vector<float>(n_out, -1.f));
            if (rope) backend_->RopeStoreKv(cache, batch, dq, n_heads, dk, dv, dpos, dinv, hd);
            backend_->PagedAttention(cache, batch, dq, n_heads, scale, out);
            outs[tma] = Download(out, n_out);
            // The TMA form ran (not its fallback) exactly where it is on and the code has it (sm_90);
            // one launch per call.
            EXPECT_EQ(DecodeTmaLaunches() - launches, tma && DeviceIsSm90() ? 1u : 0u);
          }
          EXPECT_EQ(outs[0], outs[1]);
          ExpectSameCaches(a, b);
          EXPECT_TRUE(std::all_of(outs[1].begin(), outs[1].end(), [](float x) { return std::isfinite(x); }));
          if (rope) {
            EXPECT_TRUE(RopeFusesIntoAttention(a, batch, n_heads));
            auto [c, unused] = TwinCaches(DType::kF16, n_blocks, hd, init);
            float *qc = Upload(q), *kc = Upload(k);
            float* out_c = Upload(std::vector<float>(n_out, -3.f));
            ExpectGraphRunMatches(c, batch, qc, kc, dv, dpos, dinv, hd, n_heads, scale, out_c);
            EXPECT_EQ(Download(out_c, n_out), outs[0]);
            ExpectSameCaches(a, c);
          }
        }
      }
    }
  }
  SetDecodeTma(true);
  SetAttentionSplitPolicy(AttentionSplitPolicy{});
  SetDecodeOnTensorCores(true);
}

}  // namespace
}  // namespace herd::cuda
