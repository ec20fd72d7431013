// Q/K/V uploaded as one group (Backend::PrepareWeightGroup: back to back) run as one GEMM at
// MatMulRunner::ConcatTokRange() tokens (MatMulConcatenated); the backend keeps the outputs in
// that GEMM's [n_tok, q + k + v] buffer until something reads them:
//  - a decode attention with the RoPE + K/V store inside reads them in place (strided rows): the
//    attention output and the cache bytes equal, bit for bit, those of the same GEMM copied out
//    first (the outputs' own buffers then stay unwritten);
//  - any other op (here a synchronize, or an attention over a batch that may hold prefill runs)
//    gets them copied into the callers' buffers first, equal to rounding to the grouped kernel's
//    outputs of the same weights uploaded one by one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <tuple>
#include <vector>

#include "base/fp16.h"
#include "kernels/attention.h"
#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/matmul_cuda.h"
#include "kernels/ops.h"
#include "tensor/tensor.h"

namespace herd::cuda {
namespace {

using testing::CudaBackendTest;
using testing::RandomNormal;
using testing::RelError;

class QkvConcatTest : public CudaBackendTest {
 protected:
  static constexpr int32_t kKvHeads = 4, kGroup = 4, kHeadDim = 128, kBlock = 16, kRot = 128;
  static constexpr int32_t kHeads = kKvHeads * kGroup;
  static constexpr int64_t kEmbd = 512, kQ = int64_t{kHeads} * kHeadDim, kKv = int64_t{kKvHeads} * kHeadDim;

  // Random F16 / BF16 weight bytes of [rows, kEmbd] (values ~N(0, 0.05)).
  static std::vector<uint8_t> WeightBytes(DType type, int64_t rows, uint32_t seed) {
    const auto v = RandomNormal(static_cast<size_t>(rows * kEmbd), seed, 0.05f);
    std::vector<uint8_t> bytes(v.size() * 2);
    for (size_t i = 0; i < v.size(); ++i) {
      uint16_t h;
      if (type == DType::kF16) {
        h = Fp32ToFp16(v[i]);
      } else {
        uint32_t u;
        std::memcpy(&u, &v[i], 4);
        h = static_cast<uint16_t>(u >> 16);  // bfloat16 by truncation
      }
      std::memcpy(&bytes[2 * i], &h, 2);
    }
    return bytes;
  }

  // Sequences of one decode token each at position pos_[s]; every earlier position's K/V random
  // in host_k_ / host_v_ (F16 cache); Cache() uploads a fresh copy.
  void MakeSequences(int64_t n_seq) {
    pos_.clear();
    table_lens_.clear();
    std::vector<int32_t> flat;
    for (int64_t s = 0; s < n_seq; ++s) {
      pos_.push_back(static_cast<int32_t>((s * 37) % 300 + (s % 3 == 0 ? 0 : 5)));
      const int32_t n = pos_.back() / kBlock + 1;
      table_lens_.push_back(n);
      for (int32_t i = 0; i < n; ++i) flat.push_back(static_cast<int32_t>(flat.size()));
    }
    host_ = KvLayerView{};
    host_.type = DType::kF16;
    host_.block_size = kBlock;
    host_.n_kv_heads = kKvHeads;
    host_.head_dim = kHeadDim;
    host_.n_blocks = static_cast<int32_t>(flat.size());
    const size_t vec = KvVectorBytes(DType::kF16, kHeadDim);
    host_k_.assign(flat.size() * kBlock * kKvHeads * vec, 0);
    host_v_.assign(host_k_.size(), 0);
    host_.k = host_k_.data();
    host_.v = host_v_.data();
    std::vector<const int32_t*> host_tables;
    for (size_t s = 0, off = 0; s < pos_.size(); off += table_lens_[s], ++s) host_tables.push_back(&flat[off]);
    for (size_t s = 0; s < pos_.size(); ++s) {
      const int32_t n = pos_[s];
      if (n == 0) continue;
      std::vector<int32_t> pos(static_cast<size_t>(n)), seq(static_cast<size_t>(n), static_cast<int32_t>(s));
      for (int32_t i = 0; i < n; ++i) pos[i] = i;
      const auto k = RandomNormal(static_cast<size_t>(n * kKv), 100 + static_cast<uint32_t>(s));
      const auto v = RandomNormal(static_cast<size_t>(n * kKv), 300 + static_cast<uint32_t>(s));
      ref::StoreKv(host_, AttentionBatch{n, pos.data(), seq.data(), host_tables.data(), table_lens_.data()}, k.data(),
                   v.data());
    }
    const int32_t* dflat = Upload(flat);
    std::vector<const int32_t*> tables;
    for (size_t s = 0, off = 0; s < pos_.size(); off += table_lens_[s], ++s) tables.push_back(dflat + off);
    tables_ = Upload(tables);
    lens_ = Upload(table_lens_);
    dev_pos_ = Upload(pos_);
    std::vector<int32_t> seq(pos_.size());
    for (size_t s = 0; s < seq.size(); ++s) seq[s] = static_cast<int32_t>(s);
    dev_seq_ = Upload(seq);
    std::vector<float> inv(kRot / 2);
    for (int32_t i = 0; i < kRot / 2; ++i) inv[i] = std::pow(10000.f, -2.f * static_cast<float>(i) / kRot);
    inv_freq_ = Upload(inv);
  }
  KvLayerView Cache() {
    KvLayerView dev = host_;
    dev.k = Upload(host_k_);
    dev.v = Upload(host_v_);
    return dev;
  }
  AttentionBatch Batch(bool may_have_runs) const {
    AttentionBatch b{static_cast<int64_t>(pos_.size()), dev_pos_, dev_seq_, tables_, lens_};
    b.may_have_runs = may_have_runs;
    b.max_context = *std::max_element(pos_.begin(), pos_.end()) + 1;
    return b;
  }

