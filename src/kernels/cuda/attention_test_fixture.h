// The fixture of the CUDA attention tests (attention_cuda_test.cc, attention_decode_fused_test.cc):
// paged caches built through the reference, one batch run through both implementations and
// compared (RunCase; the checks are described in attention_cuda_test.cc), twin caches for ops run
// two ways, decode batches and random q / k / v. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/fp16.h"
#include "kernels/attention.h"
#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/device_arch.h"
#include "kernels/ops.h"

namespace herd::cuda::attention_test {

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

inline std::vector<BatchSpec> Batches() {
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

inline std::string Name(const Config& c, const BatchSpec& b) {
  return std::string(DTypeName(c.type)) + " hd" + std::to_string(c.head_dim) + " group" + std::to_string(c.group) +
         " bs" + std::to_string(c.block_size) + " " + b.name;
}

class CudaAttentionTest : public CudaBackendTest {
 public:
  // runs_hint: AttentionBatch::may_have_runs as the model sets it (false for batches without
  // prefill runs: the prefill kernels are skipped), or forced true (they run and exit at once).
  void RunCase(const Config& cfg, const BatchSpec& spec, uint32_t seed, bool force_runs_hint = false) {
    SCOPED_TRACE(Name(cfg, spec));
    if (!AttentionFitsDevice(cfg.type, cfg.head_dim)) {  // refused at KV cache creation on this GPU
      std::printf("skipping %s: %zu bytes of shared memory, over this GPU's %d\n", Name(cfg, spec).c_str(),
                  AttentionSmemBytes(cfg.type, cfg.head_dim), MaxDynamicSmem());
      return;
    }
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
    // Uploads of up to HostCopies' direct-copy size are queued on the backend's stream, which
    // `stream` (non-blocking) does not wait for: without this the eager run could read q / k before
    // they land, and the NaN poison could land after its output (seen under racecheck, which slows
    // the kernels enough: wout all NaN, 2026-11-28).
    backend_->Synchronize();
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

inline bool Quick() { return std::getenv("HERD_CUDA_TEST_QUICK") != nullptr; }

}  // namespace herd::cuda::attention_test
