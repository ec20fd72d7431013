#include "sampling/sampling_params.h"

#include <cmath>

namespace herd {
namespace {

Status InUnitInterval(const char* name, float v, bool zero_allowed) {
  bool ok = std::isfinite(v) && v <= 1.0f && (zero_allowed ? v >= 0.0f : v > 0.0f);
  if (ok) return Status::Ok();
  return InvalidArgument(StrFormat("%s must be in %s, got %g", name, zero_allowed ? "[0, 1]" : "(0, 1]", v));
}

}  // namespace

Status ValidateSamplingParams(const SamplingParams& p, int32_t n_vocab) {
  if (n_vocab <= 0) return InvalidArgument(StrFormat("vocabulary size must be positive, got %d", n_vocab));
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f)
    return InvalidArgument(StrFormat("temperature must be a finite number >= 0, got %g", p.temperature));
  if (p.top_k < 0) return InvalidArgument(StrFormat("top_k must be >= 0 (0 = off), got %d", p.top_k));
  HERD_RETURN_IF_ERROR(InUnitInterval("top_p", p.top_p, false));
  HERD_RETURN_IF_ERROR(InUnitInterval("min_p", p.min_p, true));
  HERD_RETURN_IF_ERROR(InUnitInterval("typical_p", p.typical_p, false));
  if (!std::isfinite(p.repeat_penalty) || p.repeat_penalty <= 0.0f)
    return InvalidArgument(StrFormat("repeat_penalty must be a finite number > 0, got %g", p.repeat_penalty));
  if (!std::isfinite(p.presence_penalty))
    return InvalidArgument(StrFormat("presence_penalty must be finite, got %g", p.presence_penalty));
  if (!std::isfinite(p.frequency_penalty))
    return InvalidArgument(StrFormat("frequency_penalty must be finite, got %g", p.frequency_penalty));
  if (p.penalty_last_n < -1)
    return InvalidArgument(
        StrFormat("penalty_last_n must be >= -1 (-1 = whole history, 0 = off), got %d", p.penalty_last_n));
  for (const auto& [id, bias] : p.logit_bias) {
    if (id < 0 || id >= n_vocab)
      return InvalidArgument(StrFormat("logit_bias token %d is outside the vocabulary [0, %d)", id, n_vocab));
    if (std::isnan(bias) || bias == INFINITY)
      return InvalidArgument(StrFormat("logit_bias for token %d must be finite or -inf, got %g", id, bias));
  }
  for (int32_t id : p.stop_tokens) {
    if (id < 0 || id >= n_vocab)
      return InvalidArgument(StrFormat("stop token %d is outside the vocabulary [0, %d)", id, n_vocab));
  }
  if (p.n_probs < 0 || p.n_probs > kMaxNProbs)
    return InvalidArgument(StrFormat("n_probs must be in [0, %d], got %d", kMaxNProbs, p.n_probs));
  return Status::Ok();
}

}  // namespace herd
