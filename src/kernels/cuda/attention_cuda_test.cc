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

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/fp16.h"
#include "kernels/attention.h"
#include "kernels/cuda/cuda_test_util.h"
#include "kernels/ops.h"

namespace herd::cuda {
namespace {

using testing::CudaBackendTest;
using testing::RandomNormal;
using testing::RelError;

struct SeqSpec {
  int32_t before;  // positions already in the cache
  int32_t n_new;   // tokens of this sequence in the batch
};

struct BatchSpec {
  const char* name;
  std::vector<SeqSpec> seqs;
  bool reverse_last = false;  // the last sequence's tokens appear in reverse order
};

std::vector<BatchSpec> Batches() {
  return {
      {"single_decode", {{37, 1}}},
      {"single_decode_long", {{1500, 1}}},
      {"few_decode", {{5, 1}, {64, 1}, {700, 1}}},
      {"many_decode", {{0, 1}, {1, 1}, {15, 1}, {16, 1}, {17, 1}, {100, 1}, {511, 1}, {1030, 1}, {2100, 1}}},
      {"prefill_chunk_at_70", {{70, 45}}},
      {"prefill_300", {{0, 300}}},
      {"mixed", {{1200, 1}, {70, 37}, {5, 1}, {0, 20}, {300, 1}, {33, 3}}, true},
  };
}

struct Config {
  DType type;
  int32_t head_dim;
  int32_t group;
  int32_t block_size;
  int32_t n_kv_heads = 2;
};

std::string Name(const Config& c, const BatchSpec& b) {
  return std::string(DTypeName(c.type)) + " hd" + std::to_string(c.head_dim) + " group" + std::to_string(c.group) +
         " bs" + std::to_string(c.block_size) + " " + b.name;
}

class CudaAttentionTest : public CudaBackendTest {
 public:
  // runs_hint: AttentionBatch::may_have_runs as the model sets it (false for batches without
  // prefill runs: the prefill kernels are skipped), or forced true (they run and exit at once).
  void RunCase(const Config& cfg, const BatchSpec& spec, uint32_t seed, bool force_runs_hint = false) {
    SCOPED_TRACE(Name(cfg, spec));
    std::mt19937 rng(seed);
    KvLayerView host;
    host.type = cfg.type;
    host.block_size = cfg.block_size;
    host.n_kv_heads = cfg.n_kv_heads;
    host.head_dim = cfg.head_dim;
    const int32_t n_seqs = static_cast<int32_t>(spec.seqs.size());
    std::vector<int32_t> n_blocks_of(n_seqs);
    int32_t total_blocks = 3;  // a few never used
    for (int32_t s = 0; s < n_seqs; ++s) {
      const int32_t len = spec.seqs[s].before + spec.seqs[s].n_new;
      n_blocks_of[s] = (len + cfg.block_size - 1) / cfg.block_size;
      total_blocks += n_blocks_of[s];
    }
    host.n_blocks = total_blocks;
    const size_t vec = KvVectorBytes(cfg.type, cfg.head_dim);
    const size_t cache_bytes = static_cast<size_t>(total_blocks) * cfg.block_size * cfg.n_kv_heads * vec;
    std::vector<uint8_t> kc(cache_bytes), vc(cache_bytes);
    FillNaN(cfg.type, cfg.head_dim, kc);
    FillNaN(cfg.type, cfg.head_dim, vc);
    host.k = kc.data();
    host.v = vc.data();

    std::vector<int32_t> perm(total_blocks);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<std::vector<int32_t>> tables(n_seqs);
    for (int32_t s = 0, next = 0; s < n_seqs; ++s) {
      for (int32_t i = 0; i < n_blocks_of[s]; ++i) tables[s].push_back(perm[next++]);
    }
    std::vector<const int32_t*> table_ptrs;
    std::vector<int32_t> table_lens;
    for (auto& t : tables) {
      table_ptrs.push_back(t.data());
      table_lens.push_back(static_cast<int32_t>(t.size()));
    }
    const int64_t row = static_cast<int64_t>(cfg.n_kv_heads) * cfg.head_dim;
    // The sequences' earlier positions, stored by the reference.
    for (int32_t s = 0; s < n_seqs; ++s) {
      const int32_t n = spec.seqs[s].before;
      if (n == 0) continue;
      std::vector<int32_t> pos(n), seq(n, s);
      std::iota(pos.begin(), pos.end(), 0);
      const auto k = RandomNormal(n * row, seed * 7 + s);
      const auto v = RandomNormal(n * row, seed * 11 + s);
      ref::StoreKv(host, AttentionBatch{n, pos.data(), seq.data(), table_ptrs.data(), table_lens.data()}, k.data(),
                   v.data());
    }
    // The batch: each sequence's new tokens in order (the last one reversed if asked).
    std::vector<int32_t> pos, seq;
    for (int32_t s = 0; s < n_seqs; ++s) {
      std::vector<int32_t> p(spec.seqs[s].n_new);
      std::iota(p.begin(), p.end(), spec.seqs[s].before);
      if (spec.reverse_last && s == n_seqs - 1) std::reverse(p.begin(), p.end());
      for (int32_t x : p) {
        pos.push_back(x);
        seq.push_back(s);
      }
    }
    const int64_t n_tok = static_cast<int64_t>(pos.size());
    const int32_t n_heads = cfg.n_kv_heads * cfg.group;
    const auto k = RandomNormal(n_tok * row, seed * 13);
    const auto v = RandomNormal(n_tok * row, seed * 17);
    const auto q = RandomNormal(n_tok * n_heads * cfg.head_dim, seed * 19, 2.f);
    const float scale = 1.0f / std::sqrt(static_cast<float>(cfg.head_dim));

    // Device side: the cache as it is before the batch, the batch description in device memory.
    KvLayerView dev = host;
    dev.k = Upload(kc);
    dev.v = Upload(vc);
    std::vector<int32_t> flat;
    for (auto& t : tables) flat.insert(flat.end(), t.begin(), t.end());
    const int32_t* dflat = Upload(flat);
    std::vector<const int32_t*> dptrs;
    for (int32_t s = 0, off = 0; s < n_seqs; off += table_lens[s], ++s) dptrs.push_back(dflat + off);
    bool runs = force_runs_hint;
    for (int64_t t = 1; t < n_tok; ++t) runs = runs || (seq[t] == seq[t - 1] && pos[t] == pos[t - 1] + 1);
    AttentionBatch db{n_tok, Upload(pos), Upload(seq), Upload(dptrs), Upload(table_lens), runs};
    db.max_context = *std::max_element(pos.begin(), pos.end()) + 1;  // as the model gives it
    float* out = Poisoned<float>(q.size());
    backend_->StoreKv(dev, db, Upload(k), Upload(v));
    backend_->PagedAttention(dev, db, Upload(q), n_heads, scale, out);

    const AttentionBatch hb{n_tok, pos.data(), seq.data(), table_ptrs.data(), table_lens.data()};
    ref::StoreKv(host, hb, k.data(), v.data());
    std::vector<float> want(q.size());
    ref::PagedAttention(host, hb, q.data(), n_heads, scale, want.data());

    const auto got_k = Download(static_cast<const uint8_t*>(dev.k), cache_bytes);
    const auto got_v = Download(static_cast<const uint8_t*>(dev.v), cache_bytes);
    EXPECT_TRUE(BytesEqual(got_k, kc)) << "K cache differs after StoreKv";
    EXPECT_TRUE(BytesEqual(got_v, vc)) << "V cache differs after StoreKv";
    const auto got = Download(out, q.size());
    // Rows of prefill runs (a batch neighbour at the previous / next position) of an F16 cache
    // with head_dim 64 / 128 go through the tensor-core kernel, which rounds q and the softmax
    // weights to f16 (2^-11): a looser bound there.
    const bool tc = cfg.type == DType::kF16 && (cfg.head_dim == 64 || cfg.head_dim == 128) && cfg.group <= 64;
    const bool tc_decode = DecodeOnTensorCores(cfg.type, cfg.head_dim, cfg.group) ||
                           DecodeUsesMma(cfg.type, cfg.head_dim, n_tok) || DecodeUsesSmallKernel(dev, db, n_heads);
    double worst = 0, worst_tc = 0;
    int64_t worst_row = -1;
    for (int64_t r = 0; r < n_tok * n_heads; ++r) {
      const int64_t tk = r / n_heads;
      const bool run = (tk > 0 && seq[tk - 1] == seq[tk] && pos[tk - 1] == pos[tk] - 1) ||
                       (tk + 1 < n_tok && seq[tk + 1] == seq[tk] && pos[tk + 1] == pos[tk] + 1);
      const double e = RelError(got.data() + r * cfg.head_dim, want.data() + r * cfg.head_dim, cfg.head_dim);
      if ((tc && run) || (tc_decode && !run)) {
        worst_tc = std::isnan(e) || e > worst_tc ? e : worst_tc;
        if (!(e <= 4e-3))
          ADD_FAILURE() << "tensor-core row " << r << " (token " << tk << ", pos " << pos[tk] << ") error " << e;
        continue;
      }
      if (!(e <= worst)) {
        worst = e;
        worst_row = r;
      }
    }
    EXPECT_LE(worst, 1e-4) << "worst row " << worst_row << " (token " << worst_row / n_heads << ", pos "
                           << (worst_row >= 0 ? pos[worst_row / n_heads] : -1) << ", head " << worst_row % n_heads
                           << ")";
    if (std::getenv("HERD_CUDA_TEST_VERBOSE") != nullptr) {
      std::printf("%-40s worst row error %.2e (tensor-core rows %.2e)\n", Name(cfg, spec).c_str(), worst, worst_tc);
    }
  }

