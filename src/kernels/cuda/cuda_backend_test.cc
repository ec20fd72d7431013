// CudaBackend: memory semantics and the element-wise ops against the CPU reference (herd::ref),
// through the Backend interface as the model calls them. Inputs are random normals (never
// zeros); outputs are poisoned with NaN first, so an unwritten element fails. Tolerances,
// relative to the reference's norm over each output (RelError): RmsNorm 1e-6 (fp32 vs double
// sum of squares), Rope 1e-6 (same double angles; fp32 products), SwiGlu 1e-6 (expf ulps), Add,
// GatherRows and TopKRows exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/ops.h"

namespace herd::cuda {
namespace {

using testing::CudaBackendTest;
using testing::RandomNormal;
using testing::RelError;

TEST(CudaBackendFactoryTest, BadIndexIsAnError) {
  std::string why;
  if (!DeviceAvailable(&why)) {
    // Without a GPU the factory must say so, not abort.
    auto be = MakeCudaBackend(0);
    EXPECT_FALSE(be.ok());
    GTEST_SKIP() << "no GPU: " << why;
  }
  for (int index : {-1, 1000}) {
    auto be = MakeCudaBackend(index);
    ASSERT_FALSE(be.ok());
    EXPECT_NE(be.status().message().find("cuda:" + std::to_string(index)), std::string::npos) << be.status().ToString();
  }
  auto spec = ParseDevice("cuda:0");
  ASSERT_TRUE(spec.ok());
  auto be = MakeBackend(spec.value(), 0);
  ASSERT_TRUE(be.ok()) << be.status().ToString();
  EXPECT_STREQ(be.value()->name(), "cuda");
}

using CudaMemoryTest = CudaBackendTest;

TEST_F(CudaMemoryTest, AllocZeroesAndCopiesRoundTrip) {
  for (size_t bytes : {size_t{1}, size_t{63}, size_t{4096}, size_t{3} << 20}) {
    auto* p = static_cast<uint8_t*>(backend_->Alloc(bytes));
    owned_.push_back(p);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    const auto zeros = Download(p, bytes);
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(zeros[i], 0) << bytes << " " << i;
  }
  // Many short-lived host buffers queued without a synchronisation in between, including one
  // larger than the staging arena's first chunk and one past the direct-copy threshold.
  const size_t n = 1000;
  auto* dst = static_cast<float*>(backend_->Alloc(sizeof(float) * n * 40));
  owned_.push_back(dst);
  for (int i = 0; i < 40; ++i) {
    std::vector<float> tmp = RandomNormal(n, 100 + i);
    backend_->CopyToDevice(dst + i * n, tmp.data(), sizeof(float) * n);
    std::fill(tmp.begin(), tmp.end(), -1.f);  // the copy must already own the bytes
  }
  const size_t big = (size_t{80} << 20) / sizeof(float);
  auto* big_dst = static_cast<float*>(backend_->Alloc(sizeof(float) * big));
  owned_.push_back(big_dst);
  {
    std::vector<float> tmp(big);
    for (size_t i = 0; i < big; ++i) tmp[i] = static_cast<float>(i % 1000003);
    backend_->CopyToDevice(big_dst, tmp.data(), sizeof(float) * big);
  }
  auto* copy = static_cast<float*>(backend_->Alloc(sizeof(float) * n * 40));
  owned_.push_back(copy);
  backend_->CopyOnDevice(copy, dst, sizeof(float) * n * 40);
  const auto got = Download(copy, n * 40);
  for (int i = 0; i < 40; ++i) {
    const auto want = RandomNormal(n, 100 + i);
    ASSERT_EQ(std::memcmp(got.data() + i * n, want.data(), sizeof(float) * n), 0) << i;
  }
  const auto got_big = Download(big_dst, big);
  for (size_t i = 0; i < big; i += 4093) ASSERT_EQ(got_big[i], static_cast<float>(i % 1000003));
}

// Small staged uploads and queued downloads (the kernel copies, HERD_CUDA_KERNEL_COPIES, and the
// DMAs past their 16 KB limit): every size around the 16-byte vector and the limit, at odd device
// offsets (the byte path) and aligned ones, queued back to back with up to kMaxQueuedCopies
// downloads in flight; the host buffers die right after the calls.
TEST_F(CudaMemoryTest, SmallUploadsAndQueuedDownloadsAreExact) {
  const size_t sizes[] = {1, 3, 15, 16, 17, 100, 4099, 16383, 16384, 16385, 70000};
  constexpr size_t kSlot = 80000;
  const size_t n_sizes = std::size(sizes);
  auto* dev = static_cast<uint8_t*>(backend_->Alloc(2 * n_sizes * kSlot));
  owned_.push_back(dev);
  auto bytes_of = [](size_t k, size_t i) { return static_cast<uint8_t>((k * 131 + i * 7 + i / 251) & 0xFF); };
  for (size_t k = 0; k < 2 * n_sizes; ++k) {  // even k: aligned, odd k: 1 byte past a 64-byte boundary
    std::vector<uint8_t> h(sizes[k / 2]);
    for (size_t i = 0; i < h.size(); ++i) h[i] = bytes_of(k, i);
    backend_->CopyToDevice(dev + k * kSlot + (k % 2), h.data(), h.size());
  }
  std::vector<std::vector<uint8_t>> got(2 * n_sizes);
  std::vector<uint64_t> tickets;
  size_t next_wait = 0;
  for (size_t k = 0; k < 2 * n_sizes; ++k) {
    got[k].assign(sizes[k / 2], 0);
    if (tickets.size() - next_wait == Backend::kMaxQueuedCopies) backend_->WaitCopyToHost(tickets[next_wait++]);
    tickets.push_back(backend_->QueueCopyToHost(got[k].data(), dev + k * kSlot + (k % 2), got[k].size()));
  }
  while (next_wait < tickets.size()) backend_->WaitCopyToHost(tickets[next_wait++]);
  for (size_t k = 0; k < 2 * n_sizes; ++k) {
    for (size_t i = 0; i < got[k].size(); ++i) {
      ASSERT_EQ(got[k][i], bytes_of(k, i)) << "size " << sizes[k / 2] << " offset " << k % 2 << " byte " << i;
    }
  }
}

TEST_F(CudaMemoryTest, PrepareWeightUploadsOnceInFileLayout) {
  std::vector<uint16_t> host(3 * 64);
  for (size_t i = 0; i < host.size(); ++i) host[i] = Fp32ToFp16(static_cast<float>(i) * 0.25f - 7.f);
  const TensorView w = TensorView::Matrix(DType::kF16, 3, 64, host.data());
  const TensorView a = backend_->PrepareWeight(w);
  const TensorView b = backend_->PrepareWeight(w);
  EXPECT_EQ(a.data, b.data);  // tied weights share one upload
  EXPECT_NE(a.data, w.data);
  EXPECT_EQ(a.type, DType::kF16);
  EXPECT_EQ(a.ne[0], 64);
  EXPECT_EQ(a.ne[1], 3);
  const auto back = Download(static_cast<const uint16_t*>(a.data), host.size());
  EXPECT_EQ(back, host);
  size_t free_b = 0, total_b = 0;
  ASSERT_TRUE(backend_->DeviceMemory(&free_b, &total_b));
  EXPECT_GT(total_b, 0u);
  EXPECT_LE(free_b, total_b);
}

using CudaOpsTest = CudaBackendTest;

TEST_F(CudaOpsTest, RmsNormMatchesReference) {
  for (int64_t rows : {1, 3, 130}) {
    for (int64_t cols : {1, 2, 7, 64, 255, 4096, 8193}) {
      const auto x = RandomNormal(rows * cols, 1 + rows + cols, 2.f);
      const auto w = RandomNormal(cols, 2 + cols);
      std::vector<float> want(x.size());
      ref::RmsNorm(x.data(), w.data(), 1e-5f, rows, cols, want.data());
      float* dx = Upload(x);
      float* out = Poisoned<float>(x.size());
      backend_->RmsNorm(dx, Upload(w), 1e-5f, rows, cols, out);
      const auto got = Download(out, x.size());
      EXPECT_LE(RelError(got.data(), want.data(), got.size()), 1e-6) << rows << "x" << cols;
      // In place (out == x), as the final norm may be called.
      backend_->RmsNorm(dx, Upload(w), 1e-5f, rows, cols, dx);
      const auto in_place = Download(dx, x.size());
      EXPECT_LE(RelError(in_place.data(), want.data(), got.size()), 1e-6) << rows << "x" << cols << " in place";
    }
  }
}

TEST_F(CudaOpsTest, AddRmsNormFusedMatchesReference) {
  for (int64_t rows : {1, 3, 130}) {
    for (int64_t cols : {1, 7, 64, 2048, 4097}) {
      for (bool out_is_y : {false, true}) {  // the model writes the norm over the residual input
        auto x = RandomNormal(rows * cols, 3 + rows, 1.5f);
        const auto y = RandomNormal(rows * cols, 4 + cols);
        const auto w = RandomNormal(cols, 5);
        float* dx = Upload(x);
        float* dy = Upload(y);
        float* out = out_is_y ? dy : Poisoned<float>(x.size());
        ref::Add(x.data(), y.data(), rows * cols);
        std::vector<float> want(x.size());
        ref::RmsNorm(x.data(), w.data(), 1e-6f, rows, cols, want.data());
        backend_->AddRmsNorm(dx, dy, Upload(w), 1e-6f, rows, cols, out);
        EXPECT_EQ(Download(dx, x.size()), x) << rows << "x" << cols;  // the same float additions
        const auto got = Download(out, x.size());
        EXPECT_LE(RelError(got.data(), want.data(), got.size()), 1e-6) << rows << "x" << cols << " " << out_is_y;
      }
    }
  }
}

TEST_F(CudaOpsTest, RopeMatchesReference) {
  for (int64_t n_tok : {1, 3, 130}) {
    for (int64_t head_dim : {64, 128}) {
      for (int32_t n_rot : {static_cast<int32_t>(head_dim), static_cast<int32_t>(head_dim / 2)}) {
        for (bool llama3 : {false, true}) {
          const int64_t heads = n_tok == 130 ? 8 : 32;
          const auto x = RandomNormal(n_tok * heads * head_dim, 7 + n_tok + n_rot);
          std::vector<int32_t> pos;
          for (int64_t t = 0; t < n_tok; ++t) pos.push_back(static_cast<int32_t>((t * 7919 + 13) % 131072));
          std::vector<float> factors;
          for (int32_t i = 0; i < n_rot / 2; ++i) factors.push_back(i < n_rot / 8 ? 1.f : (i < n_rot / 4 ? 2.5f : 8.f));
          std::vector<float> inv(static_cast<size_t>(n_rot / 2));
          RopeInverseFrequencies(
              RopeParams{n_rot, llama3 ? 500000.f : 10000.f, llama3 ? 1.f : 0.5f, llama3 ? factors.data() : nullptr},
              inv.data());
          auto want = x;
          ref::Rope(want.data(), n_tok, heads, head_dim, pos.data(), inv.data(), n_rot);
          float* dx = Upload(x);
          backend_->Rope(dx, n_tok, heads, head_dim, Upload(pos), Upload(inv), n_rot);
          const auto got = Download(dx, x.size());
          EXPECT_LE(RelError(got.data(), want.data(), got.size()), 1e-6)
              << n_tok << " tok, hd " << head_dim << ", n_rot " << n_rot << (llama3 ? " llama3" : "");
          // Dims past n_rot are untouched.
          for (int64_t i = 0; i < n_tok * heads; ++i) {
            for (int64_t d = n_rot; d < head_dim; ++d) ASSERT_EQ(got[i * head_dim + d], x[i * head_dim + d]);
          }
        }
      }
    }
  }
}

TEST_F(CudaOpsTest, SwiGluMatchesReference) {
  for (int64_t n : {1, 3, 13, 130, 70001, 1 << 20}) {
    auto g = RandomNormal(n, 11 + n, 3.f);
    const float extremes[] = {100.f, -100.f, 88.5f, -88.5f, 1e-8f, -30.f, 30.f};
    for (int64_t i = 0; i < n && i < 7; ++i) g[i] = extremes[i];
    const auto u = RandomNormal(n, 12 + n);
    std::vector<float> want(n);
    ref::SwiGlu(g.data(), u.data(), want.data(), n);
    float* dg = Upload(g);
    float* out = Poisoned<float>(n);
    backend_->SwiGlu(dg, Upload(u), out, n);
    const auto got = Download(out, n);
    EXPECT_LE(RelError(got.data(), want.data(), n), 1e-6) << n;
    backend_->SwiGlu(dg, Upload(u), dg, n);  // out == gate, as the model calls it
    const auto in_place = Download(dg, n);
    EXPECT_LE(RelError(in_place.data(), want.data(), n), 1e-6) << n << " in place";
  }
}

TEST_F(CudaOpsTest, AddAndGatherRowsAreExact) {
  for (int64_t n : {1, 3, 130, 4097, 1 << 20}) {
    auto x = RandomNormal(n, 21 + n);
    const auto y = RandomNormal(n, 22 + n);
    float* dx = Upload(x);
    backend_->Add(dx, Upload(y), n);
    ref::Add(x.data(), y.data(), n);
    EXPECT_EQ(Download(dx, n), x) << n;
  }
  // Unaligned start (scalar path): x + 1.
  {
    auto x = RandomNormal(65, 23);
    const auto y = RandomNormal(64, 24);
    float* dx = Upload(x);
    backend_->Add(dx + 1, Upload(y), 64);
    for (int i = 0; i < 64; ++i) x[i + 1] += y[i];
    EXPECT_EQ(Download(dx, 65), x);
  }
  for (int64_t cols : {1, 7, 64, 4096, 4099}) {
    for (int64_t n : {1, 3, 130}) {
      const int64_t src_rows = 200;
      const auto x = RandomNormal(src_rows * cols, 31 + cols);
      std::vector<int32_t> rows;
      for (int64_t i = 0; i < n; ++i) rows.push_back(static_cast<int32_t>((i * 37 + 11) % src_rows));
      float* out = Poisoned<float>(n * cols);
      backend_->GatherRows(Upload(x), Upload(rows), n, cols, out);
      const auto got = Download(out, n * cols);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::memcmp(got.data() + i * cols, x.data() + rows[i] * cols, sizeof(float) * cols), 0)
            << cols << " " << i;
      }
    }
  }
}

