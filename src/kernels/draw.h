// Drawing a token from a full row of logits (sampling on the device): the semantics of
// herd::Sampler for a draw without top-k or typical-p (logit bias and penalties are applied to
// the row first: PenalizeRow) — nucleus (top_p)
// in "more likely first" order (higher logit, then lower id), then min_p, then the temperature,
// then the inverse CDF in id order at a uniform u the caller drew. Only the chosen id leaves the
// device; Backend::DrawRows runs it per logit row.
//
// Sums that decide (nucleus mass, the CDF) are taken in fixed point (probabilities times
// 2^kDrawFracBits, truncated, in uint64) so they do not depend on summation order: every
// backend gets the same id from the same row. They match the Sampler's double sums except where
// u or top_p falls within ~1e-15 of a boundary.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define HERD_DRAW_HD __host__ __device__
#else
#define HERD_DRAW_HD
#endif

namespace herd {

// One row's draw. temperature 0: greedy (the first index of the largest value, as ArgMaxRows).
// Otherwise temperature > 0, top_p in (0, 1] (1: off), min_p in [0, 1] (0: off), u in [0, 1).
struct RowDraw {
  float temperature = 0.0f;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float reserved = 0.0f;  // keeps u 8-byte aligned
  double u = 0.0;
};

constexpr int kDrawFracBits = 60;

// Logit bias and repetition penalties on the device (herd::Sampler's ApplyLogitBias then
// ApplyPenalties, before the top-k or the draw): row r's entries [begin, end) of a flat list each
// name a token (distinct within a row) and what happens to its logit: the request's bias is
// added (kBiased), then the penalty (kPenalized): with repeat != 1 the logit is divided
// (positive) or multiplied (not) by it, then it loses `subtrahend`.
struct RowPenalty {
  float repeat = 1.0f;
  int32_t begin = 0, end = 0;
  int32_t reserved = 0;
};
struct PenaltyEntry {
  static constexpr uint32_t kBiased = 1, kPenalized = 2;
  int32_t id = 0;
  float subtrahend = 0.0f;
  float bias = 0.0f;  // finite or -inf (bans the token)
  uint32_t flags = kPenalized;
};
// The penalized logit, rounded per operation as the Sampler computes it.
HERD_DRAW_HD inline float PenalizeLogit(float l, float repeat, float subtrahend) {
  if (repeat != 1.0f) l = l > 0.0f ? l / repeat : l * repeat;
  return l - subtrahend;
}
// The logit after entry e (bias, then penalty), rounded per operation as the Sampler computes it.
HERD_DRAW_HD inline float AdjustLogit(float l, float repeat, const PenaltyEntry& e) {
  if ((e.flags & PenaltyEntry::kBiased) != 0) l += e.bias;
  if ((e.flags & PenaltyEntry::kPenalized) != 0) l = PenalizeLogit(l, repeat, e.subtrahend);
  return l;
}

// Order-preserving map of a float (not NaN) to uint32: a > b <=> DrawKey(a) > DrawKey(b).
HERD_DRAW_HD inline uint32_t DrawKey(uint32_t bits) { return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u; }

// A probability in fixed point: p * 2^kDrawFracBits with the fraction dropped, for a float p in
// [0, 2) — what static_cast<uint64_t>(double(p) * 2^60) gives (exact in double), computed from
// p's bits in integer arithmetic (no double conversions: cheaper on a GPU).
HERD_DRAW_HD inline uint64_t DrawFixed(float p) {
  uint32_t bits;
  static_assert(sizeof(bits) == sizeof(p));
  std::memcpy(&bits, &p, sizeof(bits));
  const int e = static_cast<int>((bits >> 23) & 0xFFu);
  if (e == 0 || (bits >> 31) != 0) return 0;  // zero, subnormal (< 2^-126: below 2^-60) or negative
  const uint64_t mantissa = (bits & 0x7FFFFFu) | 0x800000u;
  const int shift = e - 127 - 23 + kDrawFracBits;  // p = mantissa * 2^(e - 150)
  return shift >= 0 ? mantissa << shift : (shift > -64 ? mantissa >> -shift : 0);
}

// A row's share w * inv of its normalizer in fixed point, w rounded through float as the
// Sampler's softmax stores it.
HERD_DRAW_HD inline uint64_t DrawShare(float w, double inv) {
  return DrawFixed(static_cast<float>(static_cast<double>(w) * inv));
}

// One radix pass of the nucleus search: the most likely bin (255 down to 0) at which the mass of
// the entries above it plus its own reaches target; *above grows by the bins passed over. -1:
// the row falls short of target (rounding): no cut.
template <typename U>
HERD_DRAW_HD inline int NucleusBin(const U* mass, uint64_t target, uint64_t* above) {
  for (int b = 255; b >= 0; --b) {
    if (*above + mass[b] >= target) return b;
    *above += mass[b];
  }
  return -1;
}

// How many of the `count` entries of the last pass's chosen bin (equal logits, bin_mass / count
// each) complete the nucleus after `above`, taken in id order.
HERD_DRAW_HD inline uint64_t NucleusTiesTaken(uint64_t bin_mass, uint32_t count, uint64_t target, uint64_t above) {
  const uint64_t each = bin_mass / count;
  return (target - above + each - 1) / each;
}

// What a device returns for a row whose logprobs were asked for (Backend::LogprobStatsRows):
// the row's log-normalizer log_z = max + log(sum exp(x - max)) (float exp, double sum, as
// herd::Sampler's report) and the logit of the row's chosen id (NaN without one).
struct RowLogprobStats {
  double log_z = 0.0;
  float id_logit = 0.0f;
  float reserved = 0.0f;
};

namespace ref {

// The id drawn from row x[0, n) by d; -1 when the row holds no number (all NaN / -inf), as
// ArgMaxRows. O(n) passes, no sort. The CUDA kernel (kernels/cuda/draw_cuda.cu) follows the
// same steps.
int32_t DrawRow(const float* x, int64_t n, const RowDraw& d);

// The stats of row x[0, n) with chosen id `id` (< 0: none). A row without a number gets
// log_z -inf.
RowLogprobStats LogprobStatsOfRow(const float* x, int64_t n, int32_t id);

// x[p.begin .. p.end entries' ids] adjusted in place (AdjustLogit); ids distinct, < n.
void PenalizeRow(float* x, const RowPenalty& p, const PenaltyEntry* entries);

}  // namespace ref
}  // namespace herd
