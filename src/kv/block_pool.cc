#include "kv/block_pool.h"

#include "base/check.h"

namespace herd {

BlockPool::BlockPool(int32_t n_blocks) {
  HERD_CHECK(n_blocks > 0);
  const auto n = static_cast<size_t>(n_blocks);
  ref_.assign(n, 0);
  hash_.assign(n, 0);
  has_hash_.assign(n, false);
  prev_.assign(n, -1);
  next_.assign(n, -1);
  in_queue_.assign(n, false);
  for (int32_t b = 0; b < n_blocks; ++b) PushBack(b);  // lowest ids first
}

size_t BlockPool::Index(int32_t block) const {
  HERD_CHECK_MSG(block >= 0 && block < static_cast<int32_t>(ref_.size()), "block %d out of range", block);
  return static_cast<size_t>(block);
}

void BlockPool::Unlink(int32_t b) {
  const size_t i = Index(b);
  HERD_CHECK(in_queue_[i]);
  if (prev_[i] >= 0)
    next_[static_cast<size_t>(prev_[i])] = next_[i];
  else
    head_ = next_[i];
  if (next_[i] >= 0)
    prev_[static_cast<size_t>(next_[i])] = prev_[i];
  else
    tail_ = prev_[i];
  prev_[i] = next_[i] = -1;
  in_queue_[i] = false;
  --n_free_;
}

void BlockPool::PushFront(int32_t b) {
  const size_t i = Index(b);
  HERD_CHECK(!in_queue_[i]);
  prev_[i] = -1;
  next_[i] = head_;
  if (head_ >= 0)
    prev_[static_cast<size_t>(head_)] = b;
  else
    tail_ = b;
  head_ = b;
  in_queue_[i] = true;
  ++n_free_;
}

void BlockPool::PushBack(int32_t b) {
  const size_t i = Index(b);
  HERD_CHECK(!in_queue_[i]);
  next_[i] = -1;
  prev_[i] = tail_;
  if (tail_ >= 0)
    next_[static_cast<size_t>(tail_)] = b;
  else
    head_ = b;
  tail_ = b;
  in_queue_[i] = true;
  ++n_free_;
}

std::optional<int32_t> BlockPool::Allocate() {
  if (head_ < 0) return std::nullopt;
  const int32_t b = head_;
  const size_t i = static_cast<size_t>(b);
  Unlink(b);
  if (has_hash_[i]) {
    index_.erase(hash_[i]);
    has_hash_[i] = false;
    hash_[i] = 0;
    ++stats_.evictions;
  }
  ref_[i] = 1;
  return b;
}

std::optional<int32_t> BlockPool::AllocateEmpty() {
  if (head_ < 0 || has_hash_[static_cast<size_t>(head_)]) return std::nullopt;
  return Allocate();
}

int32_t BlockPool::Lookup(BlockHash hash) const {
  const auto it = index_.find(hash);
  return it == index_.end() ? -1 : it->second;
}

void BlockPool::Acquire(int32_t block) {
  const size_t i = Index(block);
  if (ref_[i] == 0) {
    HERD_CHECK_MSG(has_hash_[i], "acquiring free block %d that holds no cached content", block);
    Unlink(block);
  }
  ++ref_[i];
}

void BlockPool::Release(int32_t block) {
  const size_t i = Index(block);
  HERD_CHECK_MSG(ref_[i] > 0, "release of free block %d", block);
  if (--ref_[i] > 0) return;
  if (has_hash_[i]) {
    PushBack(block);
  } else {
    PushFront(block);
  }
}

bool BlockPool::Register(int32_t block, BlockHash hash) {
  const size_t i = Index(block);
  HERD_CHECK_MSG(ref_[i] > 0, "registering free block %d", block);
  if (has_hash_[i] || index_.count(hash) != 0) return false;
  has_hash_[i] = true;
  hash_[i] = hash;
  index_.emplace(hash, block);
  return true;
}

std::vector<int32_t> BlockPool::FreeQueue() const {
  std::vector<int32_t> out;
  for (int32_t b = head_; b >= 0; b = next_[static_cast<size_t>(b)]) out.push_back(b);
  return out;
}

void BlockPool::CheckInvariants() const {
  int32_t count = 0, prev = -1;
  bool seen_cached = false;
  for (int32_t b = head_; b >= 0; b = next_[static_cast<size_t>(b)]) {
    const size_t i = static_cast<size_t>(b);
    HERD_CHECK_MSG(in_queue_[i] && ref_[i] == 0, "block %d in the free queue with ref_count %d", b, ref_[i]);
    HERD_CHECK_MSG(has_hash_[i] || !seen_cached, "empty block %d after a cached one in the free queue", b);
    seen_cached = seen_cached || has_hash_[i];
    HERD_CHECK(prev_[i] == prev);
    prev = b;
    HERD_CHECK_MSG(++count <= n_blocks(), "free queue has a cycle");
  }
  HERD_CHECK(prev == tail_);
  HERD_CHECK_MSG(count == n_free_, "free queue holds %d blocks, count says %d", count, n_free_);
  size_t hashed = 0;
  for (size_t i = 0; i < ref_.size(); ++i) {
    HERD_CHECK_MSG(ref_[i] >= 0, "block %zu has ref_count %d", i, ref_[i]);
    HERD_CHECK_MSG((ref_[i] == 0) == static_cast<bool>(in_queue_[i]), "block %zu: ref_count %d but %s the queue", i,
                   ref_[i], in_queue_[i] ? "in" : "not in");
    if (has_hash_[i]) {
      ++hashed;
      const auto it = index_.find(hash_[i]);
      HERD_CHECK(it != index_.end() && it->second == static_cast<int32_t>(i));
    }
  }
  HERD_CHECK(hashed == index_.size());
}

}  // namespace herd
