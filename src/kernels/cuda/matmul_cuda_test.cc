// MatMulRunner and GetRows on the GPU against the CPU for every weight type, odd shapes, both
// matmul paths (GEMV and tensor cores, forced; on the tensor cores quantized weights both through
// the fused dequantizing kernel and through half tiles + cuBLAS) and the automatic choice (the GEMV's
// activation quantization byte for byte: quant_act_test.cc).
//
// Weights are random block bytes (every code, scale nibble and high bit pattern occurs) with
// random finite half scales; activations are random normals (never zeros); outputs are
// poisoned with NaN before every run. Two checks per output element:
//  1. against an oracle with the path's own rounding of the inputs, in double:
//     GEMV path, quantized w: x quantized exactly as the reference does (ref::QuantizeRow to
//       ref::VecDotType(w): Q8_0 / Q8_1 per 32 values, Q8_K per 256) and dequantized, times
//       ref::DequantizeRow(w);
//     GEMV path, float w: float32 x times w;
//     tensor-core path: x rounded to half (bfloat16 for BF16 w; float32 for F32 w) times w
//       rounded to half (quantized w: ref::DequantizeRow then half).
//     Tolerance |y - oracle| <= 1e-4 * sum_i |w_i x_i|: only float32 summation order and the
//     algebraic split of scales/offsets differ, a few ulps of that magnitude per term; one
//     wrong code, scale or offset moves y by ~1e-3..1 of it.
//  2. against ref::MatMul. GEMV path, quantized w: the same integer block sums scaled the same
//     way, so per element |y - y_ref| <= 2e-5 * sum_i |w_i x_i| (float summation order only).
//     Otherwise ||y - y_ref|| <= tol * S over all outputs, S = sqrt(sum_{t,o} sum_i (w_i x_i)^2),
//     the norm y has for terms of random sign (unlike ||y_ref|| it cannot shrink by
//     cancellation in a single output): 3e-2 for quantized w on the tensor-core path (x
//     rounded to half there, to int8 in the reference: ~0.5% of S), 1e-5 for float w on the
//     GEMV path (float32 everywhere); on the tensor-core path 2e-3 for F16 (x rounded to half:
//     2^-11 relative) and 1e-2 for BF16 (2^-8).
// GetRows must equal ref::GetRows exactly (both evaluate the same float operations).
#include "kernels/cuda/matmul_cuda.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/dequantize_cuda.h"
#include "kernels/cuda/device_arch.h"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/quants.h"

