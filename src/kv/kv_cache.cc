#include "kv/kv_cache.h"

#include <algorithm>

#include "base/check.h"
#include "tensor/quant_blocks.h"

namespace herd {

size_t KvCacheConfig::LayerBlockBytes() const {
  return static_cast<size_t>(block_size) * static_cast<size_t>(n_kv_heads) * KvVectorBytes(type, head_dim);
}

size_t KvCacheConfig::BytesPerBlock() const { return 2 * static_cast<size_t>(n_layer) * LayerBlockBytes(); }

int32_t KvCacheConfig::BlocksForBudget(const KvCacheConfig& shape, size_t budget_bytes) {
  const size_t per = shape.BytesPerBlock();
  return per == 0 ? 0 : static_cast<int32_t>(std::min<size_t>(budget_bytes / per, 1u << 30));
}

Result<std::unique_ptr<KvCache>> KvCache::Create(Backend* backend, const KvCacheConfig& c) {
  if (c.type != DType::kF16 && c.type != DType::kF32 && c.type != DType::kQ8_0) {
    return Unimplemented(
        StrFormat("KV cache type %s is not supported (use f16, f32 or q8_0)", std::string(DTypeName(c.type)).c_str()));
  }
  if (c.n_layer <= 0 || c.n_kv_heads <= 0 || c.head_dim <= 0 || c.block_size <= 0 || c.n_blocks <= 0) {
    return InvalidArgument(StrFormat("invalid KV cache geometry: %d layers, %d kv heads, head_dim %d, %d blocks of %d",
                                     c.n_layer, c.n_kv_heads, c.head_dim, c.n_blocks, c.block_size));
  }
  if (c.type == DType::kQ8_0 && c.head_dim % kQK8_0 != 0) {
    return InvalidArgument(
        StrFormat("KV cache type q8_0 needs head_dim to be a multiple of %d (its block size); "
                  "this model has head_dim %d (use --kv-type f16)",
                  kQK8_0, c.head_dim));
  }
  HERD_RETURN_IF_ERROR(backend->CheckKvCache(c.type, c.head_dim));
  std::unique_ptr<KvCache> cache(new KvCache(backend, c));
  const size_t layer_bytes = c.LayerBlockBytes() * static_cast<size_t>(c.n_blocks);
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

void KvCache::CopyBlock(int32_t src, int32_t dst) {
  HERD_CHECK_MSG(src >= 0 && src < config_.n_blocks && dst >= 0 && dst < config_.n_blocks,
                 "CopyBlock %d -> %d: %d blocks", src, dst, config_.n_blocks);
  if (src == dst) return;
  const size_t n = config_.LayerBlockBytes();
  for (const KvLayerView& l : layers_) {
    for (void* base : {l.k, l.v}) {
      uint8_t* p = static_cast<uint8_t*>(base);
      backend_->CopyOnDevice(p + static_cast<size_t>(dst) * n, p + static_cast<size_t>(src) * n, n);
    }
  }
}

void KvCache::ReadBlock(int32_t block, void* host) const {
  HERD_CHECK_MSG(block >= 0 && block < config_.n_blocks, "ReadBlock %d: %d blocks", block, config_.n_blocks);
  const size_t n = config_.LayerBlockBytes();
  uint8_t* out = static_cast<uint8_t*>(host);
  backend_->Synchronize();
  for (const KvLayerView& l : layers_) {
    for (const void* base : {l.k, l.v}) {
      backend_->CopyToHost(out, static_cast<const uint8_t*>(base) + static_cast<size_t>(block) * n, n);
      out += n;
    }
  }
  backend_->Synchronize();
}

void KvCache::WriteBlock(int32_t block, const void* host) {
  HERD_CHECK_MSG(block >= 0 && block < config_.n_blocks, "WriteBlock %d: %d blocks", block, config_.n_blocks);
  const size_t n = config_.LayerBlockBytes();
  const uint8_t* in = static_cast<const uint8_t*>(host);
  for (const KvLayerView& l : layers_) {
    for (void* base : {l.k, l.v}) {
      backend_->CopyToDevice(static_cast<uint8_t*>(base) + static_cast<size_t>(block) * n, in, n);
      in += n;
    }
  }
  backend_->Synchronize();
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
