// The llama forward pass on the CUDA backend against the CPU backend (itself checked against the
// scalar reference in forward_test.cc), on random-weight models of every weight type:
//
// - F32 / F16 / BF16 weights: free-running greedy decoding gives the same 64 tokens as the CPU,
//   and the first step's logits agree to 1e-2 · (1 + max|logit|) (both paths may round
//   activations to 16 bits for their tensor-core / AMX prompt kernels, and sum in other orders).
// - Quantized weights: teacher-forced on the CPU's greedy tokens for 1,000 steps, max |Δlogit| ≤
//   0.05 · (1 + max|logit|) at every step, the GPU's top-1 token equal to the CPU's at ≥ 97% of
//   the steps, and at most a quarter of the steps near ties (CPU top-2 margin ≤ twice that step's
//   max |Δlogit|: only there can the tokens differ). Both quantize activations bit-identically
//   (the vec-dot type), but float summation order differs; one flipped int8 rounding in a layer
//   moves the next layers by a quantization step, so the paths agree to the activation
//   quantization error, and random-weight models have near-tied logits: the CPU's own agreement
//   with the scalar reference is 98.8-100% on these models (forward_test.cc), with itself across
//   instruction sets (AVX-512 vs AVX2) 99.3% on this Q6_K model and 92% on a llama-3.2-1b-shaped
//   Q4_K_M (bench/results/cuda-matmul-2026-11-22.md). Measured GPU figures are printed; the 97%
//   bound sits under the lowest seen (97.9%).
//   With HERD_CUDA_TEST_QUICK=1 (sanitizer runs): 100 steps, and only the logit bound.
// - Batches that mix sequences and chunked prefill give the logits of the sequences run alone.
//
// Without a GPU every test skips, naming the reason. HERD_CUDA_TEST_MODEL=FILE.gguf adds the
// teacher-forced comparison on that file (e.g. a llama-3.2-1b-shaped model: head_dim 128, GQA 4).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "forward_test_util.h"
#include "io/gguf.h"
#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/cuda_check.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "model/test_models.h"
#include "sampling/sampler.h"

