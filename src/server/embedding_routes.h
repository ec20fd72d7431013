// Embedding routes: OpenAI POST /v1/embeddings (registered by AddOpenAiRoutes) and Ollama
// POST /api/embed and POST /api/embeddings (registered by AddOllamaRoutes). Each input becomes
// one engine embedding request (engine/embedding.h); they run batched with everything else on
// the model's engine thread, and the response is written when the last one finishes.
//
// Pooling follows the GGUF metadata `<arch>.pooling_type` (1 mean, 2 cls, 3 last), mean when
// absent or another value; vectors are L2-normalized except on Ollama's legacy /api/embeddings.
#pragma once

#include <string>

#include "engine/embedding.h"
#include "http/router.h"
#include "io/gguf.h"
#include "server/api_keys.h"
#include "server/model_registry.h"

namespace herd::server {

void AddOpenAiEmbeddingRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys = nullptr);
void AddOllamaEmbeddingRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys = nullptr);

// The pooling a model file asks for in its metadata `<arch>.pooling_type` (see above).
Pooling PoolingFromMetadata(const GgufFile& file, const std::string& arch);

}  // namespace herd::server
