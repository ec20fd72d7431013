// Matmul driver: picks the kernel set, converts the activations, splits weight rows across
// the pool's threads. The per-type kernels and their register tiling live in the ISA files.
#include "kernels/cpu/matmul_cpu.h"

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "base/check.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kernel_set.h"
#include "kernels/cpu/matmul_amx.h"
#include "kernels/matmul.h"

namespace herd::cpu {
namespace {

using internal::ActFormat;
using internal::ActLayout;
using internal::KernelArgs;
using internal::KernelSet;
using internal::MatKernel;

const KernelSet* SetFor(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return internal::Avx512KernelSet();
    case Isa::kAvx2: return internal::Avx2KernelSet();
    case Isa::kNeon: return internal::NeonKernelSet();
    case Isa::kGeneric: return internal::GenericKernelSet();
    case Isa::kAuto: break;
  }
  return nullptr;
}

Isa DetectBest() {
  const char* env = std::getenv("HERD_ISA");
  if (env != nullptr && *env != '\0') {
    const std::string_view e(env);
    for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kNeon, Isa::kGeneric}) {
      if (e == IsaName(isa) || (isa == Isa::kAvx512 && e == "avx512")) {
        if (IsaAvailable(isa)) return isa;
      }
    }
  }
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kNeon}) {
    if (IsaAvailable(isa)) return isa;
  }
  return Isa::kGeneric;
}

// The kernel set that runs `type` for `isa`, falling back to the next narrower set.
const KernelSet* SetForType(Isa isa, DType type) {
  if (isa == Isa::kAuto) isa = BestIsa();
  Isa chain[3] = {isa, Isa::kGeneric, Isa::kGeneric};
  if (isa == Isa::kAvx512) chain[1] = Isa::kAvx2;
  for (Isa i : chain) {
    const KernelSet* set = SetFor(i);
    if (set == nullptr || !IsaAvailable(i)) continue;
    if (set->get(type) != nullptr) return set;
  }
  HERD_CHECK_MSG(false, "no matmul kernel for type %s", std::string(DTypeName(type)).c_str());
}

void Run(Isa isa, const TensorView& w, const uint8_t* act, const ActLayout& layout, int64_t n_tok, float* y,
         ThreadPool& pool) {
  KernelArgs a;
  a.type = w.type;
  a.w = static_cast<const uint8_t*>(w.data);
  a.w_stride = w.row_bytes();
  a.n_in = w.cols();
  a.act = act;
  a.layout = layout;
  a.n_tok = n_tok;
  a.y = y;
  a.ldy = w.rows();
  // Many tokens on F16/BF16 weights: AMX tiles when the process may use them (matmul_amx.h).
  // Only for kAuto, so tests that force a kernel set still run that set.
  if (isa == Isa::kAuto && layout.format == ActFormat::kF32 && n_tok >= kAmxMinTok &&
      (w.type == DType::kF16 || w.type == DType::kBF16) && BestIsa() == Isa::kAvx512 && AmxEnabled()) {
    MatMulAmx(w, reinterpret_cast<const float*>(act), static_cast<int64_t>(layout.stride / 4), n_tok, y, pool);
    return;
  }
  const KernelSet* set = SetForType(isa, w.type);
  const MatKernel kernel = set->get(w.type);
  const int grain = set->row_grain;
  const int64_t n_out = w.rows();
  if (n_out == 0 || n_tok == 0) return;
  // One thread per ~64 KiB of weights at least, so tiny matmuls skip the fork-join.
  const int64_t bytes = static_cast<int64_t>(a.w_stride) * n_out;
  if (pool.size() == 1 || bytes < (64 << 10)) {
    kernel(a, 0, n_out);
    return;
  }
  pool.ParallelFor(n_out, grain, [&](int64_t r0, int64_t r1) { kernel(a, r0, r1); });
}

}  // namespace

