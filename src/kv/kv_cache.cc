#include "kv/kv_cache.h"

#include <algorithm>

#include "base/check.h"

namespace herd {

size_t KvCacheConfig::BytesPerBlock() const {
  const size_t elem = type == DType::kF16 ? 2 : 4;
  return 2 * static_cast<size_t>(n_layer) * block_size * n_kv_heads * head_dim * elem;
}

int32_t KvCacheConfig::BlocksForBudget(const KvCacheConfig& shape, size_t budget_bytes) {
  const size_t per = shape.BytesPerBlock();
  return per == 0 ? 0 : static_cast<int32_t>(std::min<size_t>(budget_bytes / per, 1u << 30));
}

Result<std::unique_ptr<KvCache>> KvCache::Create(Backend* backend, const KvCacheConfig& c) {
  if (c.type != DType::kF16 && c.type != DType::kF32) {
    return Unimplemented(StrFormat("KV cache type %s is not supported (use f16 or f32)",
                                   std::string(DTypeName(c.type)).c_str()));
  }
  if (c.n_layer <= 0 || c.n_kv_heads <= 0 || c.head_dim <= 0 || c.block_size <= 0 || c.n_blocks <= 0) {
    return InvalidArgument(StrFormat("invalid KV cache geometry: %d layers, %d kv heads, head_dim %d, %d blocks of %d",
                                     c.n_layer, c.n_kv_heads, c.head_dim, c.n_blocks, c.block_size));
  }
  std::unique_ptr<KvCache> cache(new KvCache(backend, c));
  const size_t layer_bytes = c.BytesPerBlock() / 2 / static_cast<size_t>(c.n_layer) * static_cast<size_t>(c.n_blocks);
  for (int32_t i = 0; i < c.n_layer; ++i) {
    KvLayerView v;
    v.k = backend->Alloc(layer_bytes);
    v.v = backend->Alloc(layer_bytes);
    v.type = c.type;
    v.n_blocks = c.n_blocks;
    v.block_size = c.block_size;
    v.n_kv_heads = c.n_kv_heads;
    v.head_dim = c.head_dim;
    cache->layers_.push_back(v);
  }
  return cache;
}

KvCache::~KvCache() {
  for (auto& l : layers_) {
    backend_->Free(l.k);
    backend_->Free(l.v);
  }
}

BlockAllocator::BlockAllocator(int32_t n_blocks) : n_blocks_(n_blocks), in_use_(static_cast<size_t>(n_blocks)) {
  free_.reserve(static_cast<size_t>(n_blocks));
  for (int32_t i = n_blocks - 1; i >= 0; --i) free_.push_back(i);
}

Result<int32_t> BlockAllocator::Allocate() {
  if (free_.empty()) return ResourceExhausted(StrFormat("all %d KV blocks are in use", n_blocks_));
  const int32_t b = free_.back();
  free_.pop_back();
  in_use_[static_cast<size_t>(b)] = true;
  return b;
}

void BlockAllocator::Free(int32_t block) {
  HERD_CHECK_MSG(block >= 0 && block < n_blocks_, "block %d out of range", block);
  HERD_CHECK_MSG(in_use_[static_cast<size_t>(block)], "double free of block %d", block);
  in_use_[static_cast<size_t>(block)] = false;
  free_.push_back(block);
}

}  // namespace herd
