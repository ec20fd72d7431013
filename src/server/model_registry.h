// The models this process serves, by API id (loaded at start for now; on-demand loading,
// keep_alive and LRU eviction come later).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/model_instance.h"

namespace herd::server {

class ModelRegistry {
 public:
  void Add(std::unique_ptr<ModelInstance> model) { models_.push_back(std::move(model)); }
  ModelInstance* Find(const std::string& name) const {
    for (const auto& m : models_) {
      if (m->name() == name) return m.get();
    }
    return nullptr;
  }
  const std::vector<std::unique_ptr<ModelInstance>>& all() const { return models_; }

 private:
  std::vector<std::unique_ptr<ModelInstance>> models_;
};

}  // namespace herd::server
