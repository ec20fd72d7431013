// Content addresses of full KV blocks for automatic prefix caching.
//
// A block's hash chains its parent's: hash(block i) = H(hash(block i-1), token ids of block i).
// The chain starts from a root derived from a cache key that covers everything else that
// changes K/V (model file identity, KV type, block size), so equal hashes mean equal prompt
// prefixes of the same model. 64-bit: a collision among 10^6 distinct blocks has probability
// about 3e-8; the engine accepts that (llama.cpp and vLLM's default make the same trade).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace herd {

using BlockHash = uint64_t;

// Root of the chain for a cache key (e.g. "model-file-id|f16|16").
BlockHash RootBlockHash(std::string_view cache_key);

// Hash of a full block whose parent block has hash `parent` (the root for block 0).
BlockHash ChainBlockHash(BlockHash parent, std::span<const int32_t> tokens);

}  // namespace herd