  static bool BytesEqual(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
  }

  // Two device caches of `type` (2 kv heads, n_blocks blocks of 16 positions) both holding
  // `init` (CacheBytes long), for ops run two ways.
  static size_t CacheBytes(DType type, int32_t n_blocks, int32_t head_dim) {
    return static_cast<size_t>(n_blocks) * 16 * 2 * KvVectorBytes(type, head_dim);
  }
  std::pair<KvLayerView, KvLayerView> TwinCaches(DType type, int32_t n_blocks, int32_t head_dim,
                                                 const std::vector<uint8_t>& init) {
    KvLayerView a;
    a.type = type;
    a.n_blocks = n_blocks;
    a.block_size = 16;
    a.n_kv_heads = 2;
    a.head_dim = head_dim;
    a.k = Upload(init);
    a.v = Upload(init);
    KvLayerView b = a;
    b.k = Upload(init);
    b.v = Upload(init);
    return {a, b};
  }
  void ExpectSameCaches(const KvLayerView& a, const KvLayerView& b) {
    const size_t bytes = CacheBytes(a.type, a.n_blocks, a.head_dim);
    EXPECT_TRUE(BytesEqual(Download(static_cast<const uint8_t*>(a.k), bytes),
                           Download(static_cast<const uint8_t*>(b.k), bytes)));
    EXPECT_TRUE(BytesEqual(Download(static_cast<const uint8_t*>(a.v), bytes),
                           Download(static_cast<const uint8_t*>(b.v), bytes)));
  }
  // RopeStoreKv + PagedAttention (fused where RopeFusesIntoAttention) captured in a CUDA graph
  // on a stream of its own, launched, and waited for; the graph's attention scratch grows in an
  // eager run on a copy of everything first.
  void ExpectGraphRunMatches(const KvLayerView& cache, const AttentionBatch& batch, float* q, float* k, const float* v,
                             const int32_t* pos, const float* inv_freq, int32_t n_rot, int32_t n_heads, float scale,
                             float* out) {
    int dev = 0, sms = 0;
    HERD_CUDA_CHECK(cudaGetDevice(&dev));
    HERD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const size_t cache_bytes = CacheBytes(cache.type, cache.n_blocks, cache.head_dim);
    const size_t nq = static_cast<size_t>(batch.n_tokens) * n_heads * cache.head_dim;
    const size_t nk = static_cast<size_t>(batch.n_tokens) * cache.n_kv_heads * cache.head_dim;
    KvLayerView warm = cache;
    warm.k = Upload(Download(static_cast<const uint8_t*>(cache.k), cache_bytes));
    warm.v = Upload(Download(static_cast<const uint8_t*>(cache.v), cache_bytes));
    float *wq = Upload(Download(q, nq)), *wk = Upload(Download(k, nk)), *wout = Poisoned<float>(nq);
    cudaStream_t stream;
    HERD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    AttentionScratch scratch;
    const RopeStoreArgs warm_rope{wq, wk, v, pos, inv_freq, n_rot};
    PagedAttention(warm, batch, wq, n_heads, scale, wout, sms, &scratch, stream, &warm_rope);
    const RopeStoreArgs rope{q, k, v, pos, inv_freq, n_rot};
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    HERD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    PagedAttention(cache, batch, q, n_heads, scale, out, sms, &scratch, stream, &rope);
    HERD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    HERD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    HERD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream));
    HERD_CUDA_CHECK(cudaGraphExecDestroy(exec));
    HERD_CUDA_CHECK(cudaGraphDestroy(graph));
    HERD_CUDA_CHECK(cudaStreamDestroy(stream));
    EXPECT_EQ(Download(wout, nq), Download(out, nq)) << "eager and graph runs";
  }
  // A decode batch (may_have_runs false): token t at position pos[t] of sequence n_seqs - 1 - t;
  // sequence s owns blocks [s * blocks_per_seq, (s + 1) * blocks_per_seq) of the permutation
  // i -> i * mul % (n_seqs * blocks_per_seq) (mul coprime to the block count).
  AttentionBatch DecodeBatch(const std::vector<int32_t>& pos, int32_t n_seqs, int32_t blocks_per_seq, int32_t mul,
                             int32_t max_context) {
    const int32_t n_tok = static_cast<int32_t>(pos.size()), n_blocks = n_seqs * blocks_per_seq;
    std::vector<int32_t> seq(pos.size()), flat(static_cast<size_t>(n_blocks)), lens(static_cast<size_t>(n_seqs));
    for (int32_t t = 0; t < n_tok; ++t) seq[static_cast<size_t>(t)] = n_seqs - 1 - t;  // not in order
    for (int32_t i = 0; i < n_blocks; ++i) flat[static_cast<size_t>(i)] = (i * mul) % n_blocks;
    std::fill(lens.begin(), lens.end(), blocks_per_seq);
    const int32_t* dflat = Upload(flat);
    std::vector<const int32_t*> ptrs;
    for (int32_t s = 0; s < n_seqs; ++s) ptrs.push_back(dflat + s * blocks_per_seq);
    AttentionBatch batch{n_tok, Upload(pos), Upload(seq), Upload(ptrs), Upload(lens)};
    batch.may_have_runs = false;
    batch.max_context = max_context;
    return batch;
  }
  // Random q [n_tok, n_heads, hd], k and v [n_tok, 2 kv heads, hd] (q and k with std 2), from seed.
  struct Qkv {
    std::vector<float> q, k, v;
  };
  static Qkv RandomQkv(int32_t n_tok, int32_t n_heads, int32_t hd, uint32_t seed) {
    return {RandomNormal(static_cast<size_t>(n_tok * n_heads * hd), seed, 2.f),
            RandomNormal(static_cast<size_t>(n_tok * 2 * hd), seed + 1, 2.f),
            RandomNormal(static_cast<size_t>(n_tok * 2 * hd), seed + 2)};
  }
  // RoPE inverse frequencies for n_rot rotated dims (llama-3 base), on the device.
  const float* InverseFrequencies(int32_t n_rot) {
    std::vector<float> inv(static_cast<size_t>(n_rot / 2));
    RopeInverseFrequencies(RopeParams{n_rot, 500000.f, 1.f, nullptr}, inv.data());
    return Upload(inv);
  }