  struct Run {
    float *q, *k, *v, *out;
    KvLayerView cache;
  };
  // MatMulShared(ws) -> (optional synchronize) -> RopeStoreKv -> PagedAttention, into poisoned
  // buffers and a fresh cache.
  Run Layer(const TensorView* ws, const float* x, bool sync_between, bool may_have_runs) {
    const auto n = static_cast<size_t>(pos_.size());
    Run r{Poisoned<float>(n * kQ), Poisoned<float>(n * kKv), Poisoned<float>(n * kKv), Poisoned<float>(n * kQ),
          Cache()};
    float* const ys[] = {r.q, r.k, r.v};
    const AttentionBatch b = Batch(may_have_runs);
    backend_->MatMulShared(std::span<const TensorView>(ws, 3), x, b.n_tokens, ys);
    if (sync_between) backend_->Synchronize();
    backend_->RopeStoreKv(r.cache, b, r.q, kHeads, r.k, r.v, dev_pos_, inv_freq_, kRot);
    backend_->PagedAttention(r.cache, b, r.q, kHeads, 1.f / std::sqrt(float{kHeadDim}), r.out);
    return r;
  }
  template <typename T>
  std::vector<T> Bytes(const void* p, size_t n) {
    return Download(static_cast<const T*>(p), n);
  }

  // Host weight bytes stay alive for the whole test: the store keys uploads by host address.
  const std::vector<uint8_t>& Keep(std::vector<uint8_t> bytes) { return kept_.emplace_back(std::move(bytes)); }
  // Which tokens' outputs differ (the first few: token, position, max abs difference).
  std::string Diff(const std::vector<float>& a, const std::vector<float>& b) const {
    std::string d;
    int shown = 0, n_diff = 0;
    for (size_t t = 0; t < pos_.size(); ++t) {
      float m = 0;
      for (int64_t i = 0; i < kQ; ++i) m = std::max(m, std::abs(a[t * kQ + i] - b[t * kQ + i]));
      if (m > 0) {
        ++n_diff;
        if (shown++ < 6) d += " t" + std::to_string(t) + "@" + std::to_string(pos_[t]) + ":" + std::to_string(m);
      }
    }
    return std::to_string(n_diff) + " tokens differ:" + d;
  }

