// One loaded model and everything that serves it: the GGUF mapping, backend, weights,
// tokenizer, chat template, KV cache and batching engine (running on its own thread).
//
// Requests reach it as protocol-neutral api:: types; ChatPrompt renders the model's chat
// template and tokenizes the result, ToGenerationRequest maps the options onto the engine's
// request with each API's defaults left to the caller.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/chat.h"
#include "chat/chat_template.h"
#include "engine/engine.h"
#include "io/gguf.h"
#include "kernels/backend.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace herd::server {

struct ModelInstanceOptions {
  std::string path;
  std::string name;   // the API's model id; empty: the file name without .gguf
  int threads = 0;    // 0: one per core
  DeviceSpec device;  // CPU (default) or a CUDA GPU
  // 0: CPU: room for 4 sequences at full context; GPU: 90% of the device memory still free
  // after the weights, at most max_running (64) sequences at full context.
  size_t kv_budget_bytes = 0;
  int32_t n_ctx = 4096;          // longest sequence (capped at the model's training context)
  int32_t max_batch_tokens = 0;  // per engine step; 0: 128 on the CPU (short steps), 2048 on a GPU
  DType kv_type = DType::kF16;
  // Pinned prefixes (Anthropic cache_control) are saved here when the model is unloaded and
  // loaded back at start, so agents' system prompts are warm after a restart. Empty: off.
  std::string prefix_cache_file;
  // The engine records its metrics here (null: a new object). The registry gives each model name
  // one object, so its counters survive unloads and reloads.
  std::shared_ptr<EngineMetrics> metrics;
};

class ModelInstance {
 public:
  // Loads the model and starts its engine. Errors name the file and the reason.
  static Result<std::unique_ptr<ModelInstance>> Load(const ModelInstanceOptions& options);
  // Host bytes the model will hold once loaded: the file (weights are used in place from the
  // mapping) plus the KV pool; for a GPU model the file only (weights and pool are in device
  // memory). Reads only the GGUF header. Errors: the file cannot be read or parsed.
  static Result<size_t> EstimateMemory(const ModelInstanceOptions& options);
  ~ModelInstance();  // stops the engine, then saves the prefix cache file if configured

  const std::string& name() const { return name_; }
  Engine& engine() { return *engine_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  int32_t n_ctx() const { return engine_->n_ctx(); }
  int64_t created() const { return created_; }  // unix seconds the model was loaded
  uint64_t file_size() const { return file_->file_size(); }
  const std::string& path() const { return path_; }
  int32_t prefix_blocks_loaded() const { return prefix_blocks_loaded_; }
  // Host memory held: the file (weights used in place on the CPU) plus the KV pool on the CPU;
  // on a GPU the weights and the pool live in device memory and the mapping is only page cache.
  size_t memory_bytes() const { return file_->file_size() + (device_.cuda ? 0 : cache_->bytes()); }
  const DeviceSpec& device() const { return device_; }
  // GPU memory held: the uploaded weights (their file bytes) plus the KV pool; 0 on the CPU.
  size_t device_memory_bytes() const { return device_.cuda ? file_->file_size() + cache_->bytes() : 0; }
  const ModelConfig& config() const { return model_->config(); }
  const GgufFile& file() const { return *file_; }
  bool has_chat_template() const { return template_ != nullptr; }
  // Seconds the last load took (set by the registry; Ollama's load_duration).
  double load_seconds() const { return load_seconds_; }
  void set_load_seconds(double s) { load_seconds_ = s; }

  // The chat rendered with the model's template (generation prompt on) and tokenized with
  // special tokens parsed; BOS added when the vocabulary wants it and the text lacks it.
  bool ChatPrompt(const api::ChatRequest& request, std::vector<int32_t>* tokens, api::ApiError* error) const;
  // The text ChatPrompt tokenizes: the chat rendered with the model's template, generation
  // prompt on (POST /apply-template).
  bool ChatText(const api::ChatRequest& request, std::string* text, api::ApiError* error) const;

  // Tokens of the prompt prefix that ends `content_bytes` into messages[message_index] (the
  // whole message, with the template's end-of-message markup, when content_bytes >= its size),
  // clipped to the part that is a prefix of `full` (for cache breakpoints / pins). A cut inside
  // a message ends at the last token that the full prompt shares with the cut one. Cost: one
  // template render and tokenization of the prefix.
  int32_t PrefixTokens(const api::ChatRequest& request, int32_t message_index, size_t content_bytes,
                       const std::vector<int32_t>& full) const;

  // Engine request for `prompt` with the API options; `default_max_tokens` < 0: until the
  // context is full.
  GenerationRequest ToGenerationRequest(std::vector<int32_t> prompt, const api::GenerationOptions& o,
                                        int32_t default_max_tokens) const;

 private:
  ModelInstance() = default;
  bool Render(const api::ChatRequest& request, size_t n_messages, bool generation_prompt, std::vector<int32_t>* tokens,
              api::ApiError* error) const;
  bool RenderText(const api::ChatRequest& request, size_t n_messages, bool generation_prompt, std::string* out,
                  api::ApiError* error) const;
  std::string name_;
  std::string path_;
  std::string prefix_cache_file_;
  int32_t prefix_blocks_loaded_ = 0;
  double load_seconds_ = 0;
  int64_t created_ = 0;
  DeviceSpec device_;
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<chat::ChatTemplate> template_;
  std::unique_ptr<KvCache> cache_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace herd::server
