#include "kv/block_hash.h"

#include "base/hash.h"

namespace herd {
namespace {}  // namespace

BlockHash RootBlockHash(std::string_view cache_key) {
  uint64_t h = Mix64(0x6865726420726f6fULL ^ cache_key.size());
  for (unsigned char c : cache_key) h = HashAbsorb(h, c);
  return h;
}

BlockHash ChainBlockHash(BlockHash parent, std::span<const int32_t> tokens) {
  uint64_t h = HashAbsorb(parent, tokens.size());
  for (int32_t t : tokens) h = HashAbsorb(h, static_cast<uint32_t>(t));
  return h;
}

}  // namespace herd
