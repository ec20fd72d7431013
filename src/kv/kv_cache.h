// KV cache storage: per layer, K and V arrays of fixed-size blocks in backend memory.
//   K, V per layer: [n_blocks, block_size, n_kv_heads, head_dim] of `type`: F16 (default), F32,
//   or Q8_0 (head_dim / 32 blocks of 34 bytes per vector, head_dim a multiple of 32; 17/32 of
//   F16's memory). See kernels/attention.h.
// The pool is sized in blocks (from a byte budget by BlocksForBudget), not per sequence: any
// mix of short and long sequences shares it. Which sequence owns which block is the
// BlockAllocator's (and, with the batching engine, the KvCacheManager's) business.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "kernels/attention.h"
#include "kernels/backend.h"

namespace herd {

struct KvCacheConfig {
  int32_t n_layer = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t block_size = 16;
  int32_t n_blocks = 0;
  DType type = DType::kF16;

  size_t BytesPerBlock() const;    // K and V of all layers
  size_t LayerBlockBytes() const;  // one block of one layer's K (or V)
  static int32_t BlocksForBudget(const KvCacheConfig& shape, size_t budget_bytes);
};

class KvCache {
 public:
  // Errors: invalid geometry, unsupported type (F16, F32, Q8_0 are supported), Q8_0 with a
  // head_dim that is not a multiple of 32, a shape the backend's attention cannot run
  // (Backend::CheckKvCache: e.g. an F32 cache of head_dim 128 on a GPU of 99 KB shared memory).
  static Result<std::unique_ptr<KvCache>> Create(Backend* backend, const KvCacheConfig& config);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  const KvCacheConfig& config() const { return config_; }
  std::span<const KvLayerView> layers() const { return layers_; }
  size_t bytes() const { return config_.BytesPerBlock() * static_cast<size_t>(config_.n_blocks); }

  // Bytes of one block across all layers, K and V (= config().BytesPerBlock()): the size of the
  // host buffer of ReadBlock / WriteBlock. Its layout: for layer 0..n_layer-1, that layer's K
  // block then its V block, each config().LayerBlockBytes() contiguous bytes in the cache's own
  // element layout ([block_size, n_kv_heads, head_dim] of `type`).
  size_t BlockBytes() const { return config_.BytesPerBlock(); }
  // Copies block src to block dst in every layer, K and V, on the device (copy-on-write of a
  // shared partial block). Ordered after the ops queued before it. src == dst is a no-op.
  void CopyBlock(int32_t src, int32_t dst);
  // Waits for queued work, then copies block `block` into host[BlockBytes()].
  void ReadBlock(int32_t block, void* host) const;
  // Overwrites block `block` from host[BlockBytes()]; the host buffer may be reused on return.
  void WriteBlock(int32_t block, const void* host);

 private:
  KvCache(Backend* backend, const KvCacheConfig& config) : backend_(backend), config_(config) {}
  Backend* backend_;
  KvCacheConfig config_;
  std::vector<KvLayerView> layers_;
};

// Free list of block ids [0, n_blocks). Allocation order is deterministic: lowest ids first
// initially, then most recently freed first (LIFO) for cache locality.
class BlockAllocator {
 public:
  explicit BlockAllocator(int32_t n_blocks);
  // ResourceExhausted when no block is free.
  Result<int32_t> Allocate();
  void Free(int32_t block);
  int32_t free_count() const { return static_cast<int32_t>(free_.size()); }
  int32_t total() const { return n_blocks_; }

 private:
  int32_t n_blocks_;
  std::vector<int32_t> free_;  // stack: back() is allocated next
  std::vector<bool> in_use_;
};

}  // namespace herd