namespace herd::cuda {
namespace {

using testing::HalfFields;

#define SKIP_WITHOUT_GPU()                           \
  do {                                               \
    std::string why;                                 \
    if (!DeviceAvailable(&why)) GTEST_SKIP() << why; \
  } while (0)

// Device memory owned by the test.
struct DeviceMem {
  void* p = nullptr;
  explicit DeviceMem(size_t bytes) { HERD_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(bytes, 16))); }
  ~DeviceMem() { cudaFree(p); }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

template <typename T>
std::vector<T> Download(const void* d, size_t n) {
  std::vector<T> h(n);
  HERD_CUDA_CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// A random [rows, cols] weight matrix of `type` in host memory.
std::vector<uint8_t> RandomWeights(DType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  const size_t bytes = RowBytes(type, cols) * rows;
  std::vector<uint8_t> w(bytes);
  std::normal_distribution<float> nd(0.f, 1.f);
  if (type == DType::kF32 || type == DType::kF16 || type == DType::kBF16) {
    for (int64_t i = 0; i < rows * cols; ++i) {
      const float v = nd(rng);
      if (type == DType::kF32) {
        std::memcpy(w.data() + 4 * i, &v, 4);
      } else {
        const uint16_t h = type == DType::kF16 ? Fp32ToFp16(v) : Fp32ToBf16(v);
        std::memcpy(w.data() + 2 * i, &h, 2);
      }
    }
    return w;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : w) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> mag(0.002f, 0.02f);
  const size_t bb = Traits(type).type_size;
  const std::vector<int> fields = HalfFields(type);
  for (size_t blk = 0; blk < bytes / bb; ++blk) {
    for (size_t f = 0; f < fields.size(); ++f) {
      // d: either sign for the types that allow it; dmin/m: any sign too (the formats allow it).
      const float v = mag(rng) * (byte(rng) & 1 ? 1.f : -1.f);
      const uint16_t h = Fp32ToFp16(v);
      std::memcpy(w.data() + blk * bb + fields[f], &h, 2);
    }
  }
  return w;
}

std::vector<float> RandomActivations(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(n);
  for (float& v : x) {
    v = nd(rng);
    if (v == 0.f) v = 0.5f;
  }
  return x;
}

// x as the GEMV path rounds it for weights of `type`: the reference's activation quantization
// (ref::QuantizeRow to ref::VecDotType(type)), dequantized, per token row of n_in.
std::vector<float> QuantizeLikeReference(DType type, const std::vector<float>& x, int64_t n_in) {
  const DType f = ref::VecDotType(type);
  std::vector<float> out(x.size());
  std::vector<uint8_t> q(RowBytes(f, n_in));
  for (size_t r = 0; r < x.size() / n_in; ++r) {
    ref::QuantizeRow(f, x.data() + r * n_in, q.data(), n_in);
    ref::DequantizeRow(f, q.data(), out.data() + r * n_in, n_in);  // d * q: exact in double below
  }
  return out;
}

enum class Path { kGemv, kTensorCore };

// Oracle of check 1: y[t, o] and sum |w x| in double with the path's input rounding; *sq
// (optional) gets sum_{t,o,i} (w_i x_i)^2.
void Oracle(DType type, Path path, const std::vector<uint8_t>& w, int64_t n_out, int64_t n_in,
            const std::vector<float>& x, int64_t n_tok, std::vector<double>* y, std::vector<double>* mag,
            double* sq = nullptr) {
  const bool is_float = type == DType::kF32 || type == DType::kF16 || type == DType::kBF16;
  std::vector<float> wf(n_out * n_in);
  for (int64_t o = 0; o < n_out; ++o)
    ref::DequantizeRow(type, w.data() + o * RowBytes(type, n_in), &wf[o * n_in], n_in);
  std::vector<float> xr = x;
  if (path == Path::kGemv) {
    if (!is_float) xr = QuantizeLikeReference(type, x, n_in);
  } else if (type != DType::kF32) {
    const bool bf = type == DType::kBF16;
    for (float& v : xr) v = bf ? Bf16ToFp32(Fp32ToBf16(v)) : Fp16ToFp32(Fp32ToFp16(v));
    if (!is_float) {
      for (float& v : wf) v = Fp16ToFp32(Fp32ToFp16(v));
    }
  }
  y->assign(n_tok * n_out, 0.0);
  mag->assign(n_tok * n_out, 0.0);
  double q = 0;
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t o = 0; o < n_out; ++o) {
      double s = 0, m = 0;
      for (int64_t i = 0; i < n_in; ++i) {
        const double p = static_cast<double>(wf[o * n_in + i]) * xr[t * n_in + i];
        s += p;
        m += std::fabs(p);
        q += p * p;
      }
      (*y)[t * n_out + o] = s;
      (*mag)[t * n_out + o] = m;
    }
  }
  if (sq != nullptr) *sq = q;
}

double RefTolerance(DType type, Path path) {
  if (type == DType::kF32 || type == DType::kF16 || type == DType::kBF16) {
    if (path == Path::kGemv || type == DType::kF32) return 1e-5;
    return type == DType::kF16 ? 2e-3 : 1e-2;
  }
  return 3e-2;
}

struct Shape {
  int64_t n_out, n_in, n_tok;
};

