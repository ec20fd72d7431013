// BlockPool: the bookkeeping of one model instance's KV blocks. No device code: block ids
// index the KvCache's storage, which the pool never touches.
//
// Every block is in exactly one of three states:
//   in use   ref_count > 0 (held by sequences and pins; shared blocks have ref_count > 1)
//   cached   ref_count == 0, holds a registered hash: reusable by a prefix hit, evictable
//   empty    ref_count == 0, no hash
// Free blocks (cached or empty) sit in one queue; Allocate() takes its head. Empty blocks are
// put at the head (reused first, most recently freed first); cached blocks at the tail, so
// the head of the cached part is the least recently released one: eviction is LRU and happens
// only when no empty block is left.
//
// Cost: every operation is O(1) (hash map + intrusive list) except CheckInvariants.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"

namespace herd {

struct BlockPoolStats {
  int64_t evictions = 0;  // cached blocks reused for other content
};

class BlockPool {
 public:
  explicit BlockPool(int32_t n_blocks);

  // Takes the head of the free queue with ref_count 1 (evicting its hash if it was cached);
  // nullopt when every block is in use.
  std::optional<int32_t> Allocate();
  // Like Allocate, but only an empty block: nullopt when none is left (never evicts cached
  // content). The free queue always holds its empty blocks before its cached ones, so this is
  // O(1).
  std::optional<int32_t> AllocateEmpty();

  // The cached-or-in-use block registered under `hash`, or -1.
  int32_t Lookup(BlockHash hash) const;

  // ref_count += 1; a free block leaves the free queue (a prefix hit on a cached block).
  void Acquire(int32_t block);
  // ref_count -= 1; at zero the block joins the free queue (cached: tail; empty: head).
  void Release(int32_t block);

  // Registers a full block's content hash. Returns false (and registers nothing) when another
  // block already holds that hash or this block already has one.
  bool Register(int32_t block, BlockHash hash);

  int32_t n_blocks() const { return static_cast<int32_t>(ref_.size()); }
  int32_t free_count() const { return n_free_; }                                // allocatable now (empty + cached)
  int32_t cached_count() const { return static_cast<int32_t>(index_.size()); }  // registered (any ref)
  int32_t ref_count(int32_t block) const { return ref_[Index(block)]; }
  bool is_cached(int32_t block) const { return has_hash_[Index(block)]; }
  BlockHash hash(int32_t block) const { return hash_[Index(block)]; }
  const BlockPoolStats& stats() const { return stats_; }

  // The free queue from head to tail (allocation order). O(n).
  std::vector<int32_t> FreeQueue() const;
  // Aborts (HERD_CHECK) if the list, counts, ref counts or index disagree. O(n).
  void CheckInvariants() const;

 private:
  size_t Index(int32_t block) const;
  void Unlink(int32_t block);
  void PushFront(int32_t block);
  void PushBack(int32_t block);

  std::vector<int32_t> ref_;
  std::vector<BlockHash> hash_;
  std::vector<bool> has_hash_;
  std::vector<int32_t> prev_, next_;  // free queue links; -1 = none
  std::vector<bool> in_queue_;
  int32_t head_ = -1, tail_ = -1, n_free_ = 0;
  std::unordered_map<BlockHash, int32_t> index_;
  BlockPoolStats stats_;
};

}  // namespace herd
