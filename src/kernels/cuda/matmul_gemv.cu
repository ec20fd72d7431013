// GEMV-style matmul kernels for quantized weights at small n_tok (decode): each weight row is read
// from device memory once per group of up to 8 tokens and reused for all of them. The work split
// and launch helpers are shared with the float GEMV (gemv_common.cuh, matmul_gemv_float.cu).
//
// Work split: a thread block of kWarps warps covers kWarps / wpr output rows; the `wpr` warps of
// one row (1, 2 or 4, chosen per call so that no warp has more than split_stages stages and
// the grid has enough warps) take interleaved parts of the row and add their sums through
// shared memory. Up to kMaxSegs weights sharing x (Q/K/V, gate/up) run as one launch over their
// concatenated rows — of one type, or of a type and its MixPartner (gemv_quant_kernel.cuh: the
// _M files' Q4_K Q/K with a Q6_K V). The quantized kernel's blocks may also loop over several row groups
// (GemvOptions::groups_per_block; 0 = persistent, one wave), prefetching the next row while
// computing one. Measured on H100 (bench/results/cuda-matmul-2026-11-22.md): one group per
// block is best except for many rows of a single step (n_in <= 2048, >= 8192 rows: two); on
// H200 Q8_0 takes persistent blocks (bench/results/cuda-session21-2026-11-28.md).
//
// Quantized weights: a row is cut into steps of 2048 values (whole blocks); each warp streams
// the steps of its part of the row through a ring of kStages shared-memory buffers (cp.async,
// 16-byte); in a step, lane L decodes its 64 weight codes (quant_dot.cuh: a quarter of a
// K-quant block or two 32-value blocks) once and multiplies them by dp4a with the int8
// activations of every token row (the reference's activation format, quant_act.cu), scaling
// the integer block sums exactly as ref::VecDot does. One-token launches of Q3_K, and of the
// other K-quants where rows are one step, read the weights in place instead (DirectFor below,
// gemv_quant_direct.cu: the same decode and sums, no shared-memory ring).
//
// Ordering (programmatic dependent launch, PDL): the activation quantization kernel and the
// quantized GEMV are launched with programmatic stream serialization, so each may start while
// the kernel before it still runs; each waits (griddepcontrol.wait) before reading or writing
// anything that kernel or earlier ones touch (the GEMV issues only its weight copies first).
// The GEMV kernels let their successor start early (griddepcontrol.launch_dependents at entry):
// a kernel launched after them with programmatic stream serialization must itself
// griddepcontrol.wait before touching y. Kernels launched normally are unaffected.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemv_quant_kernel.cuh"
#include "kernels/quants.h"

