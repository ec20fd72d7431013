// GemvQuantAddNorm (matmul_internal.h): the one-token quantized GEMV whose input is
// RmsNorm(x + y) * norm_w, with the residual add, the norm and the Q8_K quantization done by
// every CTA of the GEMV itself instead of a norm kernel before it (at one token that kernel is
// ~2.5 us of dependent-launch latency on H100; computing it redundantly costs each CTA two
// 16 KB reads from L2). Q8_0 weights take Q8_0 activations instead (the backend takes that path
// for rows of at least HERD_CUDA_NORM_IN_GEMV_Q8_0 = 4096 values: +1.0% tg128 on H200 at 8B).
//
// Structure (warp-specialized, one CTA per SM): the CTA owns a contiguous range of the launch's
// rows; its last warp (the producer) streams them into a ring of shared-memory stages with
// 16-byte cp.async (or, for wide rows, one cp.async.bulk per stage: below), a chunk of whole rows
// per stage, each stage completing on an mbarrier; the producer starts before the kernel waits for its predecessor
// (weights never change), so the ring fills while the consumers compute the norm. The consumer
// warps take (row, step) items of each chunk round-robin; their count is a multiple of the
// steps per row, so warp w always takes step w % n_steps and holds that step's activations in
// registers (quant_dot.cuh's lane layout, loaded from the Q8_K row the CTA quantized into shared
// memory). Per-item dot products are GemvQuantKernel's; partial sums go to shared memory and are
// summed per row in step order at the end. x += y is stored by the CTA that reads x last (a
// device counter), so no CTA reads a half-updated x.
//
// Measured (H100, herd_cuda_gemv_norm_bench, us per norm + GEMV pair, an earlier ring shape): 8B
// gate/up 4096 -> 2 x 14336 Q4_K 27.1 (norm kernel + GemvQuant) -> 24.2; 1B 2048 -> 2 x 8192
// 11.1 -> 9.1; the Q/K/V launches (4096 -> 6144 Q4_K + Q6_K) 10.5 -> 10.8 alone, yet in the model
// 8B Q4_K_M decodes 449.8 -> 473.9 tok/s with them (likely: their weights stream while the down
// GEMV before them drains; bench/results/cuda-session17-2026-11-28.md); 1B (2048-value rows)
// loses 2.6%, so the backend takes Q/K/V rows of at least 4096 values (HERD_CUDA_NORM_IN_QKV).
// Where a 1B gate/up launch's time goes (H200, phase marks of gemv_add_norm_diag.cuh, session
// 29): ~0.8 us from entry to the dependency release, ~2.3 us of norm, then ~1 us per chunk of
// dot products even where the whole share of rows was in the ring before the release: the
// consumer loop is issue-bound (~105 SASS instructions an item, 16 warps). Dropping the loop's
// integer divisions (stage, parity and first item kept incrementally): tg128 1B Q4_K_M 2,135 ->
// 2,200 tok/s, 8B Q4_K_M 497 -> 525; 1B Q6_K 1,768 -> 1,743 (its instance spills more).
// The producer (session 30, H200): 16-byte cp.async by its 32 lanes, or one cp.async.bulk per
// chunk by the TMA unit. Bulk streams faster (1B: the CTA's share landed 2.6 us after the release
// instead of 5.4) but its burst of shared-memory writes slows the consumers' norm (quantize
// phase 1.3 -> 2.1 us), which at 1B is the launch's critical path. tg128: 8B Q4_K_M 528.6 ->
// 555.7 with bulk, 558.3 when only the first chunk is issued before the dependency wait (8B
// Q8_0 390.1 -> 414.0, 8B Q6_K 381.8 -> 413.4); 1B Q4_K_M 2,185 -> 2,110, Q5_K_M 2,013 ->
// 1,990, Q6_K 1,778 -> 1,773.
// So rows of >= 4096 values take bulk, narrower rows the lanes' cp.async.
// Rows of one step (<= 2048 values) keep every lane's partial sum of an item in shared memory and
// sum them per row at the end (kLane), instead of a 5-shuffle reduction per item: tg128 on H200
// (session 30) 1B Q4_K_M 2,181 -> 2,201, Q6_K 1,776 -> 1,791, Q5_K_M 2,013 -> 2,023. Wider rows
// keep the shuffles: the partials' shared memory would cost 8B a ring stage (-1.2% measured).
// The same kernel without the norm (kQuantIn instances) is GemvQuantRing: an already quantized
// row, each consumer warp loading its step of it from global memory; the backend sends it the
// large one-token launches (the lm_heads, 8B's down projections: RingFor in matmul_gemv.cu).
// Switches (read once): HERD_CUDA_NORM_GEMV_WARPS (consumer warps), _ITEMS (items per warp in a
// chunk), _STAGES (ring depth), each also per launch width (TuningFor). They are wishes:
// PlanAddNormRing (gemv_add_norm_plan.h) drops stages, then items, where 200 KB do not hold them.
#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemv_add_norm_kernel.cuh"
#include "kernels/cuda/gemv_add_norm_plan.h"
#include "kernels/quants.h"

