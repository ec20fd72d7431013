// Internal interface between the matmul driver (matmul_cpu.cc) and the per-ISA kernel sets
// (matmul_avx2.cc, matmul_avx512.cc, matmul_neon.cc, matmul_generic.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/act_quant.h"
#include "tensor/dtype.h"

namespace herd::cpu::internal {

struct KernelArgs {
  DType type;
  const uint8_t* w;    // row 0 of the weights
  size_t w_stride;     // bytes per weight row
  int64_t w_row0 = 0;  // row index stored at `w` (kernels working on a packed copy of a row block)
  int64_t n_in;
  const uint8_t* act;  // token row 0 of the activations (layout.stride bytes per row)
  ActLayout layout;
  int64_t n_tok;
  float* y;  // y[t * ldy + r]
  // Quantized kernels only: the 256-element units [u0, u1) of each row to use (u1 < 0: all),
  // and whether to add to y instead of storing (a row computed in slices).
  int64_t u0 = 0;
  int64_t u1 = -1;
  bool accumulate = false;
  int64_t w_u0 = 0;  // unit index stored first in each row at `w` (packed column slices)
  int64_t ldy;
};

// Computes y for weight rows [r0, r1) and all n_tok tokens. Called concurrently by the
// pool's threads on disjoint row ranges; must not write outside them.
using MatKernel = void (*)(const KernelArgs& args, int64_t r0, int64_t r1);

struct KernelSet {
  const char* name;
  MatKernel (*get)(DType type);  // nullptr: type not covered by this set
  int row_grain;                 // preferred multiple of rows per thread
  // From this many tokens on, activations for weights of `type` are interleaved (ActLayout).
  int (*pack_min_tok)(DType type);
};

const KernelSet* Avx512KernelSet();   // nullptr when not compiled in (non-x86)
const KernelSet* Avx2KernelSet();     // nullptr when not compiled in (non-x86)
const KernelSet* NeonKernelSet();     // nullptr when not compiled in (non-aarch64)
const KernelSet* GenericKernelSet();  // always available (reference VecDot per element)

}  // namespace herd::cpu::internal