namespace herd::cuda::internal {
namespace {

using namespace gemv;  // NOLINT(google-build-using-namespace): the shared GEMV helpers

// Environment switches for A/B runs in the engine (initial values; SetGemvOptions overrides):
// HERD_CUDA_GEMV_PDL=0 / HERD_CUDA_GEMV_MIXED=0: the quantized GEMVs without programmatic
// dependent launch / one launch per weight type; HERD_CUDA_GEMV_GROUPS, _SPLIT_STAGES and
// _WANT_WARPS: GemvOptions::groups_per_block, split_stages and the grid's warp target.
bool EnvOn(const char* name) {
  const char* e = std::getenv(name);
  return e == nullptr || std::atoi(e) != 0;
}
int EnvIntOr(const char* name, int fallback) {
  const char* e = std::getenv(name);
  return e == nullptr ? fallback : std::atoi(e);
}

std::atomic<bool> g_pdl{EnvOn("HERD_CUDA_GEMV_PDL")};
std::atomic<int> g_groups_per_block{EnvIntOr("HERD_CUDA_GEMV_GROUPS", -1)};
std::atomic<int> g_split_stages{EnvIntOr("HERD_CUDA_GEMV_SPLIT_STAGES", kStages - 1)};
const int g_want_warps = std::max(1, EnvIntOr("HERD_CUDA_GEMV_WANT_WARPS", kWantWarps));
const bool g_wave_rule = EnvOn("HERD_CUDA_GEMV_WAVE_RULE");
std::atomic<int> g_direct{EnvIntOr("HERD_CUDA_GEMV_DIRECT", -1)};
// Whether a one-token launch of `bytes` of weights with rows of n_in values goes through
// GemvQuantRing (gemv_add_norm.cu, sm_90 only: one CTA per SM, the rows streamed by TMA bulk
// copies into a shared-memory ring): >= HERD_CUDA_RING_GEMV_MB (16) MiB of rows of >= 8192
// values, or >= HERD_CUDA_RING_GEMV_NARROW_MB (32) MiB of shorter rows; 0 turns either off
// (GemvOptions::quant_ring_mb / quant_ring_narrow_mb).
// H200 (bench/results/cuda-session31-2026-11-28.md; herd_cuda_gemv_norm_bench --ring 1, then
// tg128): it wins on the lm_heads (1B Q6_K 70.2 -> 58.6 us, 8B 132.0 -> 103.9 us), the 8B down
// projections (Q4_K 11.4 -> 11.2 us, Q6_K 17.6 -> 17.0) and 1B Q8_0's down (17 MiB, 6.70 ->
// 6.38); it loses on the O projections (8B Q4_K 9 MiB 4.38 -> 4.69 us; 8B Q8_0 17 MiB: faster
// alone, 6.54 -> 6.35 us, but tg128 428.7 -> 423.6 tok/s) and on 1B Q4_K / Q6_K down (9 / 13
// MiB; Q4_K 4.54 -> 4.80 us). No launch of shorter rows between 17 and 80 MiB was measured.
std::atomic<int64_t> g_ring_mb{EnvIntOr("HERD_CUDA_RING_GEMV_MB", 16)};
std::atomic<int64_t> g_ring_narrow_mb{EnvIntOr("HERD_CUDA_RING_GEMV_NARROW_MB", 32)};
bool RingFor(int64_t bytes, int64_t n_in) {
  const int64_t mb = (n_in >= 8192 ? g_ring_mb : g_ring_narrow_mb).load(std::memory_order_relaxed);
  return mb > 0 && bytes >= (mb << 20);
}

// Whether a one-token launch of t0 weights (with their partner) of n_steps steps per row reads
// them in place (gemv_quant_direct.cu): by default for Q3_K, and for the other K-quants where
// rows are a single step (n_in <= 2048). H200 tg128, staged -> default: 1B Q4_K_M 2,008 ->
// 2,094, Q6_K 1,533 -> 1,712, Q3_K_M 1,783 -> 1,948; 8B Q3_K_M 417.3 -> 438.9; 8B Q2_K
// loses with Q2_K rows of several steps in place (526.9 -> 519.1), so they stay staged.
bool DirectFor(DType t0, int n_steps) {
  const int d = g_direct.load(std::memory_order_relaxed);
  if (d == 0 || Traits(t0).block_size != 256) return false;  // K-quant weights only
  return d > 0 || t0 == DType::kQ3_K || n_steps == 1;
}

// Launches the weights ws[order[k]] (those of t0 first, then those of t1; t1 == t0: one type)
// in launches of up to kMaxSegs weights.
void LaunchGroup(DType t0, DType t1, std::span<const TensorView> ws, std::span<float* const> ys,
                 std::span<const size_t> order, const QuantizedActivations& x, int64_t n_tok, cudaStream_t stream) {
  const int64_t n_in = ws[order[0]].cols();
  const int64_t block = Traits(t0).block_size;
  HERD_CHECK(n_in % block == 0);
  for (size_t first = 0; first < order.size(); first += kMaxSegs) {
    const size_t n = std::min<size_t>(kMaxSegs, order.size() - first);
    TensorView cw[kMaxSegs];
    float* cy[kMaxSegs] = {};
    for (size_t k = 0; k < n; ++k) cw[k] = ws[order[first + k]], cy[k] = ys[order[first + k]];
    QuantArgs a{};
    MakeSegs({cw, n}, {cy, n}, 0, n, &a.segs);
    if (a.segs.total_rows == 0) continue;
    a.t1_row0 = INT_MAX;
    a.aligned = true;
    for (size_t k = 0; k < n; ++k) {
      HERD_CHECK(cw[k].cols() == n_in);
      if (cw[k].type != t0 && a.t1_row0 == INT_MAX) a.t1_row0 = a.segs.row0[k];
      a.aligned = a.aligned && Aligned16(cw[k].data) && cw[k].row_bytes() % 16 == 0;
    }
    // A chunk of t1 weights only is a one-type launch of t1.
    const DType c0 = a.t1_row0 == 0 ? t1 : t0;
    const bool mixed = c0 != t1 && a.t1_row0 != INT_MAX;
    a.row_bytes = static_cast<int64_t>(Traits(c0).type_size) * (n_in / block);
    a.row_bytes1 = static_cast<int64_t>(Traits(t1).type_size) * (n_in / block);
    if (!mixed) a.t1_row0 = INT_MAX;
    a.blocks_per_row = static_cast<int>(n_in / block);
    a.n_steps = static_cast<int>((n_in + kStepValues - 1) / kStepValues);
    a.wpr = WarpsPerRow(a.segs.total_rows, a.n_steps, g_split_stages.load(std::memory_order_relaxed), g_want_warps);
    const int rows_per_block = kWarps / a.wpr;
    const int blocks = (a.segs.total_rows + rows_per_block - 1) / rows_per_block;
    int groups_per_block = g_groups_per_block.load(std::memory_order_relaxed);
    if (groups_per_block < 0) {
      groups_per_block = a.n_steps == 1 && a.segs.total_rows >= 8192 ? 2 : 1;
      // Q8_0 on H200: persistent blocks (tg128 8B Q8_0 363.9 -> 375.9, 1B Q8_0 1,707 -> 1,735 tok/s;
      // 8B Q4_K_M, whose launches are K-quants, loses with them: 497 -> 469).
      if (c0 == DType::kQ8_0 && !mixed && HighBandwidthDevice()) groups_per_block = 0;
    }
    if (n_tok == 1 && a.aligned) {
      int64_t bytes = 0;
      for (size_t k = 0; k < n; ++k) bytes += cw[k].rows() * cw[k].row_bytes();
      if (RingFor(bytes, n_in) && GemvQuantRing({cw, n}, {cy, n}, x, stream)) continue;
    }
    if (n_tok == 1 && a.aligned && DirectFor(c0, a.n_steps)) {
      QuantArgs ad = a;
      ad.n_tok = 1;
      ad.x = x;
      ad.wpr = WarpsPerRow(a.segs.total_rows, a.n_steps, kDirectStepsPerWarp, g_want_warps);
      const int rows_per_block_d = kWarps / ad.wpr;
      const int blocks_d = (a.segs.total_rows + rows_per_block_d - 1) / rows_per_block_d;
      if (LaunchGemvQuantDirect(c0, mixed ? t1 : c0, ad, blocks_d, GemvProgrammaticLaunch(), stream)) continue;
    }
    for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
      QuantArgs at = a;
      at.n_tok = static_cast<int>(std::min<int64_t>(kMaxTok, n_tok - t0));
      at.x = x;
      at.x.q += t0 * x.q_stride;
      at.x.d += t0 * x.d_stride;
      at.x.s += t0 * x.d_stride;
      at.x.sums += t0 * x.g_stride;
      for (int k = 0; k < kMaxSegs; ++k)
        if (at.segs.y[k] != nullptr) at.segs.y[k] += t0 * at.segs.n_out[k];
      const bool pdl = GemvProgrammaticLaunch();
      if (mixed) {
        HERD_CHECK(LaunchGemvQuantMixed(c0, at, blocks, groups_per_block, pdl, stream));
      } else {
        const bool ok =
            DispatchQuant(c0, [&]<DType T>() { LaunchGemvQuant<T, T>(at, blocks, groups_per_block, pdl, stream); });
        HERD_CHECK_MSG(ok, "GemvQuant: %s is not a quantized weight type", DTypeName(c0).data());
      }
    }
  }
}

}  // namespace