// TopKRows on the device against the host default (Backend::TopKRows: a partial sort), ids and
// values exactly: rows of random values, of few distinct values (ties straddling the cut, where
// the lowest indices must win), with NaN / -inf sprinkled, with fewer numbers than k, all NaN, and
// +0 / -0 (equal, so the lower index first), at vocabulary widths up to 128256.
TEST_F(CudaOpsTest, TopKRowsEqualsTheHostSort) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::unique_ptr<Backend> host = MakeReferenceBackend();
  std::mt19937 rng(5);
  for (int64_t cols : {int64_t{1}, int64_t{5}, int64_t{1000}, int64_t{128256}}) {
    for (int kind = 0; kind < 6; ++kind) {
      const int64_t rows = 3;
      std::vector<float> x = RandomNormal(static_cast<size_t>(rows * cols), 40 + kind, 3.f);
      for (size_t i = 0; i < x.size(); ++i) {
        if (kind == 1) x[i] = std::round(x[i]);  // ~15 distinct values: big ties
        if (kind == 2 && rng() % 7 == 0) x[i] = rng() % 2 ? nan : -inf;
        if (kind == 3 && rng() % 1000 != 0) x[i] = -inf;  // fewer numbers than k
        if (kind == 4) x[i] = nan;                        // no number at all
        if (kind == 5) x[i] = rng() % 3 == 0 ? 0.f : (rng() % 2 ? -0.f : x[i] * 1e-3f);
      }
      for (int32_t k : {1, 7, 40, 64}) {
        SCOPED_TRACE("cols " + std::to_string(cols) + " kind " + std::to_string(kind) + " k " + std::to_string(k));
        std::vector<int32_t> want_ids(static_cast<size_t>(rows * k));
        std::vector<float> want_v(want_ids.size());
        host->TopKRows(x.data(), rows, cols, k, want_ids.data(), want_v.data());
        int32_t* ids = Upload(std::vector<int32_t>(want_ids.size(), 0x7fffffff));  // not -1: unwritten shows
        float* vals = Poisoned<float>(want_ids.size());
        backend_->TopKRows(Upload(x), rows, cols, k, ids, vals);
        EXPECT_EQ(Download(ids, want_ids.size()), want_ids);
        const auto got_v = Download(vals, want_v.size());
        EXPECT_EQ(std::memcmp(got_v.data(), want_v.data(), sizeof(float) * want_v.size()), 0);
      }
    }
  }
}

}  // namespace
}  // namespace herd::cuda
