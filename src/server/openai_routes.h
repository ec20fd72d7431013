// OpenAI routes: POST /v1/chat/completions (streamed over SSE or whole), GET /v1/models and
// GET /v1/models/{id}, with errors in OpenAI's shape. Handlers never block an I/O thread: the
// engine's stream notify callback drains events and writes them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "http/router.h"
#include "server/model_instance.h"

namespace herd::server {

// The models this process serves (loaded at start for now; on-demand loading comes later).
class ModelRegistry {
 public:
  void Add(std::unique_ptr<ModelInstance> model) { models_.push_back(std::move(model)); }
  ModelInstance* Find(const std::string& name) const;
  const std::vector<std::unique_ptr<ModelInstance>>& all() const { return models_; }

 private:
  std::vector<std::unique_ptr<ModelInstance>> models_;
};

void AddOpenAiRoutes(Router& router, ModelRegistry& models);

}  // namespace herd::server