bool GemvProgrammaticLaunch() { return g_pdl.load(std::memory_order_relaxed); }

namespace gemv {
bool GemvWaveRule() { return g_wave_rule; }
}  // namespace gemv

void SetGemvOptions(const GemvOptions& o) {
  g_pdl.store(o.pdl);
  g_groups_per_block.store(o.groups_per_block);
  g_split_stages.store(o.split_stages);
  g_direct.store(o.quant_direct);
  g_ring_mb.store(o.quant_ring_mb);
  g_ring_narrow_mb.store(o.quant_ring_narrow_mb);
  gemv::SetFloatGemvOptions(o);
}

void GemvQuant(std::span<const TensorView> ws, std::span<float* const> ys, const QuantizedActivations& x, int64_t n_tok,
               cudaStream_t stream) {
  if (ws.empty() || n_tok == 0) return;
  constexpr size_t kMaxWeights = 16;
  HERD_CHECK(ws.size() == ys.size() && ws.size() <= kMaxWeights);
  static const bool mix = EnvOn("HERD_CUDA_GEMV_MIXED");
  bool done[kMaxWeights] = {};
  for (size_t i = 0; i < ws.size(); ++i) {
    if (done[i]) continue;
    const DType t = ws[i].type;
    HERD_CHECK_MSG(x.format == ref::VecDotType(t), "GemvQuant: %s weights need %s activations, got %s",
                   DTypeName(t).data(), DTypeName(ref::VecDotType(t)).data(), DTypeName(x.format).data());
    // The pair (t0, t1) this type launches in: with its partner, or as the partner of another
    // type, when a weight of that type is still to launch (a partner has the same format).
    DType t0 = t, t1 = t;
    for (size_t j = i + 1; mix && t0 == t1 && j < ws.size(); ++j) {
      const DType u = ws[j].type;
      if (done[j] || u == t) continue;
      if (gemv::MixPartner(t) == u)
        t1 = u;
      else if (gemv::MixPartner(u) == t)
        t0 = u;
    }
    size_t order[kMaxWeights];
    size_t n = 0;
    for (const DType g : {t0, t1}) {
      for (size_t j = i; j < ws.size(); ++j) {
        if (!done[j] && ws[j].type == g) {
          order[n++] = j;
          done[j] = true;
        }
      }
    }
    LaunchGroup(t0, t1, ws, ys, {order, n}, x, n_tok, stream);
  }
}

}  // namespace herd::cuda::internal
