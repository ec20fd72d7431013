// AMX-BF16 matmul for F16 and BF16 weights on many tokens (prompt processing), x86-64 only.
//
// Numerics: every operand is split into bf16 hi + lo (hi = round-to-nearest bf16, lo = bf16 of
// the remainder). F16 weights split exactly (11-bit significand <= 8 + 8 bits); BF16 weights have
// lo = 0. y = W_hi·X_hi + W_hi·X_lo + W_lo·X_hi with f32 accumulation in the tiles; the dropped
// W_lo·X_lo term and the rounding of X_lo are <= 2^-16 of sum_i |w_i x_i|, so results stay within
// the F16 kernels' test tolerance (1e-4 · sum |w x|). Cost: 3 (F16) or 2 (BF16) tile products.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "tensor/tensor.h"

namespace herd::cpu {

// From this many tokens on the driver (cpu::MatMul, MatMulQuantized with Isa::kAuto) sends
// F16/BF16 weights to the AMX path when AmxEnabled(). At 16 tokens packing the weights costs
// as much as the tile products and the AVX-512 FMA kernels are faster; at 24, AMX is ~1.2x faster.
inline constexpr int64_t kAmxMinTok = 24;

// True when this process may use AMX-BF16: cpuid AMX-TILE + AMX-BF16 + AVX512-BF16, XCR0 tile
// state, arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) granted, and a tile self-test (first run in a
// fork()ed child, so a fault there cannot kill this process) produced the exact result.
// HERD_AMX=0 (or off, false, no) in the environment turns it off. Decided once per process (the first call forks).
bool AmxEnabled();

// y[t * ldy + r] = sum_i w[r, i] * x[t * ldx + i] for t < n_tok, r < w.rows(), ldy = w.rows().
// w: F16 or BF16 [n_out, n_in]; x: [n_tok, ldx] f32 (ldx >= n_in). Requires AmxEnabled().
// Converts x once (n_tok rounded up to 16, ~4 bytes per element of scratch in the calling thread)
// and each block of 32 weight rows once (per-thread scratch, 128 bytes per column); splits the
// row blocks across the pool.
void MatMulAmx(const TensorView& w, const float* x, int64_t ldx, int64_t n_tok, float* y, ThreadPool& pool);

}  // namespace herd::cpu