namespace herd {
namespace {

using Loaded = testing::LoadedForward;

#define SKIP_WITHOUT_GPU()                                 \
  do {                                                     \
    std::string why;                                       \
    if (!cuda::DeviceAvailable(&why)) GTEST_SKIP() << why; \
  } while (0)

Loaded Load(const std::string& path, bool gpu, int32_t n_blocks, DType kv_type = DType::kF16, int gpu_index = 0) {
  DeviceSpec d;
  d.cuda = gpu;
  d.index = gpu_index;
  auto b = MakeBackend(d, 0);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return testing::LoadForward(path, std::move(b).value(), n_blocks, kv_type);
}

std::vector<int32_t> Prompt(int n, int32_t n_vocab, int salt = 0) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back((i * 7919 + 13 + salt * 101) % n_vocab);
  return p;
}

std::vector<int32_t> AllBlocks(const Loaded& l) {
  std::vector<int32_t> blocks;
  for (int32_t b = 0; b < l.cache->config().n_blocks; ++b) blocks.push_back(b);
  return blocks;
}

// Runs `toks` at positions [*pos, ...) of sequence 0 in chunks; returns the last row's logits.
std::vector<float> Run(Loaded& l, const std::vector<int32_t>& toks, int32_t* pos, int chunk = 512) {
  const int32_t n_vocab = l.model->config().n_vocab;
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  ForwardBatch batch;
  batch.block_tables = {AllBlocks(l)};
  for (size_t s = 0; s < toks.size(); s += static_cast<size_t>(chunk)) {
    const size_t e = std::min(toks.size(), s + static_cast<size_t>(chunk));
    batch.tokens.assign(toks.begin() + static_cast<long>(s), toks.begin() + static_cast<long>(e));
    batch.pos.clear();
    for (size_t i = s; i < e; ++i) batch.pos.push_back((*pos)++);
    batch.seq.assign(batch.tokens.size(), 0);
    batch.logit_rows = {static_cast<int32_t>(batch.tokens.size()) - 1};
    const Status st = l.model->Forward(batch, l.cache->layers(), logits.data());
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return logits;
}

std::vector<int32_t> Greedy(Loaded& l, const std::vector<int32_t>& prompt, int steps, std::vector<float>* first) {
  const int32_t n_vocab = l.model->config().n_vocab;
  int32_t pos = 0;
  std::vector<float> logits = Run(l, prompt, &pos);
  if (first) *first = logits;
  std::vector<int32_t> out;
  for (int i = 0; i < steps; ++i) {
    out.push_back(ArgMax(logits.data(), n_vocab));
    logits = Run(l, {out.back()}, &pos);
  }
  return out;
}

struct Agreement {
  int steps = 0;
  int top1_equal = 0;
  // Steps whose CPU top-2 margin is at most twice that step's max|Δlogit|: the only steps where
  // the top-1 tokens can differ (a larger margin survives the difference).
  int near_ties = 0;
  float worst = 0;  // max over steps of max|Δlogit| / (1 + max|logit|)
};

// Both paths get the CPU's greedy tokens; compares each step's logits.
Agreement TeacherForced(Loaded& cpu, Loaded& gpu, const std::vector<int32_t>& prompt, int steps) {
  const int32_t n_vocab = cpu.model->config().n_vocab;
  Agreement a;
  int32_t pos_c = 0, pos_g = 0;
  std::vector<int32_t> input = prompt;
  for (int step = 0; step <= steps; ++step) {
    const std::vector<float> lc = Run(cpu, input, &pos_c);
    const std::vector<float> lg = Run(gpu, input, &pos_g);
    float max_abs = 0, max_diff = 0;
    for (size_t i = 0; i < lc.size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(lc[i]));
      max_diff = std::max(max_diff, std::fabs(lc[i] - lg[i]));
    }
    if (!std::isfinite(max_diff)) max_diff = INFINITY;
    a.worst = std::max(a.worst, max_diff / (1 + max_abs));
    const int32_t top = ArgMax(lc.data(), n_vocab);
    a.top1_equal += ArgMax(lg.data(), n_vocab) == top ? 1 : 0;
    if (testing::TopTwoMargin(lc, top) <= 2 * max_diff) ++a.near_ties;
    ++a.steps;
    input = {top};
  }
  return a;
}

bool IsFloatType(const std::string& t) { return t == "F32" || t == "F16" || t == "BF16"; }

class CudaForwardTypeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaForwardTypeTest, GpuMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const std::string type = GetParam();
  const std::string path = testing::TestModelPath("tiny", type);
  if (IsFloatType(type)) {
    Loaded cpu = Load(path, false, 16);
    Loaded gpu = Load(path, true, 16);
    const int32_t n_vocab = cpu.model->config().n_vocab;
    const auto prompt = Prompt(40, n_vocab);
    std::vector<float> lc, lg;
    const auto tc = Greedy(cpu, prompt, 64, &lc);
    const auto tg = Greedy(gpu, prompt, 64, &lg);
    float max_abs = 0, max_diff = 0;
    for (size_t i = 0; i < lc.size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(lc[i]));
      max_diff = std::max(max_diff, std::fabs(lc[i] - lg[i]));
    }
    EXPECT_LE(max_diff, 1e-2f * (1 + max_abs)) << "max |logit| " << max_abs;
    EXPECT_EQ(tc, tg);
    std::printf("%s: first-step max |dlogit| / (1 + max|logit|) = %.5f, 64 greedy tokens %s\n", type.c_str(),
                max_diff / (1 + max_abs), tc == tg ? "identical" : "DIFFER");
    return;
  }
  // HERD_CUDA_TEST_QUICK=1 (compute-sanitizer runs, where a step costs ~0.2 s): 100 steps and the
  // per-step logit bound only; the agreement and near-tie shares need the 1,000 steps (over 100,
  // 35-42 near ties were seen on Q5_0, Q2_K, Q5_K_M and Q6_K against 15-19% over 1,000).
  const bool quick = std::getenv("HERD_CUDA_TEST_QUICK") != nullptr;
  const int steps = quick ? 100 : 1000;
  Loaded cpu = Load(path, false, 72);  // 1,040 positions
  Loaded gpu = Load(path, true, 72);
  const Agreement a = TeacherForced(cpu, gpu, Prompt(40, cpu.model->config().n_vocab), steps);
  if (!quick) {
    EXPECT_GE(a.top1_equal, a.steps * 97 / 100) << a.top1_equal << " of " << a.steps;
    EXPECT_LE(a.near_ties, a.steps / 4) << "the logit error is large against the model's top-2 margins";
  }
  EXPECT_LE(a.worst, 0.05f);
  std::printf("%s: top-1 agreement %d / %d, max |dlogit| / (1 + max|logit|) = %.4f, %d near ties\n", type.c_str(),
              a.top1_equal, a.steps, a.worst, a.near_ties);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CudaForwardTypeTest,
                         ::testing::Values("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K",
                                           "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K"));

