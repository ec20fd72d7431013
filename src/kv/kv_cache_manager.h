// KvCacheManager: which KV blocks each sequence uses, automatic prefix caching, copy-on-write
// sharing and pins. Pure bookkeeping over a BlockPool (no device code): the model runner turns
// its block tables into ForwardBatch block tables and performs the block copies it asks for.
//
// Prefix caching: when a sequence has computed a full block (block_size tokens) the block is
// registered under ChainBlockHash(parent hash, its tokens). A new sequence whose tokens start
// with registered blocks takes references on them instead of computing them again; blocks stay
// cached after their sequences end and are evicted LRU only when the pool needs space.
//
// Contract with the scheduler, per sequence and step:
//   Admit(id, tokens)            once; returns the number of leading tokens already cached
//   Reserve(id, first, n)        before a forward pass that writes positions [first, n)
//   <run the copies from TakeCopies(), then the forward pass>
//   Commit(id, tokens, n)        after positions [0, n) hold valid K/V
//   Free(id)                     when the sequence finishes, is cancelled or preempted
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"

namespace herd {

using SeqId = int64_t;
using KvClock = std::chrono::steady_clock;

struct BlockCopy {
  int32_t src = 0;
  int32_t dst = 0;
};

struct KvCacheManagerOptions {
  int32_t n_blocks = 0;
  int32_t block_size = 16;
  std::string cache_key;             // identity of what the blocks hold (model file, KV type); see block_hash.h
  bool prefix_caching = true;        // off: nothing is registered or reused
  float max_pinned_fraction = 0.5f;  // pins may hold at most this share of the pool
};

struct PrefixCacheStats {
  int64_t queried_tokens = 0;  // prompt tokens looked up at admission
  int64_t hit_tokens = 0;      // of those, found cached
  int64_t evictions = 0;       // cached blocks reused for other content
};

class KvCacheManager {
 public:
  explicit KvCacheManager(const KvCacheManagerOptions& options);

  int32_t block_size() const { return block_size_; }
  int32_t BlocksFor(int64_t n_tokens) const { return static_cast<int32_t>((n_tokens + block_size_ - 1) / block_size_); }

  // Leading tokens a new sequence could reuse: whole cached blocks, and never the last token
  // (its logits are needed, so it is always computed). Pure; O(tokens).
  int32_t CachedPrefixLength(std::span<const int32_t> tokens) const;

  // Starts tracking `id` (must be new) and takes references on its cached prefix blocks.
  // Returns the number of leading tokens whose K/V are already in the cache.
  int32_t Admit(SeqId id, std::span<const int32_t> tokens);

  // Gives `id` blocks for positions [0, n_tokens) and makes the blocks that positions
  // [first_write, n_tokens) fall in private to it (copy-on-write: a shared block is replaced by
  // a copy, queued in TakeCopies()). Returns false and changes nothing when the pool has too
  // few free blocks.
  bool Reserve(SeqId id, int32_t first_write, int32_t n_tokens);
  // Free blocks Reserve(id, first_write, n_tokens) would consume.
  int32_t BlocksToReserve(SeqId id, int32_t first_write, int32_t n_tokens) const;

  // Positions [0, n_computed) of `id` now hold K/V of tokens[0, n_computed): registers the
  // newly completed full blocks for prefix reuse.
  void Commit(SeqId id, std::span<const int32_t> tokens, int32_t n_computed);

  // Releases every block of `id`, last block first (a sequence's tail is evicted before its
  // more widely shared head). Unknown ids are ignored.
  void Free(SeqId id);

  // `child` (new) shares all of `parent`'s blocks (ref_count + 1 each); the first write into a
  // shared partial block copies it (see Reserve).
  void Fork(SeqId parent, SeqId child);

  // Pins the cached full blocks of tokens[0, n_tokens) until `expiry` (a pin holds a reference,
  // so the blocks are not evicted). Pinning the same prefix again moves its expiry to the later
  // of the two. Returns the number of tokens pinned (0 when the prefix is not cached yet or the
  // pin would exceed max_pinned_fraction of the pool).
  int32_t Pin(std::span<const int32_t> tokens, int32_t n_tokens, KvClock::time_point expiry);
  // Releases the pins whose expiry is <= now. Returns how many expired.
  int32_t ExpirePins(KvClock::time_point now);
  int32_t pinned_blocks() const { return pinned_blocks_; }

  // Copies the runner must perform (src -> dst, all layers) before the next forward pass.
  std::vector<BlockCopy> TakeCopies();

  bool Has(SeqId id) const { return seqs_.count(id) != 0; }
  std::span<const int32_t> BlockTable(SeqId id) const;
  // Full blocks of `id` registered so far (prefix of BlockTable).
  int32_t CommittedBlocks(SeqId id) const;
  // The chain of (hash, block) for the cached full blocks at the start of `tokens`.
  std::vector<std::pair<BlockHash, int32_t>> CachedChain(std::span<const int32_t> tokens) const;
  BlockHash root_hash() const { return root_; }
  const std::string& cache_key() const { return cache_key_; }
  bool prefix_caching() const { return prefix_caching_; }
  // The unique (hash, block) of every pinned block, each pin's chain parents before children
  // (a block shared by several pins appears once, at its first place). O(pinned blocks).
  std::vector<std::pair<BlockHash, int32_t>> PinnedChains() const;

  const BlockPool& pool() const { return pool_; }
  BlockPool& mutable_pool() { return pool_; }
  int32_t free_blocks() const { return pool_.free_count(); }
  PrefixCacheStats stats() const;

  // Aborts if the sequences' references and pins do not add up to the pool's ref counts.
  void CheckInvariants() const;

 private:
  struct SeqBlocks {
    std::vector<int32_t> table;
    std::vector<BlockHash> hashes;  // of table[0, hashes.size()), the registered full blocks
  };
  struct PinEntry {
    std::vector<int32_t> blocks;
    KvClock::time_point expiry;
  };
  SeqBlocks& Get(SeqId id);
  const SeqBlocks& Get(SeqId id) const;

  int32_t block_size_;
  bool prefix_caching_;
  int32_t max_pinned_;
  std::string cache_key_;
  BlockHash root_;
  BlockPool pool_;
  std::unordered_map<SeqId, SeqBlocks> seqs_;
  std::unordered_map<BlockHash, PinEntry> pins_;  // key: hash of the last pinned block
  int32_t pinned_blocks_ = 0;
  std::vector<BlockCopy> copies_;
  int64_t queried_tokens_ = 0, hit_tokens_ = 0;
};

}  // namespace herd
