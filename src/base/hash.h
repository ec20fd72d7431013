// 64-bit hashing for content addresses and checksums (not cryptographic).
#pragma once

#include <cstdint>

namespace herd {

// A finalizer with full avalanche: every input bit flips each output bit with probability ~1/2.
inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Folds one 64-bit word into a running hash state.
inline uint64_t HashAbsorb(uint64_t state, uint64_t word) { return Mix64(state ^ (word + 0x9e3779b97f4a7c15ULL)); }

}  // namespace herd