 private:
  static void FillNaN(DType type, int32_t head_dim, std::vector<uint8_t>& bytes) {
    if (type == DType::kF32) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      for (size_t i = 0; i + 4 <= bytes.size(); i += 4) std::memcpy(&bytes[i], &nan, 4);
    } else if (type == DType::kF16) {
      for (size_t i = 0; i + 2 <= bytes.size(); i += 2) bytes[i] = 0x00, bytes[i + 1] = 0x7e;
    } else {
      std::fill(bytes.begin(), bytes.end(), 0x55);
      for (size_t i = 0; i + 34 <= bytes.size(); i += 34) bytes[i] = 0x00, bytes[i + 1] = 0x7e;  // NaN scales
    }
    (void)head_dim;
  }
};

bool Quick() { return std::getenv("HERD_CUDA_TEST_QUICK") != nullptr; }

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
  Sweep(this, DType::kF16);
  SetDecodeTma(true);
  SetDecodeOnTensorCores(true);
}
// The same variant with its tiles from TMA (SetDecodeTma), head_dim 64 as well.
TEST_F(CudaAttentionTest, F16DecodeWithTmaTiles) {
  SetDecodeOnTensorCores(false);
  SetDecodeTma(true);
  Sweep(this, DType::kF16);
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
          for (const bool bulk : {false, true}) {
            SetDecodeTma(bulk);
            const KvLayerView& cache = bulk ? b : a;
            float *dq = Upload(q), *dk = Upload(k);
            float* out = Upload(std::vector<float>(n_out, -1.f));
            if (rope) backend_->RopeStoreKv(cache, batch, dq, n_heads, dk, dv, dpos, dinv, hd);
            backend_->PagedAttention(cache, batch, dq, n_heads, scale, out);
            outs[bulk] = Download(out, n_out);
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