// KvCache::Create on the GPU refuses exactly the cache shapes whose attention needs more shared
// memory than the GPU has (attention_cuda.h's arithmetic; none on an H100 / H200, f32 with
// head_dim 128 and f16 with head_dim 256 under HERD_CUDA_SMEM_CAP=101376), naming the reason.
TEST(CudaForwardTest, KvCacheRefusesShapesBeyondTheGpu) {
  SKIP_WITHOUT_GPU();
  DeviceSpec d;
  d.cuda = true;
  auto backend = MakeBackend(d, 0);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  for (const DType type : {DType::kF16, DType::kF32, DType::kQ8_0}) {
    for (const int32_t hd : {64, 128, 256}) {
      SCOPED_TRACE(std::string(DTypeName(type)) + " head_dim " + std::to_string(hd));
      const KvCacheConfig c{2, 2, hd, 16, 4, type};
      const auto cache = KvCache::Create(backend->get(), c);
      EXPECT_EQ(cache.ok(), cuda::AttentionFitsDevice(type, hd)) << cache.status().ToString();
      if (!cache.ok()) {
        EXPECT_EQ(cache.status().code(), StatusCode::kInvalidArgument);
        EXPECT_NE(cache.status().message().find("shared memory"), std::string::npos) << cache.status().ToString();
      }
    }
  }
}

// The Q8_0 KV cache on the GPU against the Q8_0 KV cache on the CPU.
TEST(CudaForwardTest, Q8KvCacheMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const std::string path = testing::TestModelPath("tiny", "F16");
  Loaded cpu = Load(path, false, 16, DType::kQ8_0);
  Loaded gpu = Load(path, true, 16, DType::kQ8_0);
  const Agreement a = TeacherForced(cpu, gpu, Prompt(40, cpu.model->config().n_vocab), 64);
  EXPECT_GE(a.top1_equal, a.steps * 99 / 100);
  EXPECT_LE(a.worst, 0.05f);
}

// llama3 rope factors and a separate output matrix ("small" shape).
TEST(CudaForwardTest, LlamaThreeRopeFactorsAndSeparateOutput) {
  SKIP_WITHOUT_GPU();
  const std::string path = testing::TestModelPath("small", "F16");
  Loaded cpu = Load(path, false, 16);
  Loaded gpu = Load(path, true, 16);
  EXPECT_TRUE(cpu.model->config().has_rope_freqs);
  EXPECT_FALSE(cpu.model->config().tied_output);
  const auto prompt = Prompt(9, cpu.model->config().n_vocab);
  EXPECT_EQ(Greedy(cpu, prompt, 16, nullptr), Greedy(gpu, prompt, 16, nullptr));
}