// Shapes per type: one block, a few blocks, an aligned 2048 and a long odd row, each with
// n_out in {1, 7, 67, 300} and n_tok in {1, 2, 5, 16, 33, 130, 512} (the large products use
// the smaller n_out so the CPU oracles stay fast).
std::vector<Shape> ShapesFor(DType type) {
  const int64_t bs = Traits(type).block_size;
  std::vector<int64_t> n_ins;
  if (bs == 1) {
    n_ins = {7, 40, 2048, 4104};
  } else if (bs == 32) {
    n_ins = {32, 96, 2048, 1056};
  } else {
    n_ins = {256, 768, 2048, 4352};
  }
  std::vector<Shape> out;
  for (int64_t n_in : n_ins) {
    out.push_back({1, n_in, 1});
    out.push_back({7, n_in, 2});
    out.push_back({67, n_in, 5});
    out.push_back({300, n_in, 1});
    out.push_back({300, n_in, 16});
    out.push_back({7, n_in, 33});
    out.push_back({67, n_in, 130});
    out.push_back({7, n_in, 512});
  }
  out.push_back({300, 2 * bs * (bs == 1 ? 64 : 1), 8});
  // The fused quantized tensor-core kernel (n_in a multiple of 256): split-K over a few row
  // tiles, two token tiles with a partial one, a single partial row tile.
  out.push_back({300, 4096, 130});
  out.push_back({1000, 2048, 200});
  out.push_back({129, 1024, 9});
  // Enough rows that the GEMVs give each row a single warp (the float GEMV splits rows of 16 to
  // 64 512-byte units over 4 warps at >= 4096 rows: n_in 4104 there, 16400 for one warp).
  out.push_back({4100, n_ins[2], 3});
  out.push_back({4100, n_ins[3], 1});
  if (bs == 1) out.push_back({4100, 16400, 1});
  // One token over 1,500 thread blocks of 4 rows: on an H100 one wave of the quantized GEMV's
  // instance without early activation loads but more than one of the early one, so the wave rule
  // (LaunchGemvQuant) takes the former for Q4_K and the other types with that register gap.
  out.push_back({6000, 4096, 1});
  return out;
}

class MatMulCudaTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatMulCudaTest, MatchesReferenceOnBothPaths) {
  SKIP_WITHOUT_GPU();
  const DType type = GetParam();
  std::mt19937 rng(1234 + static_cast<int>(type));
  cudaStream_t stream;
  HERD_CUDA_CHECK(cudaStreamCreate(&stream));
  {
    MatMulRunner runner(stream);
    for (const Shape& s : ShapesFor(type)) {
      const std::vector<uint8_t> w = RandomWeights(type, s.n_out, s.n_in, rng);
      const std::vector<float> x = RandomActivations(s.n_tok * s.n_in, rng);
      DeviceMem dw(w.size()), dx(x.size() * 4), dy(s.n_tok * s.n_out * 4);
      HERD_CUDA_CHECK(cudaMemcpy(dw.p, w.data(), w.size(), cudaMemcpyHostToDevice));
      HERD_CUDA_CHECK(cudaMemcpy(dx.p, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
      const TensorView view = TensorView::Matrix(type, s.n_out, s.n_in, dw.p);
      const TensorView host_view = TensorView::Matrix(type, s.n_out, s.n_in, const_cast<uint8_t*>(w.data()));
      std::vector<float> y_ref(s.n_tok * s.n_out);
      ref::MatMul(host_view, x.data(), s.n_tok, y_ref.data());
      std::vector<double> y_or[2], mag[2];
      double sq = 0;
      Oracle(type, Path::kGemv, w, s.n_out, s.n_in, x, s.n_tok, &y_or[0], &mag[0], &sq);
      Oracle(type, Path::kTensorCore, w, s.n_out, s.n_in, x, s.n_tok, &y_or[1], &mag[1]);
      const double scale = std::sqrt(sq);

      // Each path with the device's GEMV choices; float weights' GEMV also with each choice of
      // vectors in flight and 4-warp row split (the two tunings of matmul_gemv_float.cu's register
      // kernel, with the ring kernel off).
      // Quantized weights' GEMV also staged and read in place (gemv_quant_direct.cu, K-quants at
      // one token; the others ignore the switch).
      struct Run {
        MatMulPath path;
        int float_vectors;
        int64_t float_split4_units;
        int quant_direct;
      };
      std::vector<Run> runs = {{MatMulPath::kGemv, 0, -1, -1},
                               {MatMulPath::kTensorCore, 0, -1, -1},
                               {MatMulPath::kTensorCoreFused, 0, -1, -1},
                               {MatMulPath::kTensorCoreCublas, 0, -1, -1},
                               {MatMulPath::kAuto, 0, -1, -1}};
      if (!Traits(type).quantized) {
        for (const int vectors : {2, 4})
          for (const int64_t split4 : {0, 64}) runs.push_back({MatMulPath::kGemv, vectors, split4, -1});
      } else {
        for (const int direct : {0, 1}) runs.push_back({MatMulPath::kGemv, 0, -1, direct});
      }
      for (const Run& run : runs) {
        const MatMulPath mp = run.path;
        internal::GemvOptions gemv_options;
        gemv_options.float_vectors = run.float_vectors;
        gemv_options.float_split4_units = run.float_split4_units;
        gemv_options.quant_direct = run.quant_direct;
        // The default runs take the ring kernel for these small one-token launches (the default
        // float_ring_max_mb); the tuning runs test the register kernel, which takes the larger ones.
        if (run.float_vectors != 0) gemv_options.float_ring_max_mb = 0;
        internal::SetGemvOptions(gemv_options);
        SCOPED_TRACE(
            std::string(DTypeName(type)) + " n_out=" + std::to_string(s.n_out) + " n_in=" + std::to_string(s.n_in) +
            " n_tok=" + std::to_string(s.n_tok) + " path=" + std::to_string(static_cast<int>(mp)) +
            " float_vectors=" + std::to_string(run.float_vectors) +
            " split4=" + std::to_string(run.float_split4_units) + " direct=" + std::to_string(run.quant_direct));
        HERD_CUDA_CHECK(cudaMemsetAsync(dy.p, 0xFF, s.n_tok * s.n_out * 4, stream));  // NaN
        // (Its tiles need up to ~205 KB of shared memory: Hopper's 227 KB hold them, Ada's 99 do not.)
        if (mp == MatMulPath::kTensorCoreFused && Traits(type).quantized && s.n_in % 2048 == 0 && DeviceCc() == 90 &&
            MaxDynamicSmem() >= 227 * 1024) {
          EXPECT_TRUE(internal::GemmQuantTcSupports(view)) << "the fused kernel must take this weight";
        }
        runner.set_path(mp);
        runner.MatMul(view, dx.as<float>(), s.n_tok, dy.as<float>());
        HERD_CUDA_CHECK(cudaStreamSynchronize(stream));
        const std::vector<float> y = Download<float>(dy.p, s.n_tok * s.n_out);
        const MatMulPath taken = mp == MatMulPath::kAuto ? MatMulRunner::AutoPath(type, s.n_tok) : mp;
        const Path path = taken == MatMulPath::kGemv ? Path::kGemv : Path::kTensorCore;
        const std::vector<double>& yo = y_or[path == Path::kGemv ? 0 : 1];
        const std::vector<double>& mg = mag[path == Path::kGemv ? 0 : 1];
        const bool same_as_ref = path == Path::kGemv && Traits(type).quantized;
        double diff2 = 0;
        int bad = 0, bad_ref = 0;
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_TRUE(std::isfinite(y[i])) << "element " << i << " not written or not finite";
          diff2 += (static_cast<double>(y[i]) - y_ref[i]) * (static_cast<double>(y[i]) - y_ref[i]);
          if (std::fabs(y[i] - yo[i]) > 1e-4 * mg[i] + 1e-30 && bad++ < 5) {
            ADD_FAILURE() << "element " << i << " (tok " << i / s.n_out << ", out " << i % s.n_out << "): gpu " << y[i]
                          << " oracle " << yo[i] << " magnitude " << mg[i];
          }
          if (same_as_ref && std::fabs(y[i] - y_ref[i]) > 2e-5 * mg[i] + 1e-30 && bad_ref++ < 5) {
            ADD_FAILURE() << "element " << i << " (tok " << i / s.n_out << ", out " << i % s.n_out << "): gpu " << y[i]
                          << " ref::MatMul " << y_ref[i] << " magnitude " << mg[i];
          }
        }
        if (!same_as_ref) {
          EXPECT_LE(std::sqrt(diff2), RefTolerance(type, path) * scale)
              << "error vs ref::MatMul " << std::sqrt(diff2) / scale << " of S";
        }
      }
      internal::SetGemvOptions({});
    }
  }
  HERD_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST_P(MatMulCudaTest, GetRowsIsExact) {
  SKIP_WITHOUT_GPU();
  const DType type = GetParam();
  std::mt19937 rng(99 + static_cast<int>(type));
  const int64_t bs = Traits(type).block_size;
  // One block, an unaligned few, an aligned 2048, and a row of several dequantize segments.
  for (int64_t cols : {bs == 1 ? int64_t{5} : bs, 3 * std::max<int64_t>(bs, 32), int64_t{2048}, int64_t{9216}}) {
    SCOPED_TRACE(std::string(DTypeName(type)) + " cols=" + std::to_string(cols));
    const int64_t rows = 37, n = 50;
    const std::vector<uint8_t> table = RandomWeights(type, rows, cols, rng);
    std::vector<int32_t> ids(n);
    std::uniform_int_distribution<int32_t> pick(0, rows - 1);
    for (int32_t& id : ids) id = pick(rng);
    ids[0] = 0, ids[1] = rows - 1, ids[2] = ids[3];
    DeviceMem dt(table.size()), di(n * 4), dout(n * cols * 4);
    HERD_CUDA_CHECK(cudaMemcpy(dt.p, table.data(), table.size(), cudaMemcpyHostToDevice));
    HERD_CUDA_CHECK(cudaMemcpy(di.p, ids.data(), n * 4, cudaMemcpyHostToDevice));
    HERD_CUDA_CHECK(cudaMemset(dout.p, 0xFF, n * cols * 4));
    GetRows(TensorView::Matrix(type, rows, cols, dt.p), di.as<int32_t>(), n, dout.as<float>(), nullptr);
    HERD_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = Download<float>(dout.p, n * cols);
    std::vector<float> want(n * cols);
    ref::GetRows(TensorView::Matrix(type, rows, cols, const_cast<uint8_t*>(table.data())), ids.data(), n, want.data());
    int bad = 0;
    for (size_t i = 0; i < got.size() && bad < 5; ++i) {
      if (!(got[i] == want[i])) {
        ++bad;
        ADD_FAILURE() << "row " << i / cols << " col " << i % cols << ": gpu " << got[i] << " ref " << want[i];
      }
    }
  }
}

// MatMulShared(types[i] x n_outs[i] weights, one x of n_in) at each n_tok, against the oracle of
// the path AutoPath picks for each weight.
void ExpectSharedMatchesOracle(std::span<const DType> types, std::span<const int64_t> n_outs, int64_t n_in,
                               std::initializer_list<int64_t> n_toks, uint32_t seed) {
  std::mt19937 rng(seed);
  cudaStream_t stream;
  HERD_CUDA_CHECK(cudaStreamCreate(&stream));
  {
    MatMulRunner runner(stream);
    for (int64_t n_tok : n_toks) {
      SCOPED_TRACE("n_tok=" + std::to_string(n_tok) + " n_in=" + std::to_string(n_in));
      const std::vector<float> x = RandomActivations(n_tok * n_in, rng);
      DeviceMem dx(x.size() * 4);
      HERD_CUDA_CHECK(cudaMemcpy(dx.p, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
      std::vector<std::vector<uint8_t>> hw;
      std::vector<std::unique_ptr<DeviceMem>> dws, dys;
      std::vector<TensorView> views;
      std::vector<float*> ys;
      for (size_t i = 0; i < types.size(); ++i) {
        hw.push_back(RandomWeights(types[i], n_outs[i], n_in, rng));
        dws.push_back(std::make_unique<DeviceMem>(hw.back().size()));
        HERD_CUDA_CHECK(cudaMemcpy(dws.back()->p, hw.back().data(), hw.back().size(), cudaMemcpyHostToDevice));
        views.push_back(TensorView::Matrix(types[i], n_outs[i], n_in, dws.back()->p));
        dys.push_back(std::make_unique<DeviceMem>(n_tok * n_outs[i] * 4));
        HERD_CUDA_CHECK(cudaMemset(dys.back()->p, 0xFF, n_tok * n_outs[i] * 4));
        ys.push_back(dys.back()->as<float>());
      }
      runner.MatMulShared(views, dx.as<float>(), n_tok, ys);
      HERD_CUDA_CHECK(cudaStreamSynchronize(stream));
      for (size_t i = 0; i < views.size(); ++i) {
        const Path path =
            MatMulRunner::AutoPath(types[i], n_tok) == MatMulPath::kGemv ? Path::kGemv : Path::kTensorCore;
        std::vector<double> y_or, mag;
        Oracle(types[i], path, hw[i], n_outs[i], n_in, x, n_tok, &y_or, &mag);
        const std::vector<float> y = Download<float>(dys[i]->p, n_tok * n_outs[i]);
        int bad = 0;
        for (size_t k = 0; k < y.size(); ++k) {
          ASSERT_TRUE(std::isfinite(y[k])) << DTypeName(types[i]) << " weight " << i << " element " << k;
          if (std::fabs(y[k] - y_or[k]) > 1e-4 * mag[k] + 1e-30 && bad++ < 5)
            ADD_FAILURE() << DTypeName(types[i]) << " weight " << i << " element " << k << ": gpu " << y[k]
                          << " oracle " << y_or[k];
        }
      }
    }
  }
  HERD_CUDA_CHECK(cudaStreamDestroy(stream));
}

// MatMulShared: weights of several types (all three activation formats), several of one type
// (one GEMV launch for up to four, so five Q4_K take two; the fifth shares its launch with the
// Q6_K), against the oracle of the path AutoPath picks.
TEST(MatMulCudaSharedTest, SharedInputMatchesOracle) {
  SKIP_WITHOUT_GPU();
  const DType types[] = {DType::kQ4_K, DType::kQ6_K, DType::kF16,  DType::kBF16, DType::kQ4_K, DType::kQ8_0,
                         DType::kF16,  DType::kQ4_K, DType::kQ4_K, DType::kQ4_K, DType::kQ5_1, DType::kQ4_0};
  const int64_t n_outs[] = {300, 67, 129, 64, 1, 7, 5000, 1024, 33, 4100, 70, 9};
  ExpectSharedMatchesOracle(types, n_outs, 2048, {1, 2, 3, 9, 40}, 7);
}

// A type and its mix partner in one GEMV launch (the _M files' Q/K/V: Q4_K Q and K with a Q6_K
// V), in either order, with rows of whole and partial 2048-value steps, and the pair split over
// two launches when there are more than four weights.
TEST(MatMulCudaSharedTest, MixedTypesInOneLaunchMatchOracle) {
  SKIP_WITHOUT_GPU();
  struct Case {
    std::vector<DType> types;
    std::vector<int64_t> n_outs;
  };
  const Case cases[] = {
      {{DType::kQ4_K, DType::kQ4_K, DType::kQ6_K}, {512, 128, 128}},
      {{DType::kQ6_K, DType::kQ4_K}, {96, 257}},
      {{DType::kQ5_K, DType::kQ6_K, DType::kQ5_K}, {64, 65, 3}},
      {{DType::kQ3_K, DType::kQ4_K}, {130, 40}},
      {{DType::kQ2_K, DType::kQ3_K, DType::kQ2_K}, {31, 200, 9}},
      {{DType::kQ4_K, DType::kQ6_K, DType::kQ4_K, DType::kQ6_K, DType::kQ4_K, DType::kQ6_K}, {5, 6, 7, 8, 9, 10}},
  };
  uint32_t seed = 11;
  for (const int direct : {0, 1}) {  // one-token launches staged, then read in place
    internal::GemvOptions options;
    options.quant_direct = direct;
    internal::SetGemvOptions(options);
    SCOPED_TRACE("direct=" + std::to_string(direct));
    for (const Case& c : cases) {
      for (int64_t n_in : {2048, 4352}) {
        ExpectSharedMatchesOracle(c.types, c.n_outs, n_in, {1, 3, 8, 11}, seed++);
      }
    }
  }
  internal::SetGemvOptions({});
}

std::string TypeName(const ::testing::TestParamInfo<DType>& info) { return std::string(DTypeName(info.param)); }

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, MatMulCudaTest, ::testing::ValuesIn(kWeightTypes), TypeName);

}  // namespace
}  // namespace herd::cuda
