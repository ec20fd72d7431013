// CPU matmul API beyond kernels/matmul.h: explicit kernel-set selection (tests, benchmarks)
// and activations quantized once and reused by several matmuls that share an input
// (Q/K/V projections, gate/up).
//
//   cpu::QuantizedActivations xq;
//   cpu::QuantizeActivations(wq.type, x, n_tok, n_in, &xq, pool);   // once
//   cpu::MatMulQuantized(wq, xq, q_out, pool);                       // any weight whose
//   cpu::MatMulQuantized(wk, xq, k_out, pool);                       // type shares the format
//
// Weight types sharing one activation format (ActivationsCompatible): {F32, F16, BF16},
// {Q4_0, Q5_0, Q8_0}, {Q4_1, Q5_1}, {Q2_K, Q3_K, Q4_K, Q5_K, Q6_K}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/thread_pool.h"
#include "kernels/cpu/act_quant.h"
#include "tensor/tensor.h"

namespace herd::cpu {

enum class Isa { kAuto, kGeneric, kAvx2, kAvx512, kNeon };

// Whether this CPU and build can run the kernel set (kAuto and kGeneric: always).
bool IsaAvailable(Isa isa);
// The set kAuto picks: AVX-512 (F, BW, VL, DQ, VNNI) > AVX2 > NEON > generic. HERD_ISA=avx2
// (or generic, avx512, neon) in the environment overrides it when that set is available.
Isa BestIsa();
const char* IsaName(Isa isa);  // "avx512-vnni", "avx2", "neon", "generic"

// True when activations quantized for weight type `a` can be used with weights of type `b`.
bool ActivationsCompatible(DType a, DType b);

// Activations of n_tok tokens converted for one activation format. Reusable: the buffer grows
// and is kept between calls. ~1.1 bytes per element for quantized formats.
class QuantizedActivations {
 public:
  int64_t n_tok() const { return n_tok_; }
  int64_t n_in() const { return layout_.n_in; }
  DType weight_type() const { return weight_type_; }
  const internal::ActLayout& layout() const { return layout_; }
  const uint8_t* data() const { return data_.get(); }

 private:
  friend void QuantizeActivations(DType, const float*, int64_t, int64_t, QuantizedActivations*, ThreadPool&, Isa);
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t[], Free> data_;
  size_t capacity_ = 0;
  int64_t n_tok_ = 0;
  DType weight_type_ = DType::kF32;
  internal::ActLayout layout_;
};

// x: [n_tok, n_in] f32 -> *out in the format weights of `weight_type` use. Parallel over pool.
// The layout depends on n_tok and on the kernel set `isa` resolves to (many tokens get the
// interleaved layout of the packed kernels); MatMulQuantized accepts either.
void QuantizeActivations(DType weight_type, const float* x, int64_t n_tok, int64_t n_in, QuantizedActivations* out,
                         ThreadPool& pool, Isa isa = Isa::kAuto);

// y[n_tok, n_out] = x · wᵀ with x already converted; requires
// ActivationsCompatible(x.weight_type(), w.type) and x.n_in() == w.cols().
void MatMulQuantized(const TensorView& w, const QuantizedActivations& x, float* y, ThreadPool& pool,
                     Isa isa = Isa::kAuto);

// cpu::MatMul (kernels/matmul.h) with an explicit kernel set (tests force each ISA).
void MatMulIsa(Isa isa, const TensorView& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool);

}  // namespace herd::cpu