  std::deque<std::vector<uint8_t>> kept_;
  KvLayerView host_;
  std::vector<uint8_t> host_k_, host_v_;
  std::vector<int32_t> pos_, table_lens_;
  const int32_t* const* tables_ = nullptr;
  const int32_t* lens_ = nullptr;
  const int32_t* dev_pos_ = nullptr;
  const int32_t* dev_seq_ = nullptr;
  const float* inv_freq_ = nullptr;
};

TEST_F(QkvConcatTest, StridedAttentionEqualsTheCopiedOutputs) {
  const auto [lo, hi] = MatMulRunner::ConcatTokRange();
  if (lo < 1 || hi < lo) GTEST_SKIP() << "HERD_CUDA_CONCAT_TOK turns the concatenated GEMM off";
  for (DType type : {DType::kF16, DType::kBF16}) {
    for (int64_t n_seq : {lo, (lo + hi) / 2 + 1, hi}) {
      SCOPED_TRACE(std::string(DTypeName(type)) + " n_tok=" + std::to_string(n_seq));
      MakeSequences(n_seq);
      const std::vector<uint8_t>&hq = Keep(WeightBytes(type, kQ, 1)), &hk = Keep(WeightBytes(type, kKv, 2)),
            &hv = Keep(WeightBytes(type, kKv, 3));
      const TensorView hosts[] = {TensorView::Matrix(type, kQ, kEmbd, const_cast<uint8_t*>(hq.data())),
                                  TensorView::Matrix(type, kKv, kEmbd, const_cast<uint8_t*>(hk.data())),
                                  TensorView::Matrix(type, kKv, kEmbd, const_cast<uint8_t*>(hv.data()))};
      TensorView group[3];
      backend_->PrepareWeightGroup(hosts, group);
      ASSERT_EQ(group[1].data, static_cast<uint8_t*>(group[0].data) + group[0].bytes());
      ASSERT_EQ(group[2].data, static_cast<uint8_t*>(group[1].data) + group[1].bytes());
      // The same weights one by one (other host copies: the store keys uploads by host address).
      const std::vector<uint8_t>&hq2 = Keep(hq), &hk2 = Keep(hk), &hv2 = Keep(hv);
      const TensorView single[] = {
          backend_->PrepareWeight(TensorView::Matrix(type, kQ, kEmbd, const_cast<uint8_t*>(hq2.data()))),
          backend_->PrepareWeight(TensorView::Matrix(type, kKv, kEmbd, const_cast<uint8_t*>(hk2.data()))),
          backend_->PrepareWeight(TensorView::Matrix(type, kKv, kEmbd, const_cast<uint8_t*>(hv2.data())))};
      const float* x = Upload(RandomNormal(static_cast<size_t>(n_seq * kEmbd), 7));
      const auto n = static_cast<size_t>(n_seq);

      const Run a = Layer(group, x, /*sync_between=*/false, /*may_have_runs=*/false);  // read in place
      const Run b = Layer(group, x, /*sync_between=*/true, /*may_have_runs=*/false);   // copied out first
      const Run a2 = Layer(group, x, false, false), b2 = Layer(group, x, true, false);
      EXPECT_EQ(Download(a.out, n * kQ), Download(a2.out, n * kQ)) << "strided run not repeatable";
      EXPECT_EQ(Download(b.out, n * kQ), Download(b2.out, n * kQ)) << "copied run not repeatable";
      EXPECT_EQ(Download(a.out, n * kQ), Download(b.out, n * kQ))
          << Diff(Download(a.out, n * kQ), Download(b.out, n * kQ));
      const size_t cache_bytes = host_k_.size();
      EXPECT_EQ(Bytes<uint8_t>(a.cache.k, cache_bytes), Bytes<uint8_t>(b.cache.k, cache_bytes));
      EXPECT_EQ(Bytes<uint8_t>(a.cache.v, cache_bytes), Bytes<uint8_t>(b.cache.v, cache_bytes));
      EXPECT_TRUE(std::isnan(Download(a.q, 1)[0])) << "the strided attention should leave q unwritten";
      EXPECT_TRUE(std::isnan(Download(a.v, n * kKv)[n * kKv - 1]));

      // The copied-out outputs (q and k unrotated: the RoPE ran inside the attention) against the
      // grouped kernel on the single uploads.
      const Run c = Layer(single, x, /*sync_between=*/true, /*may_have_runs=*/false);
      for (auto [got, want, m] : {std::tuple{b.q, c.q, n * kQ}, {b.k, c.k, n * kKv}, {b.v, c.v, n * kKv}}) {
        const auto g = Download(got, m), w = Download(want, m);
        EXPECT_LE(RelError(g.data(), w.data(), m), 1e-5);
      }
      // The new position's K and V are rounded to f16 in the cache: outputs 1e-5 apart may round
      // one value to the next f16 (2^-11 relative), which the token at position 0 (attending to
      // itself only) shows in full.
      EXPECT_LE(RelError(Download(b.out, n * kQ).data(), Download(c.out, n * kQ).data(), n * kQ), 1e-3)
          << Diff(Download(b.out, n * kQ), Download(c.out, n * kQ));

      // A batch that may hold prefill runs: no RoPE inside the attention, the outputs are copied
      // out before the RoPE kernel (the prefill kernels round q to f16: 2e-3).
      const Run d = Layer(group, x, /*sync_between=*/false, /*may_have_runs=*/true);
      EXPECT_LE(RelError(Download(d.out, n * kQ).data(), Download(b.out, n * kQ).data(), n * kQ), 2e-3);
      EXPECT_EQ(Bytes<uint8_t>(d.cache.v, cache_bytes), Bytes<uint8_t>(b.cache.v, cache_bytes));
    }
  }
}

// Outside the token range, or for weights not back to back, MatMulShared runs the weights as
// before: the grouped upload gives exactly the one-by-one upload's outputs.
TEST_F(QkvConcatTest, OutsideTheRangeNothingChanges) {
  const auto [lo, hi] = MatMulRunner::ConcatTokRange();
  for (int64_t n_tok : {int64_t{1}, int64_t{12}, hi + 1}) {
    if (n_tok >= lo && n_tok <= hi) continue;
    SCOPED_TRACE("n_tok=" + std::to_string(n_tok));
    const std::vector<uint8_t>&hq = Keep(WeightBytes(DType::kF16, kQ, 4)), &hk = Keep(WeightBytes(DType::kF16, kKv, 5)),
          &hv = Keep(WeightBytes(DType::kF16, kKv, 6)), &hq2 = Keep(hq), &hk2 = Keep(hk), &hv2 = Keep(hv);
    const TensorView hosts[] = {TensorView::Matrix(DType::kF16, kQ, kEmbd, const_cast<uint8_t*>(hq.data())),
                                TensorView::Matrix(DType::kF16, kKv, kEmbd, const_cast<uint8_t*>(hk.data())),
                                TensorView::Matrix(DType::kF16, kKv, kEmbd, const_cast<uint8_t*>(hv.data()))};
    TensorView group[3];
    backend_->PrepareWeightGroup(hosts, group);
    const TensorView single[] = {
        backend_->PrepareWeight(TensorView::Matrix(DType::kF16, kQ, kEmbd, const_cast<uint8_t*>(hq2.data()))),
        backend_->PrepareWeight(TensorView::Matrix(DType::kF16, kKv, kEmbd, const_cast<uint8_t*>(hk2.data()))),
        backend_->PrepareWeight(TensorView::Matrix(DType::kF16, kKv, kEmbd, const_cast<uint8_t*>(hv2.data())))};
    const float* x = Upload(RandomNormal(static_cast<size_t>(n_tok * kEmbd), 8));
    const auto n = static_cast<size_t>(n_tok);
    float* const y1[] = {Poisoned<float>(n * kQ), Poisoned<float>(n * kKv), Poisoned<float>(n * kKv)};
    float* const y2[] = {Poisoned<float>(n * kQ), Poisoned<float>(n * kKv), Poisoned<float>(n * kKv)};
    backend_->MatMulShared(group, x, n_tok, y1);
    backend_->MatMulShared(single, x, n_tok, y2);
    for (int i = 0; i < 3; ++i) {
      const size_t m = n * (i == 0 ? kQ : kKv);
      EXPECT_EQ(Download(y1[i], m), Download(y2[i], m)) << "output " << i;
    }
  }
}

}  // namespace
}  // namespace herd::cuda
