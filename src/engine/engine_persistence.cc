// Engine: saving and loading the prefix cache (see Engine::SavePrefixCache).
#include "base/check.h"
#include "engine/engine.h"
#include "kv/prefix_store.h"

namespace herd {

Status Engine::SavePrefixCache(const std::string& path, const std::vector<std::vector<int32_t>>& prefixes) const {
  {
    std::lock_guard lock(mu_);
    HERD_CHECK_MSG(!thread_.joinable(), "Engine::SavePrefixCache while the engine loop runs (call it after Stop)");
  }
  // Pinned prefixes first: a smaller pool that loads the file keeps the first blocks.
  std::vector<std::pair<BlockHash, int32_t>> blocks = kv_.PinnedChains();
  for (const auto& prefix : prefixes) {
    const auto chain = kv_.CachedChain(prefix);
    blocks.insert(blocks.end(), chain.begin(), chain.end());
  }
  return herd::SavePrefixCache(path, kv_, *cache_, blocks);
}

Result<int32_t> Engine::LoadPrefixCache(const std::string& path) {
  {
    std::lock_guard lock(mu_);
    HERD_CHECK_MSG(!thread_.joinable(), "Engine::LoadPrefixCache while the engine loop runs (call it before Start)");
  }
  return herd::LoadPrefixCache(path, kv_, *cache_);
}

}  // namespace herd
