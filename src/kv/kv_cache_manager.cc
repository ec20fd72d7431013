#include "kv/kv_cache_manager.h"

#include <algorithm>
#include <unordered_set>

#include "base/check.h"

namespace herd {

KvCacheManager::KvCacheManager(const KvCacheManagerOptions& o)
    : block_size_(o.block_size),
      prefix_caching_(o.prefix_caching),
      max_pinned_(static_cast<int32_t>(static_cast<float>(o.n_blocks) * std::clamp(o.max_pinned_fraction, 0.0f, 1.0f))),
      cache_key_(o.cache_key),
      root_(RootBlockHash(o.cache_key)),
      pool_(o.n_blocks) {
  HERD_CHECK(o.block_size > 0);
}

KvCacheManager::SeqBlocks& KvCacheManager::Get(SeqId id) {
  auto it = seqs_.find(id);
  HERD_CHECK_MSG(it != seqs_.end(), "unknown sequence %lld", static_cast<long long>(id));
  return it->second;
}

const KvCacheManager::SeqBlocks& KvCacheManager::Get(SeqId id) const {
  auto it = seqs_.find(id);
  HERD_CHECK_MSG(it != seqs_.end(), "unknown sequence %lld", static_cast<long long>(id));
  return it->second;
}

std::vector<std::pair<BlockHash, int32_t>> KvCacheManager::CachedChain(std::span<const int32_t> tokens) const {
  std::vector<std::pair<BlockHash, int32_t>> chain;
  if (!prefix_caching_) return chain;
  BlockHash parent = root_;
  const size_t bs = static_cast<size_t>(block_size_);
  for (size_t start = 0; start + bs <= tokens.size(); start += bs) {
    const BlockHash h = ChainBlockHash(parent, tokens.subspan(start, bs));
    const int32_t b = pool_.Lookup(h);
    if (b < 0) break;
    chain.emplace_back(h, b);
    parent = h;
  }
  return chain;
}

int32_t KvCacheManager::CachedPrefixLength(std::span<const int32_t> tokens) const {
  if (tokens.empty()) return 0;
  const auto chain = CachedChain(tokens.first(tokens.size() - 1));
  return static_cast<int32_t>(chain.size()) * block_size_;
}

int32_t KvCacheManager::Admit(SeqId id, std::span<const int32_t> tokens) {
  HERD_CHECK_MSG(seqs_.count(id) == 0, "sequence %lld admitted twice", static_cast<long long>(id));
  SeqBlocks& s = seqs_[id];
  queried_tokens_ += static_cast<int64_t>(tokens.size());
  if (tokens.empty()) return 0;
  for (const auto& [hash, block] : CachedChain(tokens.first(tokens.size() - 1))) {
    pool_.Acquire(block);
    s.table.push_back(block);
    s.hashes.push_back(hash);
  }
  const int32_t cached = static_cast<int32_t>(s.table.size()) * block_size_;
  hit_tokens_ += cached;
  return cached;
}

int32_t KvCacheManager::BlocksToReserve(SeqId id, int32_t first_write, int32_t n_tokens) const {
  const SeqBlocks& s = Get(id);
  const int32_t have = static_cast<int32_t>(s.table.size());
  const int32_t need = BlocksFor(n_tokens);
  int32_t copies = 0;
  const int32_t end = std::min(have, need);
  for (int32_t k = first_write / block_size_; k < end; ++k) {
    if (pool_.ref_count(s.table[static_cast<size_t>(k)]) > 1) ++copies;
  }
  return std::max(0, need - have) + copies;
}

bool KvCacheManager::Reserve(SeqId id, int32_t first_write, int32_t n_tokens) {
  HERD_CHECK(first_write >= 0 && first_write <= n_tokens);
  if (BlocksToReserve(id, first_write, n_tokens) > pool_.free_count()) return false;
  SeqBlocks& s = Get(id);
  const int32_t need = BlocksFor(n_tokens);
  const int32_t end = std::min(static_cast<int32_t>(s.table.size()), need);
  for (int32_t k = first_write / block_size_; k < end; ++k) {
    int32_t& b = s.table[static_cast<size_t>(k)];
    HERD_CHECK_MSG(k >= static_cast<int32_t>(s.hashes.size()), "write into registered full block %d", b);
    if (pool_.ref_count(b) > 1) {
      const auto copy = pool_.Allocate();
      HERD_CHECK(copy.has_value());
      copies_.push_back({b, *copy});
      pool_.Release(b);
      b = *copy;
    }
  }
  while (static_cast<int32_t>(s.table.size()) < need) {
    const auto b = pool_.Allocate();
    HERD_CHECK(b.has_value());
    s.table.push_back(*b);
  }
  return true;
}

void KvCacheManager::Commit(SeqId id, std::span<const int32_t> tokens, int32_t n_computed) {
  if (!prefix_caching_) return;
  SeqBlocks& s = Get(id);
  HERD_CHECK(n_computed <= static_cast<int32_t>(tokens.size()));
  HERD_CHECK(BlocksFor(n_computed) <= static_cast<int32_t>(s.table.size()));
  const size_t bs = static_cast<size_t>(block_size_);
  for (size_t k = s.hashes.size(); (k + 1) * bs <= static_cast<size_t>(n_computed); ++k) {
    const BlockHash parent = k == 0 ? root_ : s.hashes[k - 1];
    const BlockHash h = ChainBlockHash(parent, tokens.subspan(k * bs, bs));
    pool_.Register(s.table[k], h);  // false: an equal block is cached already; this one stays private
    s.hashes.push_back(h);
  }
}

void KvCacheManager::Free(SeqId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  for (auto b = it->second.table.rbegin(); b != it->second.table.rend(); ++b) pool_.Release(*b);
  seqs_.erase(it);
}

void KvCacheManager::Fork(SeqId parent, SeqId child) {
  HERD_CHECK_MSG(seqs_.count(child) == 0, "fork into existing sequence %lld", static_cast<long long>(child));
  SeqBlocks copy = Get(parent);
  for (int32_t b : copy.table) pool_.Acquire(b);
  seqs_.emplace(child, std::move(copy));
}

int32_t KvCacheManager::Pin(std::span<const int32_t> tokens, int32_t n_tokens, KvClock::time_point expiry) {
  n_tokens = std::min<int32_t>(n_tokens, static_cast<int32_t>(tokens.size()));
  const auto chain = CachedChain(tokens.first(static_cast<size_t>(std::max(0, n_tokens))));
  if (chain.empty()) return 0;
  const BlockHash key = chain.back().first;
  auto it = pins_.find(key);
  if (it != pins_.end()) {
    it->second.expiry = std::max(it->second.expiry, expiry);
    return static_cast<int32_t>(chain.size()) * block_size_;
  }
  if (pinned_blocks_ + static_cast<int32_t>(chain.size()) > max_pinned_) return 0;
  PinEntry pin;
  pin.expiry = expiry;
  for (const auto& [hash, block] : chain) {
    pool_.Acquire(block);
    pin.blocks.push_back(block);
  }
  pinned_blocks_ += static_cast<int32_t>(chain.size());
  pins_.emplace(key, std::move(pin));
  return static_cast<int32_t>(chain.size()) * block_size_;
}

std::vector<std::pair<BlockHash, int32_t>> KvCacheManager::PinnedChains() const {
  std::vector<std::pair<BlockHash, int32_t>> out;
  std::unordered_set<int32_t> seen;
  for (const auto& [key, pin] : pins_) {
    for (int32_t b : pin.blocks) {
      if (!seen.insert(b).second) continue;
      HERD_CHECK_MSG(pool_.is_cached(b), "pinned block %d holds no hash", b);
      out.emplace_back(pool_.hash(b), b);
    }
  }
  return out;
}

int32_t KvCacheManager::ExpirePins(KvClock::time_point now) {
  int32_t expired = 0;
  for (auto it = pins_.begin(); it != pins_.end();) {
    if (it->second.expiry > now) {
      ++it;
      continue;
    }
    for (auto b = it->second.blocks.rbegin(); b != it->second.blocks.rend(); ++b) pool_.Release(*b);
    pinned_blocks_ -= static_cast<int32_t>(it->second.blocks.size());
    it = pins_.erase(it);
    ++expired;
  }
  return expired;
}

std::vector<BlockCopy> KvCacheManager::TakeCopies() {
  std::vector<BlockCopy> out;
  out.swap(copies_);
  return out;
}

std::span<const int32_t> KvCacheManager::BlockTable(SeqId id) const { return Get(id).table; }

int32_t KvCacheManager::CommittedBlocks(SeqId id) const { return static_cast<int32_t>(Get(id).hashes.size()); }

PrefixCacheStats KvCacheManager::stats() const {
  PrefixCacheStats s;
  s.queried_tokens = queried_tokens_;
  s.hit_tokens = hit_tokens_;
  s.evictions = pool_.stats().evictions;
  return s;
}

void KvCacheManager::CheckInvariants() const {
  pool_.CheckInvariants();
  std::vector<int32_t> refs(static_cast<size_t>(pool_.n_blocks()), 0);
  for (const auto& [id, s] : seqs_) {
    HERD_CHECK(s.hashes.size() <= s.table.size());
    for (int32_t b : s.table) ++refs[static_cast<size_t>(b)];
  }
  int32_t pinned = 0;
  for (const auto& [key, pin] : pins_) {
    for (int32_t b : pin.blocks) ++refs[static_cast<size_t>(b)];
    pinned += static_cast<int32_t>(pin.blocks.size());
  }
  HERD_CHECK(pinned == pinned_blocks_);
  for (int32_t b = 0; b < pool_.n_blocks(); ++b) {
    HERD_CHECK_MSG(refs[static_cast<size_t>(b)] == pool_.ref_count(b),
                   "block %d: %d references held, ref_count %d (leak or double free)", b, refs[static_cast<size_t>(b)],
                   pool_.ref_count(b));
  }
}

}  // namespace herd