bool IsaAvailable(Isa isa) {
  const CpuFeatures& f = GetCpuFeatures();
  switch (isa) {
    case Isa::kAuto:
    case Isa::kGeneric: return true;
    case Isa::kAvx512: return internal::Avx512KernelSet() != nullptr && f.HasAvx512Vnni();
    case Isa::kAvx2: return internal::Avx2KernelSet() != nullptr && f.HasX86V3();
    case Isa::kNeon: return internal::NeonKernelSet() != nullptr && f.neon && f.dotprod;
  }
  return false;
}

Isa BestIsa() {
  static const Isa best = DetectBest();
  return best;
}

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAuto: return IsaName(BestIsa());
    case Isa::kGeneric: return "generic";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512-vnni";
    case Isa::kNeon: return "neon";
  }
  return "?";
}

bool ActivationsCompatible(DType a, DType b) { return internal::ActFormatFor(a) == internal::ActFormatFor(b); }

void QuantizedActivations::Free::operator()(uint8_t* p) const { std::free(p); }

void QuantizeActivations(DType weight_type, const float* x, int64_t n_tok, int64_t n_in, QuantizedActivations* out,
                         ThreadPool& pool, Isa isa) {
  const ActFormat format = internal::ActFormatFor(weight_type);
  // HERD_PACK_MIN_TOK=n overrides the kernel set's choice (for benchmarking the two paths).
  static const int pack_env = [] {
    const char* e = std::getenv("HERD_PACK_MIN_TOK");
    return e ? std::atoi(e) : 0;
  }();
  const int pack_min = pack_env > 0 ? pack_env : SetForType(isa, weight_type)->pack_min_tok(weight_type);
  const bool interleaved = format != ActFormat::kF32 && n_tok >= pack_min;
  const ActLayout layout = ActLayout::Make(format, n_in, interleaved);
  const size_t need = layout.stride * static_cast<size_t>(n_tok);
  if (need > out->capacity_) {
    const size_t cap = (need + 4095) & ~size_t{4095};
    out->data_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, cap)));
    HERD_CHECK(out->data_ != nullptr);
    out->capacity_ = cap;
  }
  out->layout_ = layout;
  out->n_tok_ = n_tok;
  out->weight_type_ = weight_type;
  uint8_t* dst = out->data_.get();
  if (n_tok * n_in < 16384 || pool.size() == 1) {
    internal::QuantizeActRows(layout, x, 0, n_tok, dst);
  } else {
    pool.ParallelFor(n_tok, 1, [&](int64_t t0, int64_t t1) { internal::QuantizeActRows(layout, x, t0, t1, dst); });
  }
}

void MatMulQuantized(const TensorView& w, const QuantizedActivations& x, float* y, ThreadPool& pool, Isa isa) {
  HERD_CHECK_MSG(ActivationsCompatible(x.weight_type(), w.type), "activations for %s used with %s weights",
                 std::string(DTypeName(x.weight_type())).c_str(), std::string(DTypeName(w.type)).c_str());
  HERD_CHECK_EQ(x.n_in(), w.cols());
  Run(isa, w, x.data(), x.layout(), x.n_tok(), y, pool);
}

void MatMulIsa(Isa isa, const TensorView& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool) {
  const ActFormat format = internal::ActFormatFor(w.type);
  if (format == ActFormat::kF32) {
    // The kernels read the float rows in place.
    ActLayout layout = ActLayout::Make(ActFormat::kF32, w.cols());
    layout.stride = static_cast<size_t>(w.cols()) * 4;
    Run(isa, w, reinterpret_cast<const uint8_t*>(x), layout, n_tok, y, pool);
    return;
  }
  thread_local QuantizedActivations scratch;
  QuantizeActivations(w.type, x, n_tok, w.cols(), &scratch, pool, isa);
  MatMulQuantized(w, scratch, y, pool, isa);
}

void MatMul(const TensorView& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool) {
  MatMulIsa(Isa::kAuto, w, x, n_tok, y, pool);
}

const char* MatMulIsaName() {
  if (BestIsa() == Isa::kAvx512 && AmxEnabled()) return "avx512-vnni+amx";
  return IsaName(BestIsa());
}

}  // namespace herd::cpu
