#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"

namespace herd {

int32_t ArgMax(const float* values, int32_t n) {
  // Two passes: the maximum (16 independent lanes, which the compiler turns into SIMD max
  // instructions; the max of the non-NaN values does not depend on the order), then the first
  // index holding it.
  constexpr int kLanes = 16;
  float lane[kLanes];
  for (float& m : lane) m = -std::numeric_limits<float>::infinity();
  int32_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) lane[k] = values[i + k] > lane[k] ? values[i + k] : lane[k];
  }
  for (; i < n; ++i) lane[0] = values[i] > lane[0] ? values[i] : lane[0];
  float max = lane[0];
  for (float m : lane) max = m > max ? m : max;
  for (int32_t i = 0; i < n; ++i) {
    if (values[i] == max) return i;
  }
  return 0;  // every value is NaN or -inf
}

Result<Sampler> Sampler::Create(const SamplingParams& params, int32_t n_vocab) {
  HERD_RETURN_IF_ERROR(ValidateSamplingParams(params, n_vocab));
  uint64_t seed = params.seed;
  if (seed == kRandomSeed) {
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    if (seed == kRandomSeed) seed ^= 1;  // so that seed() can be replayed
  }
  return Sampler(params, n_vocab, seed);
}

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab, uint64_t seed)
    : params_(params),
      n_vocab_(n_vocab),
      seed_(seed),
      rng_(seed),
      history_(params.penalties_on() ? params.penalty_last_n : 0) {
  // One bias per token, in id order (a stable sort keeps a repeated token's biases in request order).
  std::vector<std::pair<int32_t, float>>& bias = params_.logit_bias;
  std::stable_sort(bias.begin(), bias.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t kept = 0, banned = 0;
  for (size_t i = 0; i < bias.size(); ++i) {
    if (kept > 0 && bias[kept - 1].first == bias[i].first) {
      bias[kept - 1].second += bias[i].second;
    } else {
      bias[kept++] = bias[i];
    }
  }
  bias.resize(kept);
  for (const auto& [id, b] : bias) banned += b == -std::numeric_limits<float>::infinity() ? 1 : 0;
  bias_bans_all_ = banned == static_cast<size_t>(n_vocab);
}

double Sampler::Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

void Sampler::Accept(int32_t id) {
  HERD_CHECK_MSG(id >= 0 && id < n_vocab_, "token %d outside the vocabulary [0, %d)", id, n_vocab_);
  history_.Push(id);
}

bool Sampler::IsStopToken(int32_t id) const {
  return std::find(params_.stop_tokens.begin(), params_.stop_tokens.end(), id) != params_.stop_tokens.end();
}

SampledToken Sampler::Sample(float* logits) {
  HERD_CHECK(logits != nullptr);
  if (!params_.logit_bias.empty()) ApplyLogitBias(logits, params_.logit_bias);
  if (params_.penalties_on()) {
    ApplyPenalties(logits, history_, params_.repeat_penalty, params_.frequency_penalty, params_.presence_penalty);
  }
  SampledToken out;
  out.id = params_.greedy() ? ArgMax(logits, n_vocab_) : Draw(logits);
  if (params_.logprobs || params_.n_probs > 0) Report(logits, &out);
  return out;
}

int32_t Sampler::Draw(const float* logits) {
  const double u = Uniform();  // drawn first so every call consumes exactly one
  const SamplingParams& p = params_;
  std::vector<Candidate>& c = scratch_;
  if (p.top_k > 0 && p.top_k < n_vocab_) {
    TopKFromLogits(logits, n_vocab_, p.top_k, c);
  } else {
    c.resize(n_vocab_);
    size_t m = 0;
    for (int32_t i = 0; i < n_vocab_; ++i) {
      c[m] = {i, logits[i], 0.0f};
      m += logits[i] > -std::numeric_limits<float>::infinity();
    }
    c.resize(m);
  }
  return DrawFromCandidates(u);
}

bool Sampler::LogprobsFitDevice() const { return params_.n_probs <= kMaxDeviceTopLogprobs; }

SampledToken Sampler::FinishDeviceToken(int32_t id, float id_logit, double log_z,
                                        std::span<const Candidate> top) const {
  SampledToken out;
  out.id = id;
  if (!params_.logprobs && params_.n_probs == 0) return out;
  if (!(log_z > -std::numeric_limits<double>::infinity())) {  // every token banned
    out.logprob = -std::numeric_limits<float>::infinity();
    return out;
  }
  out.logprob = static_cast<float>(id_logit - log_z);
  const size_t n = std::min(top.size(), static_cast<size_t>(params_.n_probs));
  for (size_t i = 0; i < n; ++i) out.top.push_back({top[i].id, static_cast<float>(top[i].logit - log_z)});
  return out;
}

bool Sampler::AdjustmentsFitDevice() const {
  const size_t window = params_.penalties_on() ? history_.counts().size() : 0;
  return !bias_bans_all_ && params_.logit_bias.size() + window <= kMaxDeviceAdjustedTokens;
}

void Sampler::DeviceAdjustments(std::vector<DeviceAdjustment>* out) const {
  const SamplingParams& p = params_;
  const auto& bias = p.logit_bias;  // in id order (the constructor)
  const bool penalties = p.penalties_on();
  for (const auto& [id, b] : bias) {
    DeviceAdjustment a{id, true, b, false, 0.0f};
    if (penalties) {
      const auto it = history_.counts().find(id);
      if (it != history_.counts().end()) {
        a.penalized = true;
        a.subtrahend = PenaltySubtrahend(it->second, p.frequency_penalty, p.presence_penalty);
      }
    }
    out->push_back(a);
  }
  if (!penalties) return;
  for (const auto& [id, count] : history_.counts()) {
    const auto in_bias = std::lower_bound(bias.begin(), bias.end(), id,
                                          [](const std::pair<int32_t, float>& e, int32_t v) { return e.first < v; });
    if (in_bias != bias.end() && in_bias->first == id) continue;  // taken above
    out->push_back(
        DeviceAdjustment{id, false, 0.0f, true, PenaltySubtrahend(count, p.frequency_penalty, p.presence_penalty)});
  }
}

bool Sampler::TakesTopCandidates(int32_t max_k) const {
  const SamplingParams& p = params_;
  return !p.greedy() && p.top_k > 0 && p.top_k <= max_k && p.top_k < n_vocab_ && AdjustmentsFitDevice() &&
         LogprobsFitDevice();
}

bool Sampler::TakesDeviceDraw() const {
  const SamplingParams& p = params_;
  return !p.greedy() && (p.top_k <= 0 || p.top_k >= n_vocab_) && p.typical_p >= 1.0f && AdjustmentsFitDevice() &&
         LogprobsFitDevice();
}

Sampler::DeviceDraw Sampler::NextDeviceDraw() {
  HERD_CHECK(TakesDeviceDraw());
  return DeviceDraw{params_.temperature, params_.top_p, params_.min_p, Uniform()};
}

SampledToken Sampler::SampleTopCandidates(std::span<const Candidate> top) {
  HERD_CHECK(TakesTopCandidates(params_.top_k));
  const double u = Uniform();  // drawn first, as in Draw
  const size_t k = std::min(top.size(), static_cast<size_t>(params_.top_k));
  scratch_.assign(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(k));
  SampledToken out;
  out.id = DrawFromCandidates(u);
  return out;
}

int32_t Sampler::DrawFromCandidates(double u) {
  const SamplingParams& p = params_;
  std::vector<Candidate>& c = scratch_;
  if (c.empty()) return 0;  // every token banned

  if (p.typical_p < 1.0f && c.size() > 1) TypicalP(c, p.typical_p, &work_);
  if (p.top_p < 1.0f && c.size() > 1) TopP(c, p.top_p, &work_);
  if (p.min_p > 0.0f && c.size() > 1) MinP(c, p.min_p);
  if (c.size() == 1) return c[0].id;
  if (p.temperature != 1.0f) ApplyTemperature(c, p.temperature);
  Softmax(c);

  double cum = 0.0;
  for (const Candidate& x : c) {
    cum += x.p;
    if (u < cum) return x.id;
  }
  // The probabilities summed to slightly less than u by rounding: take the last possible token.
  for (auto it = c.rbegin(); it != c.rend(); ++it) {
    if (it->p > 0.0f) return it->id;
  }
  return c.back().id;
}

void Sampler::Report(const float* logits, SampledToken* out) const {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const float max = logits[ArgMax(logits, n_vocab_)];
  if (!(max > neg_inf)) {  // every token banned
    out->logprob = neg_inf;
    return;
  }
  double sum = 0.0;
  for (int32_t i = 0; i < n_vocab_; ++i) sum += std::exp(logits[i] - max);  // float exp, double sum
  const double log_z = max + std::log(sum);
  auto logprob = [&](int32_t id) { return static_cast<float>(logits[id] - log_z); };
  out->logprob = logprob(out->id);

  if (params_.n_probs == 0) return;
  std::vector<Candidate> top;
  TopKFromLogits(logits, n_vocab_, params_.n_probs, top);
  out->top.reserve(top.size());
  for (const Candidate& x : top) out->top.push_back({x.id, logprob(x.id)});
}

}  // namespace herd