// Decode at a 300-position context with one attention split per token on the SIMT decode kernel,
// where the RoPE + K/V store run inside it and the tile of the new position is issued after the
// first tiles' scores (a bug once stored K rotated by scores there): greedy tokens as the CPU's.
TEST(CudaForwardTest, LongContextOneSplitMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const std::string path = testing::TestModelPath("tiny", "F16");
  Loaded cpu = Load(path, false, 24);
  Loaded gpu = Load(path, true, 24);
  cuda::SetAttentionSplitPolicy(cuda::AttentionSplitPolicy{12, 1, 1});
  cuda::SetDecodeOnTensorCores(false);
  const auto prompt = Prompt(300, cpu.model->config().n_vocab, 3);
  const auto tg = Greedy(gpu, prompt, 32, nullptr);
  cuda::SetAttentionSplitPolicy(cuda::AttentionSplitPolicy{});
  cuda::SetDecodeOnTensorCores(true);
  EXPECT_EQ(Greedy(cpu, prompt, 32, nullptr), tg);
}

// Two sequences and a chunked prefill in one batch give the logits of each sequence run alone.
TEST(CudaForwardTest, MixedBatchMatchesSingleRuns) {
  SKIP_WITHOUT_GPU();
  Loaded l = Load(testing::TestModelPath("tiny", "F16"), true, 32);
  const int32_t n_vocab = l.model->config().n_vocab;
  const auto p0 = Prompt(19, n_vocab, 1);
  const auto p1 = Prompt(35, n_vocab, 2);
  auto alone = [&](const std::vector<int32_t>& p, std::vector<int32_t> blocks) {
    return testing::RunAlone(l, p, std::move(blocks));
  };
  const auto l0 = alone(p0, {5, 2});
  const auto l1 = alone(p1, {7, 1, 3});
  // Sequence 1 again, its first 20 tokens already stored (chunked prefill offset), next to
  // sequence 0 in fresh blocks.
  ForwardBatch first;
  testing::AppendTokens(first, p1, 0, 20, 0);
  first.block_tables = {{10, 11, 12}};
  std::vector<float> scratch(static_cast<size_t>(n_vocab));
  first.logit_rows = {19};
  ASSERT_TRUE(l.model->Forward(first, l.cache->layers(), scratch.data()).ok());
  ForwardBatch b;
  b.block_tables = {{0, 4}, {10, 11, 12}};
  testing::AppendTokens(b, p0, 0, p0.size(), 0);
  testing::AppendTokens(b, p1, 20, p1.size(), 1);
  b.logit_rows = {static_cast<int32_t>(p0.size()) - 1, static_cast<int32_t>(b.tokens.size()) - 1};
  std::vector<float> both(2 * static_cast<size_t>(n_vocab));
  ASSERT_TRUE(l.model->Forward(b, l.cache->layers(), both.data()).ok());
  float max_diff = 0, max_abs = 0;
  for (int32_t i = 0; i < n_vocab; ++i) {
    max_abs = std::max({max_abs, std::fabs(l0[i]), std::fabs(l1[i])});
    max_diff = std::max({max_diff, std::fabs(both[static_cast<size_t>(i)] - l0[static_cast<size_t>(i)]),
                         std::fabs(both[static_cast<size_t>(n_vocab + i)] - l1[static_cast<size_t>(i)])});
  }
  EXPECT_LE(max_diff, 1e-2f * (1 + max_abs));
}

// Greedy decoding on the device: Forward(argmax_only) returns the argmax of the rows it would
// have returned as logits.
TEST(CudaForwardTest, ArgMaxOnlyMatchesTheLogitsArgMax) {
  SKIP_WITHOUT_GPU();
  Loaded l = Load(testing::TestModelPath("tiny", "Q8_0"), true, 32);
  const int32_t n_vocab = l.model->config().n_vocab;
  ForwardBatch b;
  for (int s = 0; s < 3; ++s) {
    const auto p = Prompt(5 + 3 * s, n_vocab, s);
    b.block_tables.push_back({s * 4, s * 4 + 1});
    testing::AppendTokens(b, p, 0, p.size(), s);
    b.logit_rows.push_back(static_cast<int32_t>(b.tokens.size()) - 1);
  }
  std::vector<float> logits(3 * static_cast<size_t>(n_vocab));
  ASSERT_TRUE(l.model->Forward(b, l.cache->layers(), logits.data()).ok());
  b.argmax_only = true;
  std::vector<int32_t> ids(3, -7);
  ASSERT_TRUE(l.model->Forward(b, l.cache->layers(), nullptr, ids.data()).ok());
  for (int r = 0; r < 3; ++r) EXPECT_EQ(ids[r], ArgMax(logits.data() + r * n_vocab, n_vocab)) << "row " << r;
}

