// TokenConstraint: restricts which tokens a sequence may sample next (constrained decoding,
// e.g. JSON mode). One object per sequence, holding where the sequence is in the constrained
// language; the sampler's chain runs on the masked row unchanged.
//
//   n = constraint->Mask(logits);        // disallowed tokens -> -inf; n == 0: nothing can follow
//   token = sampler.Sample(logits);
//   ok = constraint->Accept(token);      // false: the token was not allowed (state unchanged)
//
// Not thread-safe; Clone() forks the state (n > 1 choices that share a prefix).
#pragma once

#include <cstdint>
#include <memory>

namespace herd {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;

  // Sets logits[id] = -inf for every token that may not come next; leaves the others as they
  // are. Returns how many tokens are allowed (0: no token of the vocabulary continues).
  virtual int32_t Mask(float* logits) = 0;
  // Advances past `token`. Returns false, leaving the state unchanged, if it was not allowed.
  virtual bool Accept(int32_t token) = 0;
  // The constrained text is complete (only end-of-generation tokens are allowed now).
  virtual bool IsComplete() const = 0;
  virtual std::unique_ptr<TokenConstraint> Clone() const = 0;
};

}  // namespace herd
