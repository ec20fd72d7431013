#include "kv/block_hash.h"

namespace herd {
namespace {

// A 64-bit finalizer with full avalanche (every input bit flips each output bit with
// probability ~1/2), applied after each absorbed word.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t Absorb(uint64_t state, uint64_t word) { return Mix(state ^ (word + 0x9e3779b97f4a7c15ULL)); }

}  // namespace

BlockHash RootBlockHash(std::string_view cache_key) {
  uint64_t h = Mix(0x6865726420726f6fULL ^ cache_key.size());
  for (unsigned char c : cache_key) h = Absorb(h, c);
  return h;
}

BlockHash ChainBlockHash(BlockHash parent, std::span<const int32_t> tokens) {
  uint64_t h = Absorb(parent, tokens.size());
  for (int32_t t : tokens) h = Absorb(h, static_cast<uint32_t>(t));
  return h;
}

}  // namespace herd
