// Fused matmul inputs: a norm or SwiGLU that also writes the converted input of the matmul after
// it (quant_fused.cu: int8 activations for the quantized GEMV, half / bfloat16 x for the tensor
// cores; MatMulRunner::FusedRmsNorm / FusedSwiGlu; the backend's PrepareMatMulInput hint).
//  - Kernels: the converted bytes equal QuantizeActivations / ConvertActivations of the kernel's
//    own float output, bit for bit (every format, padded and unpadded rows); the float output
//    matches the reference op (RelError 1e-6, as the unfused ops' tests).
//  - Backend: a hinted norm/SwiGLU followed by the matmul gives exactly the matmul of that output
//    without the hint, on the GEMV and the tensor-core path; a hint followed by another op or a
//    different matmul input changes nothing; MatMulSwiGlu equals MatMulShared + SwiGlu.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/matmul_cuda.h"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/ops.h"
#include "kernels/quants.h"

namespace herd::cuda {
namespace {

using testing::CudaBackendTest;
using testing::Dev;
using testing::Down;
using testing::QuantizedWeight;
using testing::RandomNormal;
using testing::RelError;
using testing::Up;

// The fused kernel's buffer against QuantizeActivations of the fused float output, whole buffers
// (padding included), both poisoned alike first.
void ExpectSameActivations(DType f, const float* out_dev, int64_t n_tok, int64_t n_in, const Dev& fused) {
  const size_t bytes = internal::QuantizedActivationBytes(n_tok, n_in);
  Dev plain(bytes);
  HERD_CUDA_CHECK(cudaMemset(plain.p, 0x5A, bytes));
  internal::QuantizeActivations(f, out_dev, n_tok, n_in, plain.p, nullptr);
  const auto a = Down<uint8_t>(fused.p, bytes), b = Down<uint8_t>(plain.p, bytes);
  size_t first = bytes;
  for (size_t i = 0; i < bytes && first == bytes; ++i)
    if (a[i] != b[i]) first = i;
  EXPECT_EQ(first, bytes) << "first differing byte of " << bytes;
}

TEST(FusedQuantKernelTest, NormAndSwiGluWriteTheQuantizationOfTheirOutput) {
  std::string why;
  if (!DeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  for (DType f : {DType::kQ8_0, DType::kQ8_1, DType::kQ8_K}) {
    for (int64_t n_in : {int64_t{256}, int64_t{2048}, int64_t{4096}, int64_t{2304}, int64_t{8192}}) {
      for (int64_t n_tok : {1, 3, 8}) {
        SCOPED_TRACE(std::string(DTypeName(f)) + " n_in=" + std::to_string(n_in) + " n_tok=" + std::to_string(n_tok));
        const size_t n = static_cast<size_t>(n_tok * n_in);
        const size_t bytes = internal::QuantizedActivationBytes(n_tok, n_in);
        // AddRmsNorm + quantization; out aliases y as in the model.
        auto x = RandomNormal(n, 7 + n_tok, 2.f);
        const auto y = RandomNormal(n, 8), w = RandomNormal(static_cast<size_t>(n_in), 9);
        Dev dx = Up(x), dy = Up(y), dw = Up(w), buf(bytes);
        HERD_CUDA_CHECK(cudaMemset(buf.p, 0x5A, bytes));
        internal::QuantizedActivations q;
        ASSERT_TRUE(internal::RmsNormQuantize(f, dx.as<float>(), dy.as<float>(), dw.as<float>(), 1e-5f, n_tok, n_in,
                                              dy.as<float>(), buf.p, nullptr, &q));
        EXPECT_EQ(q.format, f);
        EXPECT_EQ(static_cast<const void*>(q.q), buf.p);
        ref::Add(x.data(), y.data(), static_cast<int64_t>(n));
        EXPECT_EQ(Down<float>(dx.p, n), x);  // x += y stored, the same float additions
        std::vector<float> want(n);
        ref::RmsNorm(x.data(), w.data(), 1e-5f, n_tok, n_in, want.data());
        const auto got = Down<float>(dy.p, n);
        EXPECT_LE(RelError(got.data(), want.data(), n), 1e-6);
        ExpectSameActivations(f, dy.as<float>(), n_tok, n_in, buf);

        // RmsNorm without the add, in place (out == x).
        Dev dx2 = Up(x), buf2(bytes);
        HERD_CUDA_CHECK(cudaMemset(buf2.p, 0x5A, bytes));
        ASSERT_TRUE(internal::RmsNormQuantize(f, dx2.as<float>(), nullptr, dw.as<float>(), 1e-5f, n_tok, n_in,
                                              dx2.as<float>(), buf2.p, nullptr, &q));
        const auto got2 = Down<float>(dx2.p, n);
        EXPECT_LE(RelError(got2.data(), want.data(), n), 1e-6);
        ExpectSameActivations(f, dx2.as<float>(), n_tok, n_in, buf2);

        // SwiGLU + quantization, out aliasing gate.
        const auto g = RandomNormal(n, 10, 3.f), u = RandomNormal(n, 11);
        Dev dg = Up(g), du = Up(u), buf3(bytes);
        HERD_CUDA_CHECK(cudaMemset(buf3.p, 0x5A, bytes));
        ASSERT_TRUE(internal::SwiGluQuantize(f, dg.as<float>(), du.as<float>(), dg.as<float>(), n_tok, n_in, buf3.p,
                                             nullptr, &q));
        std::vector<float> want_glu(n);
        ref::SwiGlu(g.data(), u.data(), want_glu.data(), static_cast<int64_t>(n));
        const auto got3 = Down<float>(dg.p, n);
        EXPECT_LE(RelError(got3.data(), want_glu.data(), n), 1e-6);
        ExpectSameActivations(f, dg.as<float>(), n_tok, n_in, buf3);
      }
    }
  }
}

// The half / bfloat16 variants: the converted bytes equal ConvertActivations of the kernel's own
// float output.
TEST(FusedQuantKernelTest, NormAndSwiGluWriteTheHalfOfTheirOutput) {
  std::string why;
  if (!DeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  for (bool bf16 : {false, true}) {
    for (int64_t n_in : {int64_t{8}, int64_t{2048}, int64_t{4096}, int64_t{2056}}) {
      for (int64_t n_tok : {1, 3, 70}) {
        SCOPED_TRACE(std::string(bf16 ? "bf16" : "f16") + " n_in=" + std::to_string(n_in) +
                     " n_tok=" + std::to_string(n_tok));
        const size_t n = static_cast<size_t>(n_tok * n_in);
        auto expect_converted = [&](const Dev& out, const Dev& half) {
          Dev plain(n * 2);
          internal::ConvertActivations(out.as<float>(), static_cast<int64_t>(n), bf16, plain.p, nullptr);
          EXPECT_EQ(Down<uint16_t>(half.p, n), Down<uint16_t>(plain.p, n));
        };
        const auto x = RandomNormal(n, 17, 2.f), y = RandomNormal(n, 18),
                   w = RandomNormal(static_cast<size_t>(n_in), 19);
        Dev dx = Up(x), dy = Up(y), dw = Up(w), h1(n * 2);
        ASSERT_TRUE(internal::RmsNormToHalf(bf16, dx.as<float>(), dy.as<float>(), dw.as<float>(), 1e-5f, n_tok, n_in,
                                            dy.as<float>(), h1.p, nullptr));
        expect_converted(dy, h1);
        const auto g = RandomNormal(n, 20, 3.f), u = RandomNormal(n, 21);
        Dev dg = Up(g), du = Up(u), h2(n * 2);
        ASSERT_TRUE(
            internal::SwiGluToHalf(bf16, dg.as<float>(), du.as<float>(), dg.as<float>(), n_tok, n_in, h2.p, nullptr));
        std::vector<float> want(n);
        ref::SwiGlu(g.data(), u.data(), want.data(), static_cast<int64_t>(n));
        const auto got = Down<float>(dg.p, n);
        EXPECT_LE(RelError(got.data(), want.data(), n), 1e-6);
        expect_converted(dg, h2);
      }
    }
  }
}

TEST(FusedQuantKernelTest, DeclinesWhatItDoesNotTake) {
  std::string why;
  if (!DeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  Dev a(4 * 16384 * 4), buf(internal::QuantizedActivationBytes(4, 16384));
  internal::QuantizedActivations q;
  float* p = a.as<float>();
  // Rows over 8192 values, rows not a multiple of the Q8_K block, unaligned pointers, float formats.
  EXPECT_FALSE(internal::RmsNormQuantize(DType::kQ8_K, p, nullptr, p, 1e-5f, 1, 16384, p, buf.p, nullptr, &q));
  EXPECT_FALSE(internal::RmsNormQuantize(DType::kQ8_K, p, nullptr, p, 1e-5f, 1, 2080, p, buf.p, nullptr, &q));
  EXPECT_FALSE(internal::RmsNormQuantize(DType::kQ8_0, p + 1, nullptr, p, 1e-5f, 1, 2048, p, buf.p, nullptr, &q));
  EXPECT_FALSE(internal::SwiGluQuantize(DType::kQ8_K, p, p, p, 1, 2080, buf.p, nullptr, &q));
  EXPECT_FALSE(internal::SwiGluQuantize(DType::kF16, p, p, p, 1, 2048, buf.p, nullptr, &q));
  EXPECT_TRUE(internal::SwiGluQuantize(DType::kQ8_K, p, p, p, 4, 16384, buf.p, nullptr, &q));  // long rows are fine
  HERD_CUDA_CHECK(cudaDeviceSynchronize());
}

class FusedInputBackendTest : public CudaBackendTest {};

TEST_F(FusedInputBackendTest, HintedOpsGiveTheMatmulOfTheirOutput) {
  for (DType type : {DType::kQ4_K, DType::kQ6_K, DType::kQ8_0, DType::kQ4_1, DType::kQ5_0, DType::kF16, DType::kBF16}) {
    for (int64_t n_tok : {1, 5, 8, 24}) {  // 24 (F16/BF16: from 2): the tensor cores, half / bfloat16 x
      SCOPED_TRACE(std::string(DTypeName(type)) + " n_tok=" + std::to_string(n_tok));
      const int64_t n_embd = 2048, n_ff = 2560, n_q = 512;
      const TensorView wq = Weight(type, n_q, n_embd, 1), wk = Weight(type, 256, n_embd, 2);
      const TensorView wd = Weight(type, n_embd, n_ff, 3);
      float* x = Upload(RandomNormal(static_cast<size_t>(n_tok * n_embd), 4));
      float* h = Upload(RandomNormal(static_cast<size_t>(n_tok * n_embd), 5));
      float* norm_w = Upload(RandomNormal(static_cast<size_t>(n_embd), 6));
      float* q1 = Poisoned<float>(static_cast<size_t>(n_tok * n_q));
      float* k1 = Poisoned<float>(static_cast<size_t>(n_tok * 256));
      float* q2 = Poisoned<float>(static_cast<size_t>(n_tok * n_q));
      float* k2 = Poisoned<float>(static_cast<size_t>(n_tok * 256));
      // Hinted AddRmsNorm, then Q/K from its output; then the same matmuls again, unhinted.
      backend_->PrepareMatMulInput(wq);
      backend_->AddRmsNorm(x, h, norm_w, 1e-5f, n_tok, n_embd, h);
      const TensorView qk[] = {wq, wk};
      float* const out1[] = {q1, k1};
      backend_->MatMulShared(qk, h, n_tok, out1);
      float* const out2[] = {q2, k2};
      backend_->MatMulShared(qk, h, n_tok, out2);
      EXPECT_EQ(Download(q1, n_tok * n_q), Download(q2, n_tok * n_q));
      EXPECT_EQ(Download(k1, n_tok * 256), Download(k2, n_tok * 256));

      // Hinted SwiGLU (out == gate), then the down projection; then again unhinted.
      float* gate = Upload(RandomNormal(static_cast<size_t>(n_tok * n_ff), 7, 2.f));
      float* up = Upload(RandomNormal(static_cast<size_t>(n_tok * n_ff), 8));
      float* d1 = Poisoned<float>(static_cast<size_t>(n_tok * n_embd));
      float* d2 = Poisoned<float>(static_cast<size_t>(n_tok * n_embd));
      backend_->PrepareMatMulInput(wd);
      backend_->SwiGlu(gate, up, gate, n_tok * n_ff);
      backend_->MatMul(wd, gate, n_tok, d1);
      backend_->MatMul(wd, gate, n_tok, d2);
      EXPECT_EQ(Download(d1, n_tok * n_embd), Download(d2, n_tok * n_embd));

      // A hint broken by an op in between: the matmul sees the changed input.
      float* d3 = Poisoned<float>(static_cast<size_t>(n_tok * n_embd));
      float* d4 = Poisoned<float>(static_cast<size_t>(n_tok * n_embd));
      float* one = Upload(std::vector<float>(static_cast<size_t>(n_tok * n_ff), 0.25f));
      backend_->PrepareMatMulInput(wd);
      backend_->SwiGlu(gate, up, gate, n_tok * n_ff);
      backend_->Add(gate, one, n_tok * n_ff);
      backend_->MatMul(wd, gate, n_tok, d3);
      backend_->MatMul(wd, gate, n_tok, d4);
      EXPECT_EQ(Download(d3, n_tok * n_embd), Download(d4, n_tok * n_embd));

      // A hinted RmsNorm (in place) followed by a matmul of another input: that input is used.
      float* other = Upload(RandomNormal(static_cast<size_t>(n_tok * n_embd), 9));
      float* e1 = Poisoned<float>(static_cast<size_t>(n_tok * n_q));
      float* e2 = Poisoned<float>(static_cast<size_t>(n_tok * n_q));
      backend_->PrepareMatMulInput(wq);
      backend_->RmsNorm(x, norm_w, 1e-5f, n_tok, n_embd, x);
      backend_->MatMul(wq, other, n_tok, e1);
      backend_->MatMul(wq, other, n_tok, e2);
      EXPECT_EQ(Download(e1, n_tok * n_q), Download(e2, n_tok * n_q));
      // ... and the norm itself still ran.
      EXPECT_TRUE(std::isfinite(Download(x, 1)[0]));
    }
  }
}

// Decode attention inputs for the hinted-attention tests: 4 kv heads, blocks of 16, twelve
// sequences with one decode token each at kPositions[s] (contexts of one split and of several),
// every earlier position's K and V random (stored by the reference), the caches on the device.
class HintedAttentionTest : public FusedInputBackendTest {
 protected:
  static constexpr int32_t kKvHeads = 4, kBlock = 16;
  static constexpr int32_t kPositions[] = {600, 37, 5, 1200, 0, 64, 33, 300, 17, 900, 2, 129};
  struct Shape {
    DType kv;
    int32_t head_dim, group;
  };
  // The caches of `sh` on the device; tables_ and table_lens_ describe the sequences.
  KvLayerView DeviceCaches(const Shape& sh) {
    std::vector<int32_t> flat;
    table_lens_.clear();
    for (int32_t pos : kPositions) {
      const int32_t n = pos / kBlock + 1;
      table_lens_.push_back(n);
      for (int32_t i = 0; i < n; ++i) flat.push_back(static_cast<int32_t>(flat.size()));
    }
    KvLayerView host;
    host.type = sh.kv;
    host.block_size = kBlock;
    host.n_kv_heads = kKvHeads;
    host.head_dim = sh.head_dim;
    host.n_blocks = static_cast<int32_t>(flat.size());
    const size_t vec = KvVectorBytes(sh.kv, sh.head_dim);
    std::vector<uint8_t> kc(flat.size() * kBlock * kKvHeads * vec), vc(kc.size());
    host.k = kc.data();
    host.v = vc.data();
    std::vector<const int32_t*> host_tables;
    for (size_t s = 0, off = 0; s < std::size(kPositions); off += table_lens_[s], ++s)
      host_tables.push_back(&flat[off]);
    for (size_t s = 0; s < std::size(kPositions); ++s) {  // every position up to the token's, K and V random
      const int32_t n = kPositions[s] + 1;
      std::vector<int32_t> pos(n), seq(n, static_cast<int32_t>(s));
      for (int32_t i = 0; i < n; ++i) pos[i] = i;
      const auto k = RandomNormal(static_cast<size_t>(n) * kKvHeads * sh.head_dim, 20 + static_cast<uint32_t>(s));
      const auto v = RandomNormal(static_cast<size_t>(n) * kKvHeads * sh.head_dim, 40 + static_cast<uint32_t>(s));
      ref::StoreKv(host, AttentionBatch{n, pos.data(), seq.data(), host_tables.data(), table_lens_.data()}, k.data(),
                   v.data());
    }
    KvLayerView dev = host;
    dev.k = Upload(kc);
    dev.v = Upload(vc);
    const int32_t* dflat = Upload(flat);
    tables_.clear();
    for (size_t s = 0, off = 0; s < std::size(kPositions); off += table_lens_[s], ++s) tables_.push_back(dflat + off);
    return dev;
  }
  // The first n_tok sequences' decode tokens, on the device (may_have_runs false: the model's
  // promise for batches of one token per sequence).
  AttentionBatch DecodeBatch(int64_t n_tok) {
    std::vector<int32_t> pos(kPositions, kPositions + n_tok), seq(static_cast<size_t>(n_tok));
    for (int64_t t = 0; t < n_tok; ++t) seq[t] = static_cast<int32_t>(t);
    AttentionBatch b{n_tok, Upload(pos), Upload(seq), Upload(tables_), Upload(table_lens_)};
    b.may_have_runs = false;
    b.max_context = *std::max_element(pos.begin(), pos.end()) + 1;
    return b;
  }
  // The hinted attention then the matmul against the same two unhinted: attention outputs equal
  // bit for bit; where the matmul takes the fused input (`fused`), the attention's float output
  // is zeroed in between (outside the backend, so the hint stands) and the matmul must still
  // equal the unhinted one.
  void ExpectHintedEqualsPlain(const KvLayerView& dev, const AttentionBatch& batch, const float* q, int32_t n_heads,
                               float scale, const TensorView& wo, bool fused) {
    const int64_t n_tok = batch.n_tokens, n_in = wo.cols(), n_out = wo.rows();
    float* out1 = Poisoned<float>(static_cast<size_t>(n_tok * n_in));
    float* out2 = Poisoned<float>(static_cast<size_t>(n_tok * n_in));
    float* y1 = Poisoned<float>(static_cast<size_t>(n_tok * n_out));
    float* y2 = Poisoned<float>(static_cast<size_t>(n_tok * n_out));
    backend_->PrepareMatMulInput(wo);
    backend_->PagedAttention(dev, batch, q, n_heads, scale, out1);
    const auto o1 = Download(out1, static_cast<size_t>(n_tok * n_in));
    if (fused) HERD_CUDA_CHECK(cudaMemset(out1, 0, static_cast<size_t>(n_tok * n_in) * sizeof(float)));
    HERD_CUDA_CHECK(cudaDeviceSynchronize());
    backend_->MatMul(wo, out1, n_tok, y1);
    backend_->PagedAttention(dev, batch, q, n_heads, scale, out2);
    backend_->MatMul(wo, out2, n_tok, y2);
    EXPECT_EQ(o1, Download(out2, static_cast<size_t>(n_tok * n_in)));
    EXPECT_EQ(Download(y1, static_cast<size_t>(n_tok * n_out)), Download(y2, static_cast<size_t>(n_tok * n_out)));
  }
  // ExpectHintedEqualsPlain over F16 (head_dim 128 and 64) and Q8_0 caches, each of n_toks
  // decode tokens and each weight type (320 x n_in); fused(type, n_tok): the matmul takes the
  // fused input there.
  void Sweep(std::initializer_list<int64_t> n_toks, std::initializer_list<DType> weights, uint32_t seed,
             bool (*fused)(DType, int64_t)) {
    for (const Shape sh : {Shape{DType::kF16, 128, 4}, Shape{DType::kF16, 64, 8}, Shape{DType::kQ8_0, 128, 4}}) {
      const KvLayerView dev = DeviceCaches(sh);
      const int32_t n_heads = kKvHeads * sh.group;
      const int64_t n_in = static_cast<int64_t>(n_heads) * sh.head_dim;  // 2048
      for (int64_t n_tok : n_toks) {
        const AttentionBatch batch = DecodeBatch(n_tok);
        const float* q = Upload(RandomNormal(static_cast<size_t>(n_tok * n_in), seed, 2.f));
        const float scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
        for (DType wt : weights) {
          SCOPED_TRACE(std::string(DTypeName(sh.kv)) + " hd" + std::to_string(sh.head_dim) + " " +
                       std::string(DTypeName(wt)) + " n_tok=" + std::to_string(n_tok));
          ExpectHintedEqualsPlain(dev, batch, q, n_heads, scale, Weight(wt, 320, n_in, seed + 1), fused(wt, n_tok));
        }
      }
    }
  }
  // A backend made with environment variable `name` set to "1".
  void UseBackendWith(const char* name) {
    setenv(name, "1", 1);
    auto be = MakeCudaBackend(0);
    unsetenv(name);
    ASSERT_TRUE(be.ok()) << be.status().ToString();
    backend_ = std::move(be).value();
  }

  std::vector<int32_t> table_lens_;
  std::vector<const int32_t*> tables_;
};

// HERD_CUDA_ATTN_QUANT_OUT on (the split merge writes the O projection's int8 input,
// PagedAttentionQuantized): weights of the three activation formats, F16 and Q8_0 caches, 1-8
// decode tokens take the fused int8 input; 12 tokens take the tensor cores (no fusion).
TEST_F(HintedAttentionTest, HintedAttentionGivesTheMatmulOfItsOutput) {
  UseBackendWith("HERD_CUDA_ATTN_QUANT_OUT");
  Sweep({1, 3, 8, 12}, {DType::kQ4_K, DType::kQ8_0, DType::kQ4_1}, 60, [](DType, int64_t n_tok) { return n_tok <= 8; });
  // Every context of up to 8 tokens on the small-batch decode kernel (split merge in a cluster).
  SetSmallDecodePolicy(SmallDecodePolicy{8, 8, 16, 1 << 20});
  Sweep({1, 3, 8}, {DType::kQ4_K, DType::kQ8_0, DType::kQ4_1}, 61, [](DType, int64_t) { return true; });
  // None on it: the split kernels and MergeQuantizeKernel's chunked merge (one token of 601
  // positions: 19 splits, three chunks on three workers).
  SetSmallDecodePolicy(SmallDecodePolicy{0, 8, 128, 1024});
  Sweep({1, 3}, {DType::kQ4_K, DType::kQ8_0}, 64, [](DType, int64_t) { return true; });
  SetSmallDecodePolicy(SmallDecodePolicy{});
}

// HERD_CUDA_ATTN_HALF_OUT on (the attention kernel or the split merge writes the O projection's
// half / bfloat16 tensor-core input, PagedAttentionHalf): F16 / BF16 weights from 2 tokens and a
// Q4_K weight from 9 (the tensor-core path) take it and are checked; one F16 token (a float
// GEMV) takes none, Q4_K below 9 tokens the int8 input (on by default; the other test checks it).
// F16 (SIMT and tensor-core decode kernels) and Q8_0 caches.
TEST_F(HintedAttentionTest, HintedAttentionGivesTheHalfInputOfItsOutput) {
  UseBackendWith("HERD_CUDA_ATTN_HALF_OUT");
  Sweep({1, 3, 12}, {DType::kF16, DType::kBF16, DType::kQ4_K}, 62,
        [](DType wt, int64_t n_tok) { return MatMulRunner::AutoPath(wt, n_tok) == MatMulPath::kTensorCore; });
  SetSmallDecodePolicy(SmallDecodePolicy{8, 8, 16, 1 << 20});
  Sweep({1, 3}, {DType::kF16, DType::kBF16, DType::kQ4_K}, 63,
        [](DType wt, int64_t n_tok) { return MatMulRunner::AutoPath(wt, n_tok) == MatMulPath::kTensorCore; });
  SetSmallDecodePolicy(SmallDecodePolicy{});
}

// MatMulSwiGlu (float weights: one GEMV launch with the SwiGLU in its epilogue at one token;
// F16/BF16 on Hopper from 2 tokens: GemmHalfTcGlu; otherwise MatMulShared + SwiGlu) against
// MatMulShared + SwiGlu (exactly, or to float rounding where GemmHalfTcGlu runs), and against
// the reference (dequantized weights, double sums). With the down projection announced first
// (PrepareMatMulInput), its matmul gives exactly that of the output converted afterwards (the
// epilogue's half x equals ConvertActivations').
TEST_F(FusedInputBackendTest, MatMulSwiGluEqualsMatMulThenSwiGlu) {
  for (DType type : {DType::kF16, DType::kBF16, DType::kF32, DType::kQ4_K}) {
    for (int64_t n_ff : {int64_t{2560}, int64_t{1001}, int64_t{13}}) {  // 13: rows split 4 ways, unfused
      for (int64_t n_in : {int64_t{2048}, int64_t{260}}) {
        if (type == DType::kQ4_K && n_in % 256 != 0) continue;
        for (int64_t n_tok : {1, 3, 40, 100}) {
          if (n_tok > 3 && (n_in != 2048 || n_ff == 2560)) continue;  // keeps the host reference short
          SCOPED_TRACE(std::string(DTypeName(type)) + " " + std::to_string(n_in) + "->" + std::to_string(n_ff) +
                       " n_tok=" + std::to_string(n_tok));
          const TensorView g = Weight(type, n_ff, n_in, 21), u = Weight(type, n_ff, n_in, 22);
          const size_t gu_host = hosts_.size() - 2;  // g's and u's host bytes
          const auto hx = RandomNormal(static_cast<size_t>(n_tok * n_in), 23);
          float* x = Upload(hx);
          const auto n = static_cast<size_t>(n_tok * n_ff);
          float* out1 = Poisoned<float>(n);
          float* scratch = Poisoned<float>(n);
          backend_->MatMulSwiGlu(g, u, x, n_tok, out1, scratch);
          float* out2 = Poisoned<float>(n);
          float* up2 = Poisoned<float>(n);
          const TensorView ws[] = {g, u};
          float* const ys[] = {out2, up2};
          backend_->MatMulShared(ws, x, n_tok, ys);
          backend_->SwiGlu(out2, up2, out2, static_cast<int64_t>(n));
          const auto got = Download(out1, n);
          // GemmHalfTcGlu sums each row in one pass; MatMulShared's GemmHalfTc may split K over
          // CTAs (another float summation order): equal to rounding there, exactly elsewhere.
          const bool glu_tc = (type == DType::kF16 || type == DType::kBF16) && n_tok > 1 && n_in % 8 == 0 &&
                              internal::GemmHalfTcAvailable();
          if (glu_tc) {
            EXPECT_LE(RelError(got.data(), Download(out2, n).data(), n), 1e-5);
          } else {
            EXPECT_EQ(got, Download(out2, n));
          }
          {  // the down projection announced: it reads the half x the SwiGLU step wrote, which
             // equals converting that step's float output
            const TensorView d = Weight(type == DType::kQ4_K ? DType::kF16 : type, 24, n_ff, 25);
            float* out3 = Poisoned<float>(n);
            backend_->PrepareMatMulInput(d);
            backend_->MatMulSwiGlu(g, u, x, n_tok, out3, scratch);
            const auto m = static_cast<size_t>(n_tok * 24);
            float* y3 = Poisoned<float>(m);
            backend_->MatMul(d, out3, n_tok, y3);
            float* y4 = Poisoned<float>(m);
            backend_->MatMul(d, out3, n_tok, y4);  // nothing prepared: converts out3 itself
            EXPECT_EQ(Download(y3, m), Download(y4, m));
            EXPECT_EQ(Download(out3, n), got);
          }
          // Reference: dequantized weights, double dot products, then silu * up.
          std::vector<float> want(n), gw(static_cast<size_t>(n_in)), uw(static_cast<size_t>(n_in));
          const std::vector<uint8_t>& gh = hosts_[gu_host];
          const std::vector<uint8_t>& uh = hosts_[gu_host + 1];
          for (int64_t j = 0; j < n_ff; ++j) {
            ref::DequantizeRow(type, gh.data() + j * RowBytes(type, n_in), gw.data(), n_in);
            ref::DequantizeRow(type, uh.data() + j * RowBytes(type, n_in), uw.data(), n_in);
            for (int64_t t = 0; t < n_tok; ++t) {
              double a = 0, b = 0;
              for (int64_t i = 0; i < n_in; ++i)
                a += double{gw[i]} * hx[t * n_in + i], b += double{uw[i]} * hx[t * n_in + i];
              want[t * n_ff + j] = static_cast<float>(a / (1 + std::exp(-a)) * b);
            }
          }
          // Float weights at n_tok 1 (the fp32 GEMV) 1e-5; from 2 tokens on the tensor cores take x
          // rounded to half / bfloat16 (F16/BF16: 1e-2); Q4_K: int8 activations (2e-2).
          const bool fp32_x = type == DType::kF32 || (type != DType::kQ4_K && n_tok == 1);
          EXPECT_LE(RelError(got.data(), want.data(), n), fp32_x ? 1e-5 : 2e-2);
        }
      }
    }
  }
}

}  // namespace
}  // namespace herd::cuda
