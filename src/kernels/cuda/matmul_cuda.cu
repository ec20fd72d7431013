// MatMulRunner: picks the path of each matmul and owns its scratch memory.
//   GEMV path (n_tok <= kGemvMaxTok*): quantized weights take int8 activations in the format
//     the reference uses for their type (ref::VecDotType: Q8_0, Q8_1 or Q8_K; one
//     QuantizeActivations per format and call, shared by MatMulShared's weights) and GemvQuant;
//     float weights take float32 x directly (GemvFloat).
//   Tensor-core path: x converted once to half (bfloat16 for BF16 weights), then cuBLAS
//     (fp32 accumulation and output). F16/BF16 weights are used in place. Quantized weights: the
//     fused kernel (GemmQuantTc: decoded in shared memory to the same halves, mma.sync) where it
//     takes the weight and UseQuantTc picks it (batch small for the weight); else dequantized to
//     half in tiles of at most kTileBytes, one GEMM per tile. F16/BF16 weights on Hopper up to
//     HalfTcMaxTok tokens (HalfTcMaxTokGrouped for weights sharing a launch): GemmHalfTc (TMA +
//     wgmma, the weights of one type in one launch; gate/up with the SwiGLU in MatMulSwiGlu).
//     F32 weights: SGEMM (no TF32).

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <utility>

#include "kernels/cuda/blas_gemm.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/gemm_tuned.h"
#include "kernels/cuda/matmul_cuda.h"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/quants.h"

namespace herd::cuda {
namespace {

constexpr int64_t kGemvMaxTokQuant = 8;
constexpr int64_t kGemvMaxTokFloat = 1;
constexpr size_t kTileBytes = size_t{64} << 20;
// Fused kernel or dequantized tiles + cuBLAS for quantized weights (H100, bench/results/
// cuda-quant-tc-2026-11-24.md): the fused kernel wins where the weight is large for the batch
// (rows x cols >= 256Ki x n_tok: its per-tile latency and split-K partials are amortized) and
// up to 128 tokens; from 256 tokens cuBLAS wins on every shape.
constexpr int64_t kQuantTcMaxTokDefault = 128;
constexpr int64_t kQuantTcMinElemsPerTokDefault = int64_t{1} << 18;
// GemmHalfTc or cuBLAS for F16 / BF16 weights (H100, bench/results/cuda-half-tc-2026-11-25.md):
// GemmHalfTc up to 64 tokens (8B F16 decode, 16 / 64 sequences: +6.7% / +3.9%, mostly Q/K/V in
// one launch), and up to 128 for weights sharing a launch (Q/K/V, gate/up; 128 sequences:
// +1.1%); a single weight at 65-128 tokens takes cuBLAS (GemmHalfTc alone for every weight
// there: -2%, its split-K partials and epilogue cost more than they save).
constexpr int64_t kHalfTcMaxTokDefault = 64;
constexpr int64_t kHalfTcMaxTokGroupedDefault = 128;

// The integer value of environment variable `name`, or `fallback` when it is not set.
int64_t EnvInt(const char* name, int64_t fallback) {
  const char* e = std::getenv(name);
  return e == nullptr ? fallback : std::atoll(e);
}

bool IsFloat(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// HERD_CUDA_MATMUL_PATH=gemv|tc|tc-fused|tc-cublas|auto (default auto): the path every runner starts with (a
// debugging knob, e.g. to run prompts through the GEMV's reference-exact int8 arithmetic).
MatMulPath PathFromEnvironment() {
  const char* e = std::getenv("HERD_CUDA_MATMUL_PATH");
  if (e == nullptr) return MatMulPath::kAuto;
  const std::string_view v(e);
  if (v == "gemv") return MatMulPath::kGemv;
  if (v == "tc") return MatMulPath::kTensorCore;
  if (v == "tc-fused") return MatMulPath::kTensorCoreFused;
  if (v == "tc-cublas") return MatMulPath::kTensorCoreCublas;
  return MatMulPath::kAuto;
}

// Scratch slot of an activation format (ref::VecDotType of a quantized weight type).
int ActSlot(DType format) { return format == DType::kQ8_0 ? 0 : format == DType::kQ8_1 ? 1 : 2; }

}  // namespace

struct MatMulRunner::Impl {
  cudaStream_t stream;
  BlasGemm blas{stream};
  MatMulPath path = MatMulPath::kAuto;
  DeviceBuffer act[3];     // int8 activations + scales, per format (ActSlot)
  DeviceBuffer half_x[2];  // x as half [0] / bfloat16 [1]
  DeviceBuffer glu_half;   // GemmHalfTcGlu's output for the next matmul (x of that call is in half_x)
  DeviceBuffer tile;       // dequantized weight rows (half)
  DeviceBuffer partials;   // GemmQuantTc split-K sums
  DeviceBuffer concat;     // MatMulConcatenated's output
  DeviceBuffer sliced;     // MatMulSlicedK's partial sums
  // An input converted by FusedRmsNorm / FusedSwiGlu for the next call: int8 activations for the
  // GEMV (q.q != nullptr) or half / bfloat16 x for the tensor cores (half != nullptr).
  struct Prepared {
    const float* x = nullptr;
    int64_t n_tok = 0, n_in = 0;
    internal::QuantizedActivations q;
    const void* half = nullptr;
    bool bf16 = false;
    bool Matches(const float* x2, int64_t n_tok2, int64_t n_in2) const {
      return x == x2 && n_tok == n_tok2 && n_in == n_in2;
    }
  } prepared;
  // The last kernel this runner queued was cuBLAS's (EndedInCublas).
  bool blas_tail = false;