// One model instance per GPU in one process (replicas, as `devices = [...]` in herd.toml): loaded
// on every GPU, then run there one after the other, each GPU gives the tokens and logits of the
// first. Catches per-device state kept once per process (a kernel's dynamic shared-memory limit
// is a per-device attribute). F16 and Q4_K_M take the tensor-core GEMMs, the prefill and decode
// attention kernels and the GEMVs.
TEST(CudaForwardTest, ReplicasOnEveryGpuAgree) {
  SKIP_WITHOUT_GPU();
  int n_gpus = 0;
  HERD_CUDA_CHECK(cudaGetDeviceCount(&n_gpus));
  if (n_gpus < 2) GTEST_SKIP() << "needs 2 GPUs, found " << n_gpus;
  for (const char* type : {"F16", "Q4_K_M"}) {
    SCOPED_TRACE(type);
    const std::string path = testing::TestModelPath("tiny", type);
    std::vector<Loaded> replicas;
    for (int d = 0; d < n_gpus; ++d) replicas.push_back(Load(path, true, 16, DType::kF16, d));
    const auto prompt = Prompt(40, replicas[0].model->config().n_vocab);
    std::vector<float> first0;
    const auto tokens0 = Greedy(replicas[0], prompt, 16, &first0);
    for (int d = 1; d < n_gpus; ++d) {
      std::vector<float> first;
      EXPECT_EQ(Greedy(replicas[static_cast<size_t>(d)], prompt, 16, &first), tokens0) << "GPU " << d;
      float max_abs = 0, max_diff = 0;
      for (size_t i = 0; i < first.size(); ++i) {
        max_abs = std::max(max_abs, std::fabs(first0[i]));
        max_diff = std::max(max_diff, std::fabs(first0[i] - first[i]));
      }
      EXPECT_LE(max_diff, 1e-4f * (1 + max_abs)) << "GPU " << d;
    }
  }
}