namespace herd::cuda::internal::gemv {
namespace {

static_assert(kAddNormStepValues == kStepValues, "PlanAddNormRing sizes the activation row with it");
constexpr int kMaxSmem = 200 * 1024;

int EnvInt(const char* name, int fallback) {
  const char* e = std::getenv(name);
  return e == nullptr ? fallback : std::atoi(e);
}
// The ring's shape for a launch of n weights (2: gate/up, 3: Q/K/V): consumer warps, stages,
// (row, step) items per warp in a chunk. HERD_CUDA_NORM_GEMV_{WARPS,STAGES,ITEMS} set all; the
// same name with the suffix _N sets the launches of N weights. Defaults: 16 warps; Q/K/V 3 stages
// and 1 item (H100, bench/results/cuda-session17-*: 8B Q4_K_M 463 -> 472 tok/s against 4 x 2);
// gate/up 3 stages and 3 items (H200, session 30: tg128 1B Q4_K_M 2,163 -> 2,193, 8B Q4_K_M
// 528.8 -> 535.3 against 4 x 2); a single weight 4 stages and 2 items.
struct Tuning {
  int warps, stages, items;
};
Tuning TuningFor(size_t n_weights) {
  static const auto table = [] {
    std::array<Tuning, kMaxSegs + 1> t{};
    for (size_t n = 0; n < t.size(); ++n) {
      const auto get = [n](const std::string& name, int fallback) {
        return EnvInt((name + "_" + std::to_string(n)).c_str(), EnvInt(name.c_str(), fallback));
      };
      t[n].warps = std::clamp(get("HERD_CUDA_NORM_GEMV_WARPS", 16), 1, 31);
      t[n].stages = std::clamp(get("HERD_CUDA_NORM_GEMV_STAGES", n == 2 || n == 3 ? 3 : 4), 2, kMaxStages);
      t[n].items = std::clamp(get("HERD_CUDA_NORM_GEMV_ITEMS", n == 3 ? 1 : n == 2 ? 3 : 2), 1, 64);
    }
    return t;
  }();
  return table[std::min(n_weights, table.size() - 1)];
}

// The ring shape of GemvQuantRing launches: HERD_CUDA_RING_GEMV_{WARPS,STAGES,ITEMS} (16, 3, 3;
// at most 16 consumer warps, kRingMaxThreads). H200 1B Q4_K_M tg128 with the lm_head in the ring:
// 2 or 4 stages, 4 items, 12 warps within 0.2%; 2 items -0.6%; EARLY=2 -0.4%; BULK=0 -3%.
Tuning RingTuning() {
  static const Tuning t{std::clamp(EnvInt("HERD_CUDA_RING_GEMV_WARPS", 16), 1, kRingMaxThreads / 32 - 1),
                        std::clamp(EnvInt("HERD_CUDA_RING_GEMV_STAGES", 3), 2, kMaxStages),
                        std::clamp(EnvInt("HERD_CUDA_RING_GEMV_ITEMS", 3), 1, 64)};
  return t;
}

// Launches the kernel with the ring PlanAddNormRing chooses (na's producer fields set by the
// caller); false where none fits.
template <DType T0, DType T1, bool kQuantIn>
bool Launch(const QuantArgs& a, AddNormArgs na, const Tuning& tune, cudaStream_t stream) {
  static const int sms = [] {
    int dev = 0, n = 0;
    HERD_CUDA_CHECK(cudaGetDevice(&dev));
    HERD_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  AddNormShape shape;
  shape.n_steps = a.n_steps;
  shape.row_bytes = T0 != T1 ? std::max(a.row_bytes, a.row_bytes1) : a.row_bytes;
  shape.total_rows = a.segs.total_rows;
  shape.sms = sms;
  shape.warps = tune.warps, shape.stages = tune.stages, shape.items = tune.items;
  shape.max_smem = kMaxSmem, shape.smem_pad = kSmemPad;
  shape.norm = !kQuantIn;
  // Lane partials for rows of one step (HERD_CUDA_NORM_GEMV_LANE=0: never): see the file comment.
  static const bool lane_ok = EnvInt("HERD_CUDA_NORM_GEMV_LANE", 1) != 0;
  // The partials hold every row of the CTA until the end: long launches (a 1B lm_head's 972 rows
  // a CTA: 128 KB) keep the shuffles rather than shrink the ring.
  const int ctas = std::max(1, std::min(shape.total_rows, sms));  // PlanAddNormRing's grid
  const int64_t rows_per_cta = (shape.total_rows + ctas - 1) / ctas;
  const bool lane = lane_ok && a.n_steps == 1 && (rows_per_cta + 1) * kLanePad * 4 <= 32 * 1024;
  shape.partial_floats = lane ? kLanePad : 1;
  AddNormPlan plan;
  if (!PlanAddNormRing(shape, &plan)) return false;
  na.q = a;
  na.rows = plan.rows;
  na.stage_bytes = plan.stage_bytes;
  na.stages = plan.stages;
  na.partial_bytes = plan.partial_bytes;
  const int grid = plan.grid, consumers = plan.consumers;
  const int64_t smem = plan.smem;
  na.diag_slot = DiagSlot();
  const auto run = [&](auto kernel, std::atomic<uint64_t>& raised) {
    RaiseDynamicSmem(kernel, kMaxSmem, raised);
    LaunchPdlIf(GemvProgrammaticLaunch(), kernel, dim3(static_cast<unsigned>(grid)),
                dim3(static_cast<unsigned>(32 * (consumers + 1))), static_cast<size_t>(smem), stream, na);
  };
  static std::atomic<uint64_t> raised_lane{0}, raised_shuffle{0};
  if (lane) {
    run(GemvAddNormKernel<T0, T1, true, kQuantIn>, raised_lane);
  } else {
    run(GemvAddNormKernel<T0, T1, false, kQuantIn>, raised_shuffle);
  }
  return true;
}

// The launch's weights as QuantArgs (a->x not set) and the type of its second part (t1 == t0:
// one type); false where the kernel does not apply: more than kMaxSegs weights, other than
// 256-value blocks or Q8_0, rows not 256-value multiples, not 16-byte aligned, of different
// lengths, or of two types other than a MixPartner pair (t0's rows first).
bool MakeArgs(std::span<const TensorView> ws, std::span<float* const> ys, QuantArgs* a, DType* t1) {
  if (ws.empty() || ws.size() > static_cast<size_t>(kMaxSegs) || ws.size() != ys.size() || !DeviceIsSm90())
    return false;
  const DType t0 = ws[0].type;
  const int64_t n_in = ws[0].cols();
  const int64_t block = Traits(t0).block_size;
  if ((block != 256 && t0 != DType::kQ8_0) || n_in % 256 != 0) return false;
  *t1 = t0;
  *a = QuantArgs{};
  MakeSegs(ws, ys, 0, ws.size(), &a->segs);
  a->t1_row0 = INT_MAX;
  for (size_t k = 0; k < ws.size(); ++k) {
    if (ws[k].cols() != n_in) return false;
    if (ws[k].type != t0) {
      if (MixPartner(t0) != ws[k].type) return false;
      *t1 = ws[k].type;
      if (a->t1_row0 == INT_MAX) a->t1_row0 = a->segs.row0[k];
    } else if (a->t1_row0 != INT_MAX) {
      return false;  // rows of t0 after rows of t1
    }
    if (!Aligned16(ws[k].data) || ws[k].row_bytes() % 16 != 0) return false;
  }
  a->aligned = true;
  a->row_bytes = static_cast<int64_t>(Traits(t0).type_size) * (n_in / block);
  a->row_bytes1 = static_cast<int64_t>(Traits(*t1).type_size) * (n_in / block);  // partners: 256-value blocks too
  a->blocks_per_row = static_cast<int>(n_in / block);
  a->n_steps = static_cast<int>((n_in + kStepValues - 1) / kStepValues);
  a->n_tok = 1;
  return true;
}

template <bool kQuantIn>
bool Dispatch(DType t0, DType t1, const QuantArgs& a, const AddNormArgs& na, const Tuning& tune, cudaStream_t stream) {
  if (t1 == t0) {
    bool launched = false;
    DispatchQuant(t0, [&]<DType T>() {
      if constexpr (QBlock<T>::kValues == 256 || T == DType::kQ8_0)
        launched = Launch<T, T, kQuantIn>(a, na, tune, stream);
    });
    return launched;
  }
  switch (t0) {
    case DType::kQ4_K: return Launch<DType::kQ4_K, MixPartner(DType::kQ4_K), kQuantIn>(a, na, tune, stream);
    case DType::kQ5_K: return Launch<DType::kQ5_K, MixPartner(DType::kQ5_K), kQuantIn>(a, na, tune, stream);
    case DType::kQ3_K: return Launch<DType::kQ3_K, MixPartner(DType::kQ3_K), kQuantIn>(a, na, tune, stream);
    case DType::kQ2_K: return Launch<DType::kQ2_K, MixPartner(DType::kQ2_K), kQuantIn>(a, na, tune, stream);
    default: return false;
  }
}

}  // namespace
}  // namespace herd::cuda::internal::gemv

namespace herd::cuda::internal {

bool GemvQuantAddNorm(std::span<const TensorView> ws, std::span<float* const> ys, float* x, const float* y,
                      const float* norm_w, float eps, int* counter, cudaStream_t stream) {
  using namespace gemv;  // NOLINT(google-build-using-namespace)
  QuantArgs a;
  DType t1;
  if (!MakeArgs(ws, ys, &a, &t1)) return false;
  if (!Aligned16(x) || !Aligned16(y) || !Aligned16(norm_w)) return false;
  AddNormArgs na{};
  na.x = x, na.y = y, na.w = norm_w, na.eps = eps, na.counter = counter;
  // The bulk producer for rows of at least HERD_CUDA_NORM_GEMV_BULK values (0: never), issuing
  // HERD_CUDA_NORM_GEMV_BULK_EARLY chunks before the dependency wait (see the file comment).
  static const int bulk_min = EnvInt("HERD_CUDA_NORM_GEMV_BULK", 4096);
  static const int bulk_early = std::max(0, EnvInt("HERD_CUDA_NORM_GEMV_BULK_EARLY", 1));
  na.bulk = bulk_min > 0 && ws[0].cols() >= bulk_min ? 1 : 0;
  na.bulk_early = bulk_early;
  return Dispatch<false>(ws[0].type, t1, a, na, TuningFor(ws.size()), stream);
}

bool GemvQuantRing(std::span<const TensorView> ws, std::span<float* const> ys, const QuantizedActivations& x,
                   cudaStream_t stream) {
  using namespace gemv;  // NOLINT(google-build-using-namespace)
  QuantArgs a;
  DType t1;
  if (!MakeArgs(ws, ys, &a, &t1)) return false;
  const DType t0 = ws[0].type;
  if (x.format != ref::VecDotType(t0)) return false;
  a.x = x;
  AddNormArgs na{};
  // The producer: bulk copies unless HERD_CUDA_RING_GEMV_BULK=0 (no norm whose shared-memory work
  // they would slow), HERD_CUDA_RING_GEMV_EARLY (1) of them before the dependency wait.
  static const bool bulk = EnvInt("HERD_CUDA_RING_GEMV_BULK", 1) != 0;
  static const int early = std::max(0, EnvInt("HERD_CUDA_RING_GEMV_EARLY", 1));
  na.bulk = bulk ? 1 : 0;
  na.bulk_early = early;
  return Dispatch<true>(t0, t1, a, na, RingTuning(), stream);
}

}  // namespace herd::cuda::internal