  // How the next call with a weight of `type` takes x at n_tok tokens.
  enum class Input { kFloat, kInt8, kHalf, kBf16 };
  Input InputKind(DType type, int64_t n_tok) const {
    if (UseGemv(type, n_tok)) return IsFloat(type) ? Input::kFloat : Input::kInt8;
    return type == DType::kF32 ? Input::kFloat : type == DType::kBF16 ? Input::kBf16 : Input::kHalf;
  }

  explicit Impl(cudaStream_t s) : stream(s), path(PathFromEnvironment()) {}

  bool UseGemv(DType t, int64_t n_tok) const {
    return (path == MatMulPath::kAuto ? AutoPath(t, n_tok) : path) == MatMulPath::kGemv;
  }
  // On the tensor-core path: the fused kernel for w at n_tok tokens.
  bool UseQuantTc(const TensorView& w, int64_t n_tok) const {
    if (path == MatMulPath::kTensorCoreCublas || !internal::GemmQuantTcSupports(w)) return false;
    if (path == MatMulPath::kTensorCoreFused) return true;
    return n_tok <= QuantTcMaxTok() && w.rows() * w.cols() >= QuantTcMinElemsPerTok() * n_tok;
  }

  // On the tensor-core path: the TMA / wgmma kernel for F16 / BF16 w at n_tok tokens.
  // `grouped`: w shares its launch with other weights of its type (Q/K/V, gate/up).
  bool UseHalfTc(const TensorView& w, int64_t n_tok, bool grouped) const {
    if (path == MatMulPath::kTensorCoreCublas || !internal::GemmHalfTcSupports(w) || !internal::GemmHalfTcAvailable())
      return false;
    return path == MatMulPath::kTensorCoreFused || n_tok <= (grouped ? HalfTcMaxTokGrouped() : HalfTcMaxTok());
  }

  internal::QuantizedActivations Quantize(DType format, const float* x, int64_t n_tok, int64_t n_in) {
    void* buf = act[ActSlot(format)].Get(internal::QuantizedActivationBytes(n_tok, n_in), stream);
    return internal::QuantizeActivations(format, x, n_tok, n_in, buf, stream);
  }

  const void* Convert(const float* x, int64_t n_tok, int64_t n_in, bool bf16) {
    void* out = half_x[bf16 ? 1 : 0].Get(static_cast<size_t>(n_tok * n_in) * 2, stream);
    internal::ConvertActivations(x, n_tok * n_in, bf16, out, stream);
    return out;
  }