// Uniform values in [-0.5, 0.5) from a linear congruential generator (state in *seed).
std::vector<float> UniformRows(int64_t n, uint32_t* seed) {
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = static_cast<float>((*seed = *seed * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  return x;
}

// ArgMaxRows of x: [rows, cols] on the GPU backend; expects the host default's ids and returns them.
std::vector<int32_t> ExpectArgMaxAsHost(Backend& gpu, Backend& cpu, const std::vector<float>& x, int64_t rows,
                                        int64_t cols) {
  float* dx = static_cast<float*>(gpu.Alloc(x.size() * sizeof(float)));
  auto* dids = static_cast<int32_t*>(gpu.Alloc(static_cast<size_t>(rows) * sizeof(int32_t)));
  gpu.CopyToDevice(dx, x.data(), x.size() * sizeof(float));
  gpu.ArgMaxRows(dx, rows, cols, dids);
  std::vector<int32_t> got(static_cast<size_t>(rows)), want(static_cast<size_t>(rows));
  gpu.CopyToHost(got.data(), dids, got.size() * sizeof(int32_t));
  cpu.ArgMaxRows(x.data(), rows, cols, want.data());
  EXPECT_EQ(got, want);
  gpu.Free(dx);
  gpu.Free(dids);
  return want;
}

// The CUDA ArgMaxRows against the host default: ties take the first index, NaNs never win.
TEST(CudaForwardTest, ArgMaxRowsTiesAndNaNs) {
  SKIP_WITHOUT_GPU();
  auto gpu = std::move(MakeBackend(DeviceSpec{true, 0}, 0)).value();
  auto cpu = MakeReferenceBackend();
  uint32_t seed = 1;
  // One 8B vocabulary row per case (up to 16 rows: a cluster of blocks per row).
  constexpr int64_t kRows = 5, kCols = 128256;
  std::vector<float> x = UniformRows(kRows * kCols, &seed);
  x[0 * kCols + 77] = 3.0f;                           // row 0: one clear maximum
  x[1 * kCols + 90000] = x[1 * kCols + 5000] = 4.0f;  // row 1: a tie -> 5000
  x[2 * kCols + 3] = NAN;                             // row 2: a NaN beside the maximum
  x[2 * kCols + 4] = 2.0f;
  for (int64_t i = 0; i < kCols; ++i) x[3 * kCols + i] = NAN;  // row 3: no number -> -1
  x[4 * kCols + kCols - 1] = 9.0f;                             // row 4: the last column
  EXPECT_EQ(ExpectArgMaxAsHost(*gpu, *cpu, x, kRows, kCols),
            (std::vector<int32_t>{77, 5000, 4, -1, static_cast<int32_t>(kCols - 1)}));
  // Column counts the float4 loads do not divide (scalar path) and small rows; ties inside one
  // float4, across a thread's unrolled loads, across threads and across a cluster's blocks; the
  // maximum in the last column; half-NaN rows.
  for (const int64_t cols : {int64_t{1001}, int64_t{7}, int64_t{4096}, int64_t{40000}, int64_t{40001}}) {
    SCOPED_TRACE(cols);
    constexpr int64_t kR = 4;
    std::vector<float> y = UniformRows(kR * cols, &seed);
    y[0 * cols + cols - 1] = 5.0f;
    y[1 * cols + cols / 2] = y[1 * cols + 1] = y[1 * cols + 2] = 6.0f;  // -> 1
    y[2 * cols + cols - 1] = y[2 * cols + (cols * 2) / 3] = 7.0f;       // -> (2 cols) / 3
    for (int64_t i = 0; i < cols; i += 2) y[3 * cols + i] = NAN;
    const std::vector<int32_t> want = ExpectArgMaxAsHost(*gpu, *cpu, y, kR, cols);
    EXPECT_EQ(want[0], cols - 1);
    EXPECT_EQ(want[1], 1);
    EXPECT_EQ(want[2], (cols * 2) / 3);
  }
  // More rows than one launch takes (65,535).
  ExpectArgMaxAsHost(*gpu, *cpu, UniformRows(70001 * 5, &seed), 70001, 5);
}

// A model file from the environment (e.g. llama-3.2-1b-shaped): teacher-forced agreement.
TEST(CudaForwardTest, ModelFromEnvironment) {
  SKIP_WITHOUT_GPU();
  const char* path = std::getenv("HERD_CUDA_TEST_MODEL");
  if (path == nullptr || *path == '\0') GTEST_SKIP() << "set HERD_CUDA_TEST_MODEL=FILE.gguf to run";
  const char* steps_env = std::getenv("HERD_CUDA_TEST_STEPS");
  const int steps = steps_env != nullptr ? std::atoi(steps_env) : 200;
  Loaded cpu = Load(path, false, (steps + 64) / 16 + 2);
  Loaded gpu = Load(path, true, (steps + 64) / 16 + 2);
  const Agreement a = TeacherForced(cpu, gpu, Prompt(40, cpu.model->config().n_vocab), steps);
  std::printf("%s: top-1 agreement %d / %d, max |dlogit| / (1 + max|logit|) = %.4f, %d near ties\n", path, a.top1_equal,
              a.steps, a.worst, a.near_ties);
  // Agreement is printed, not asserted: on large random quantized models the CPU agrees with
  // itself across instruction sets only ~92% of the time (see the file comment).
  EXPECT_LE(a.worst, 0.05f);
}

}  // namespace
}  // namespace herd
