// Persistence of cached prefix blocks: written at shutdown (or on demand), loaded at start, so
// prompts cached before a restart (agents' system prompts) are hits again.
//
// A block is identified by its chained hash alone (block_hash.h): the chain's root covers the
// model file identity, the KV type and the block size, so a block with equal hash in another
// process of the same model holds the same K/V. A file therefore stores per block only its
// hash and its bytes (KvCache::ReadBlock layout).
//
// File format, version 1 (little-endian):
//   header   magic "HERDKVPC" (8) | version u32 | block_size u32 | root hash u64 |
//            block bytes u64 | count u64 | key length u32 | cache key (key length bytes) |
//            header checksum u64 (of every header byte before it)
//   count ×  block hash u64 | checksum u64 (of the bytes) | bytes (block bytes)
// Blocks come parents before children (a block's parent is earlier in the file or is the root).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "kv/kv_cache.h"
#include "kv/kv_cache_manager.h"

namespace herd {

// Writes `blocks` (hash, block id; cached blocks of `kv` in chain order, parents first;
// repeated hashes are written once) with their bytes from `cache` to path + ".tmp", then
// renames it to `path` (a reader never sees a half-written file). Cost: one ReadBlock per
// block; count × (BlockBytes + 16) bytes written. Errors: IoError with the path.
Status SavePrefixCache(const std::string& path, const KvCacheManager& kv, const KvCache& cache,
                       const std::vector<std::pair<BlockHash, int32_t>>& blocks);

// Validates the file at `path` completely (header, its checksum, root hash, geometry, size,
// every block's checksum), then loads each block whose hash is not cached yet into an empty
// block of the pool: WriteBlock, register the hash, release — it ends cached (ref_count 0,
// evictable; children are released before parents, so a chain's tail is evicted first).
// Loading stops when no empty block is left: it never evicts cached blocks nor touches blocks
// in use, so a small pool holds the first blocks of each chain. Returns the number of blocks
// loaded. The file is read twice (validation, then loading).
// Errors (the cache is unchanged): NotFound / IoError; InvalidArgument naming the file and the
// reason when prefix caching is off, for a file of another model, KV type, block size or cache geometry, a truncated or
// corrupt file, a file of an unknown version. A file that changes between the two passes ends
// with an error after the blocks before the change were loaded (they are valid).
Result<int32_t> LoadPrefixCache(const std::string& path, KvCacheManager& kv, KvCache& cache);

}  // namespace herd