  // y[:, r0:r0+m] = x · a[0:m]ᵀ with a: [m, k] half/bf16 rows, x: [n_tok, k]. Large weights at
  // decode batch sizes through cuBLASLt with a tuned algorithm (gemm_tuned.h), else cublasGemmEx.
  void Gemm(const void* a, cudaDataType_t type, int64_t m, int64_t k, const void* xh, int64_t n_tok, float* y,
            int64_t ldy) {
    blas_tail = true;
    blas.Gemm(a, type, m, k, xh, n_tok, y, ldy);
  }

  void TensorCore(const TensorView& w, const float* x, const void* xh, int64_t n_tok, float* y) {
    const int64_t n_in = w.cols(), n_out = w.rows();
    switch (w.type) {
      case DType::kF32: {
        blas_tail = true;
        blas.Sgemm(static_cast<const float*>(w.data), n_out, n_in, x, n_tok, y);
        return;
      }
      case DType::kF16: return Gemm(w.data, CUDA_R_16F, n_out, n_in, xh, n_tok, y, n_out);
      case DType::kBF16: return Gemm(w.data, CUDA_R_16BF, n_out, n_in, xh, n_tok, y, n_out);
      default: break;
    }
    int64_t rows = static_cast<int64_t>(kTileBytes / (static_cast<size_t>(n_in) * 2)) / 128 * 128;
    rows = std::min(std::max<int64_t>(rows, 128), n_out);
    void* t = tile.Get(static_cast<size_t>(rows * n_in) * 2, stream);
    for (int64_t r0 = 0; r0 < n_out; r0 += rows) {
      const int64_t m = std::min(rows, n_out - r0);
      internal::DequantizeRowsToHalf(w, r0, m, t, stream);
      Gemm(t, CUDA_R_16F, m, n_in, xh, n_tok, y + r0, n_out);
    }
  }

  // The buffer a fused conversion writes for the next call (int8 activations of the weight's
  // format, or half / bfloat16 x), nullptr when that call takes float x.
  void* FusedTarget(DType weight_type, int64_t n_tok, int64_t n_in) {
    prepared = Prepared{};
    switch (InputKind(weight_type, n_tok)) {
      case Input::kFloat: return nullptr;
      case Input::kInt8:
        return act[ActSlot(ref::VecDotType(weight_type))].Get(internal::QuantizedActivationBytes(n_tok, n_in), stream);
      case Input::kHalf: return half_x[0].Get(static_cast<size_t>(n_tok * n_in) * 2, stream);
      case Input::kBf16: return half_x[1].Get(static_cast<size_t>(n_tok * n_in) * 2, stream);
    }
    return nullptr;
  }

  // Runs a fused producer of x = out for the next call: to_int8(format, buffer, &q) or
  // to_half(bf16, buffer), whichever that call takes; records the prepared input on success.
  template <typename ToInt8, typename ToHalf>
  bool Prepare(DType weight_type, const float* out, int64_t n_tok, int64_t n_in, ToInt8 to_int8, ToHalf to_half) {
    blas_tail = false;
    void* buf = FusedTarget(weight_type, n_tok, n_in);
    if (buf == nullptr) return false;
    Prepared p{out, n_tok, n_in, {}, nullptr, false};
    const Input kind = InputKind(weight_type, n_tok);
    if (kind == Input::kInt8) {
      if (!to_int8(ref::VecDotType(weight_type), buf, &p.q)) return false;
    } else {
      p.bf16 = kind == Input::kBf16;
      p.half = buf;
      if (!to_half(p.bf16, buf)) return false;
    }
    prepared = p;
    return true;
  }

  void Run(std::span<const TensorView> ws, const float* x, int64_t n_tok, std::span<float* const> ys) {
    HERD_CHECK(ws.size() == ys.size());
    const Prepared pre = std::exchange(prepared, Prepared{});
    blas_tail = false;  // herd's kernels queue first, cuBLAS last (TensorCore)
    if (n_tok == 0 || ws.empty()) return;
    const int64_t n_in = ws[0].cols();
    for (const TensorView& w : ws) {
      HERD_CHECK_MSG(w.cols() == n_in, "MatMulShared: weights differ in n_in (%lld vs %lld)",
                     static_cast<long long>(w.cols()), static_cast<long long>(n_in));
      HERD_CHECK_MSG(n_in % Traits(w.type).block_size == 0, "MatMul: n_in=%lld not a multiple of the %s block",
                     static_cast<long long>(n_in), DTypeName(w.type).data());
    }
    // GEMV path: float weights of one type in one launch; quantized weights of one activation
    // format to GemvQuant together (it launches each type, or a type and its mix partner, once);
    // int8 activations made once per format.
    internal::QuantizedActivations q[3];
    if (pre.q.q != nullptr && pre.Matches(x, n_tok, n_in)) q[ActSlot(pre.q.format)] = pre.q;
    constexpr size_t kMaxGroup = 16;
    HERD_CHECK(ws.size() <= kMaxGroup);
    bool done[kMaxGroup] = {};
    for (size_t i = 0; i < ws.size(); ++i) {
      if (done[i] || ws[i].rows() == 0 || !UseGemv(ws[i].type, n_tok)) continue;
      TensorView gw[kMaxGroup];
      float* gy[kMaxGroup];
      size_t n = 0;
      const auto together = [&](DType t) {
        return IsFloat(ws[i].type) ? t == ws[i].type : !IsFloat(t) && ref::VecDotType(t) == ref::VecDotType(ws[i].type);
      };
      for (size_t j = i; j < ws.size(); ++j) {
        if (!done[j] && together(ws[j].type) && ws[j].rows() > 0 && UseGemv(ws[j].type, n_tok)) {
          gw[n] = ws[j];
          gy[n++] = ys[j];
          done[j] = true;
        }
      }
      if (IsFloat(ws[i].type)) {
        internal::GemvFloat({gw, n}, {gy, n}, x, n_tok, stream);
      } else {
        const DType format = ref::VecDotType(ws[i].type);
        internal::QuantizedActivations& qa = q[ActSlot(format)];
        if (qa.q == nullptr) qa = Quantize(format, x, n_tok, n_in);
        internal::GemvQuant({gw, n}, {gy, n}, qa, n_tok, stream);
      }
    }
    // Tensor-core path: x converted once per format.
    const void* xh[2] = {nullptr, nullptr};
    if (pre.half != nullptr && pre.Matches(x, n_tok, n_in)) xh[pre.bf16 ? 1 : 0] = pre.half;
    // Fused quantized kernel: weights of one type in one launch (up to 4).
    for (size_t i = 0; i < ws.size(); ++i) {
      if (done[i] || ws[i].rows() == 0 || !UseQuantTc(ws[i], n_tok)) continue;
      TensorView gw[4];
      float* gy[4];
      size_t n = 0;
      for (size_t j = i; j < ws.size() && n < 4; ++j) {
        if (!done[j] && ws[j].type == ws[i].type && ws[j].rows() > 0 && UseQuantTc(ws[j], n_tok)) {
          gw[n] = ws[j];
          gy[n++] = ys[j];
          done[j] = true;
        }
      }
      if (xh[0] == nullptr) xh[0] = Convert(x, n_tok, n_in, false);
      const size_t scratch = internal::GemmQuantTcScratchBytes();
      internal::GemmQuantTc({gw, n}, {gy, n}, xh[0], n_tok, partials.Get(scratch, stream), scratch, stream);
    }
    // F16 / BF16 weights on Hopper (TMA + wgmma): of one type in one launch (up to 4).
    for (size_t i = 0; i < ws.size(); ++i) {
      if (done[i] || ws[i].rows() == 0) continue;
      size_t same = 0;  // weights this launch would take
      for (size_t j = i; j < ws.size(); ++j) same += !done[j] && ws[j].type == ws[i].type && ws[j].rows() > 0;
      const bool grouped = same > 1;
      if (!UseHalfTc(ws[i], n_tok, grouped)) continue;
      TensorView gw[4];
      float* gy[4];
      size_t n = 0;
      for (size_t j = i; j < ws.size() && n < 4; ++j) {
        if (!done[j] && ws[j].type == ws[i].type && ws[j].rows() > 0 && UseHalfTc(ws[j], n_tok, grouped)) {
          gw[n] = ws[j];
          gy[n++] = ys[j];
          done[j] = true;
        }
      }
      const int k = ws[i].type == DType::kBF16 ? 1 : 0;
      if (xh[k] == nullptr) xh[k] = Convert(x, n_tok, n_in, k == 1);
      const size_t scratch = internal::GemmQuantTcScratchBytes();
      internal::GemmHalfTc({gw, n}, {gy, n}, xh[k], n_tok, partials.Get(scratch, stream), scratch, stream);
    }
    for (size_t i = 0; i < ws.size(); ++i) {
      const TensorView& w = ws[i];
      if (done[i] || w.rows() == 0) continue;
      const void* h = nullptr;
      if (w.type != DType::kF32) {
        const int k = w.type == DType::kBF16 ? 1 : 0;
        if (xh[k] == nullptr) xh[k] = Convert(x, n_tok, n_in, k == 1);
        h = xh[k];
      }
      TensorCore(w, x, h, n_tok, ys[i]);
    }
  }
};

MatMulRunner::MatMulRunner(cudaStream_t stream) : impl_(std::make_unique<Impl>(stream)) {}
MatMulRunner::~MatMulRunner() = default;

void MatMulRunner::MatMul(const TensorView& w, const float* x, int64_t n_tok, float* y) {
  float* const ys[1] = {y};
  impl_->Run(std::span<const TensorView>(&w, 1), x, n_tok, ys);
}

void MatMulRunner::MatMulShared(std::span<const TensorView> ws, const float* x, int64_t n_tok,
                                std::span<float* const> ys) {
  impl_->Run(ws, x, n_tok, ys);
}

const float* MatMulRunner::MatMulConcatenated(std::span<const TensorView> ws, const float* x, int64_t n_tok) {
  Impl& m = *impl_;
  const auto [lo, hi] = ConcatTokRange();
  if (ws.size() < 2 || n_tok < lo || n_tok > hi || n_tok < 1 || m.path != MatMulPath::kAuto) return nullptr;
  const TensorView& w0 = ws[0];
  if ((w0.type != DType::kF16 && w0.type != DType::kBF16) || m.UseGemv(w0.type, n_tok)) return nullptr;
  TensorView all = TensorView::Matrix(w0.type, 0, w0.cols(), w0.data);
  const uint8_t* end = static_cast<const uint8_t*>(w0.data);
  for (const TensorView& w : ws) {
    if (w.type != w0.type || w.cols() != w0.cols() || w.data != end) return nullptr;
    all.ne[1] += w.rows();
    end += w.bytes();
  }
  // Sized for hi tokens at once: the first (eager) pass of a decode graph grows it, never its
  // capture.
  auto* y = static_cast<float*>(m.concat.Get(sizeof(float) * static_cast<size_t>(hi * all.rows()), m.stream));
  float* const ys[1] = {y};
  m.Run(std::span<const TensorView>(&all, 1), x, n_tok, ys);
  return y;
}

const float* MatMulRunner::MatMulSlicedK(const TensorView& w, const float* x, int64_t n_tok, int* slices) {
  Impl& m = *impl_;
  static const int n_slices = static_cast<int>(EnvInt("HERD_CUDA_SLICED_K", 2));
  // HERD_CUDA_SLICED_K_MIN_COLS: the fewest inputs (8192: the down projection, not O's 4096).
  static const int64_t min_cols = std::max<int64_t>(EnvInt("HERD_CUDA_SLICED_K_MIN_COLS", 8192), 1024);
  const int64_t k = w.cols(), rows = w.rows();
  if ((n_slices != 2 && n_slices != 4) || (w.type != DType::kF16 && w.type != DType::kBF16) || k < min_cols ||
      k % (8 * n_slices) != 0 || m.path != MatMulPath::kAuto || m.UseGemv(w.type, n_tok) ||
      m.UseHalfTc(w, n_tok, /*grouped=*/false) || n_tok < internal::TunedGemm::kMinTok ||
      n_tok > internal::TunedGemm::kMaxTok) {
    return nullptr;
  }
  const Impl::Prepared pre = std::exchange(m.prepared, Impl::Prepared{});
  const bool bf16 = w.type == DType::kBF16;
  const void* xh =
      pre.half != nullptr && pre.bf16 == bf16 && pre.Matches(x, n_tok, k) ? pre.half : m.Convert(x, n_tok, k, bf16);
  // Sized for the most tokens at once: the first (eager) pass of a decode graph grows it, never its
  // capture.
  auto* y = static_cast<float*>(
      m.sliced.Get(sizeof(float) * static_cast<size_t>(n_slices * internal::TunedGemm::kMaxTok * rows), m.stream));
  const cudaDataType_t type = bf16 ? CUDA_R_16BF : CUDA_R_16F;
  m.blas_tail = true;
  m.blas.GemmSlicedK(w.data, type, rows, k, xh, n_tok, y, n_slices);
  *slices = n_slices;
  return y;
}

std::pair<int64_t, int64_t> MatMulRunner::ConcatTokRange() {
  static const std::pair<int64_t, int64_t> range = [] {
    const char* e = std::getenv("HERD_CUDA_CONCAT_TOK");
    long long lo = 65, hi = 128;
    if (e != nullptr && std::sscanf(e, "%lld:%lld", &lo, &hi) != 2) lo = hi = 0;
    return std::pair<int64_t, int64_t>(lo, hi);
  }();
  return range;
}

bool MatMulRunner::FusedRmsNorm(DType weight_type, float* x, const float* y, const float* w, float eps, int64_t n_tok,
                                int64_t n_in, float* out, bool pdl, int y_slices, int64_t y_slice_stride) {
  const internal::YSlices ys{y_slices, y_slice_stride};
  return impl_->Prepare(
      weight_type, out, n_tok, n_in,
      [&](DType f, void* buf, internal::QuantizedActivations* q) {
        return internal::RmsNormQuantize(f, x, y, w, eps, n_tok, n_in, out, buf, impl_->stream, q, pdl, ys);
      },
      [&](bool bf16, void* buf) {
        return internal::RmsNormToHalf(bf16, x, y, w, eps, n_tok, n_in, out, buf, impl_->stream, pdl, ys);
      });
}

bool MatMulRunner::FusedSwiGlu(DType weight_type, const float* gate, const float* up, float* out, int64_t n_tok,
                               int64_t n_in) {
  return impl_->Prepare(
      weight_type, out, n_tok, n_in,
      [&](DType f, void* buf, internal::QuantizedActivations* q) {
        return internal::SwiGluQuantize(f, gate, up, out, n_tok, n_in, buf, impl_->stream, q);
      },
      [&](bool bf16, void* buf) {
        return internal::SwiGluToHalf(bf16, gate, up, out, n_tok, n_in, buf, impl_->stream);
      });
}

bool MatMulRunner::FusedInt8Input(DType weight_type, const float* out, int64_t n_tok, int64_t n_in,
                                  const Int8Producer& produce) {
  if (impl_->InputKind(weight_type, n_tok) != Impl::Input::kInt8) return false;
  return impl_->Prepare(weight_type, out, n_tok, n_in, produce, [](bool, void*) { return false; });
}

bool MatMulRunner::FusedHalfInput(DType weight_type, const float* out, int64_t n_tok, int64_t n_in,
                                  const HalfProducer& produce) {
  const Impl::Input kind = impl_->InputKind(weight_type, n_tok);
  if (kind != Impl::Input::kHalf && kind != Impl::Input::kBf16) return false;
  return impl_->Prepare(
      weight_type, out, n_tok, n_in, [](DType, void*, internal::QuantizedActivations*) { return false; }, produce);
}

void MatMulRunner::DropPreparedInput() {
  impl_->prepared = Impl::Prepared{};
  impl_->blas_tail = false;
}

bool MatMulRunner::EndedInCublas() const { return impl_->blas_tail; }

bool MatMulRunner::MatMulSwiGlu(const TensorView& gate, const TensorView& up, const float* x, int64_t n_tok, float* out,
                                const TensorView* next) {
  Impl& m = *impl_;
  if (!IsFloat(gate.type) || gate.type != up.type || gate.rows() != up.rows() || gate.cols() != up.cols()) {
    return false;  // a prepared (quantized) x stays for the caller's MatMulShared
  }
  if (m.UseGemv(gate.type, n_tok)) {
    if (!internal::GemvFloatGlu(gate, up, x, n_tok, out, m.stream)) return false;
    m.prepared = Impl::Prepared{};
    m.blas_tail = false;
    return true;
  }
  static const bool glu_fused = EnvInt("HERD_CUDA_HALF_TC_GLU", 1) != 0;  // 0: MatMulShared + SwiGlu (A/B runs)
  if (n_tok == 0 || !glu_fused || !m.UseHalfTc(gate, n_tok, /*grouped=*/true) ||
      !m.UseHalfTc(up, n_tok, /*grouped=*/true)) {
    return false;
  }
  const Impl::Prepared pre = std::exchange(m.prepared, Impl::Prepared{});
  const int64_t n_in = gate.cols(), n_ff = gate.rows();
  const bool bf16 = gate.type == DType::kBF16;
  const void* xh = pre.half != nullptr && pre.bf16 == bf16 && pre.Matches(x, n_tok, n_in)
                       ? pre.half
                       : m.Convert(x, n_tok, n_in, bf16);
  // The next matmul's input, when it takes half / bfloat16 x (its own buffer: xh is still read).
  void* h_out = nullptr;
  bool h_bf16 = false;
  if (next != nullptr && next->cols() == n_ff) {
    const Impl::Input kind = m.InputKind(next->type, n_tok);
    if (kind == Impl::Input::kHalf || kind == Impl::Input::kBf16) {
      h_bf16 = kind == Impl::Input::kBf16;
      h_out = m.glu_half.Get(static_cast<size_t>(n_tok * n_ff) * 2, m.stream);
    }
  }
  m.blas_tail = false;
  internal::GemmHalfTcGlu(gate, up, xh, n_tok, out, h_out, h_bf16, m.stream);
  if (h_out != nullptr) m.prepared = Impl::Prepared{out, n_tok, n_ff, {}, h_out, h_bf16};
  return true;
}

void MatMulRunner::Reserve(int64_t n_tok, int64_t n_in) {
  Impl& m = *impl_;
  const auto gemv_tok = std::min(n_tok, std::max(kGemvMaxTokQuant, kGemvMaxTokFloat));
  for (DeviceBuffer& b : m.act) b.Get(internal::QuantizedActivationBytes(gemv_tok, n_in), m.stream);
  if (n_tok > std::min(kGemvMaxTokQuant, kGemvMaxTokFloat) ||
      (m.path != MatMulPath::kAuto && m.path != MatMulPath::kGemv)) {
    m.blas.Init();
    for (DeviceBuffer& b : m.half_x) b.Get(static_cast<size_t>(n_tok * n_in) * 2, m.stream);
    m.glu_half.Get(static_cast<size_t>(n_tok * n_in) * 2, m.stream);
    const int64_t rows =
        std::max<int64_t>(128, static_cast<int64_t>(kTileBytes / (static_cast<size_t>(n_in) * 2)) / 128 * 128);
    m.tile.Get(static_cast<size_t>(rows * n_in) * 2, m.stream);
    m.partials.Get(internal::GemmQuantTcScratchBytes(), m.stream);
  }
}

int64_t MatMulRunner::QuantTcMaxTok() {
  static const int64_t v = EnvInt("HERD_CUDA_QUANT_TC_MAX_TOK", kQuantTcMaxTokDefault);
  return v;
}

int64_t MatMulRunner::QuantTcMinElemsPerTok() {
  static const int64_t v = EnvInt("HERD_CUDA_QUANT_TC_MIN_ELEMS", kQuantTcMinElemsPerTokDefault);
  return v;
}

int64_t MatMulRunner::HalfTcMaxTok() {
  static const int64_t v = EnvInt("HERD_CUDA_HALF_TC_MAX_TOK", kHalfTcMaxTokDefault);
  return v;
}

int64_t MatMulRunner::HalfTcMaxTokGrouped() {
  static const int64_t v = EnvInt("HERD_CUDA_HALF_TC_GROUPED_MAX_TOK", kHalfTcMaxTokGroupedDefault);
  return v;
}

void MatMulRunner::set_path(MatMulPath path) { impl_->path = path; }

MatMulPath MatMulRunner::AutoPath(DType type, int64_t n_tok) {
  return n_tok <= (IsFloat(type) ? kGemvMaxTokFloat : kGemvMaxTokQuant) ? MatMulPath::kGemv : MatMulPath::kTensorCore;
}

}  // namespace herd::cuda
