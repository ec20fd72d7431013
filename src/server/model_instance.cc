#include "server/model_instance.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "base/log.h"
#include "io/file_identity.h"

namespace herd::server {
namespace {

constexpr int32_t kGpuMaxRunning = 64;  // the scheduler's default max_running
constexpr double kGpuKvShare = 0.9;     // of the device memory free after the weights

// The KV pool for `c` under the options, and the context length actually served.
// device_free_bytes: free device memory after the weights (GPU models), else 0.
KvCacheConfig PoolFor(const ModelConfig& c, const ModelInstanceOptions& o, int32_t* n_ctx,
                      size_t device_free_bytes = 0) {
  *n_ctx = std::min(o.n_ctx > 0 ? o.n_ctx : c.n_ctx_train, c.n_ctx_train);
  KvCacheConfig kc{c.n_layer, c.n_head_kv, c.head_dim, 16, 0, o.kv_type};
  const int32_t blocks_per_seq = (*n_ctx + kc.block_size - 1) / kc.block_size;
  if (o.kv_budget_bytes > 0) {
    kc.n_blocks = KvCacheConfig::BlocksForBudget(kc, o.kv_budget_bytes);
  } else if (device_free_bytes > 0) {
    const auto share = static_cast<size_t>(kGpuKvShare * static_cast<double>(device_free_bytes));
    kc.n_blocks = std::min(KvCacheConfig::BlocksForBudget(kc, share), kGpuMaxRunning * blocks_per_seq);
  } else {
    kc.n_blocks = 4 * blocks_per_seq;
  }
  return kc;
}

}  // namespace

Result<size_t> ModelInstance::EstimateMemory(const ModelInstanceOptions& o) {
  HERD_ASSIGN_OR_RETURN(auto file, GgufFile::Open(o.path));
  HERD_ASSIGN_OR_RETURN(std::string arch, file->GetString("general.architecture"));
  HERD_ASSIGN_OR_RETURN(ModelConfig c, ReadLlamaLikeConfig(*file, arch));
  if (o.device.cuda) return static_cast<size_t>(file->file_size());  // weights and KV pool in device memory
  int32_t n_ctx = 0;
  const KvCacheConfig kc = PoolFor(c, o, &n_ctx);
  return static_cast<size_t>(file->file_size()) + kc.BytesPerBlock() * static_cast<size_t>(std::max(kc.n_blocks, 0));
}

Result<std::unique_ptr<ModelInstance>> ModelInstance::Load(const ModelInstanceOptions& o) {
  std::unique_ptr<ModelInstance> m(new ModelInstance);
  m->path_ = o.path;
  m->name_ = o.name.empty() ? std::filesystem::path(o.path).stem().string() : o.name;
  m->created_ =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  HERD_ASSIGN_OR_RETURN(m->file_, GgufFile::Open(o.path));
  m->device_ = o.device;
  HERD_ASSIGN_OR_RETURN(m->backend_, MakeBackend(o.device, o.threads));
  HERD_ASSIGN_OR_RETURN(m->model_, LoadModel(*m->file_, m->backend_.get()));
  HERD_ASSIGN_OR_RETURN(m->tokenizer_, Tokenizer::FromGguf(*m->file_));
  if (m->file_->Has("tokenizer.chat_template")) {
    HERD_ASSIGN_OR_RETURN(std::string source, m->file_->GetString("tokenizer.chat_template"));
    auto parsed = chat::ChatTemplate::Parse(source);
    if (!parsed.ok()) return InvalidArgument(o.path + ": chat template: " + parsed.status().message());
    m->template_ = std::make_unique<chat::ChatTemplate>(std::move(parsed).value());
  }
  const ModelConfig& c = m->model_->config();
  int32_t n_ctx = 0;
  size_t device_free = 0, device_total = 0;
  if (!m->backend_->DeviceMemory(&device_free, &device_total)) device_free = 0;
  const KvCacheConfig kc = PoolFor(c, o, &n_ctx, device_free);
  if (kc.n_blocks <= 0) return InvalidArgument("the KV budget holds no block");
  HERD_ASSIGN_OR_RETURN(m->cache_, KvCache::Create(m->backend_.get(), kc));
  EngineOptions eo;
  eo.n_ctx = n_ctx;
  eo.scheduler.max_batch_tokens = o.max_batch_tokens > 0 ? o.max_batch_tokens : (o.device.cuda ? 2048 : 128);
  eo.metrics = o.metrics;
  HERD_ASSIGN_OR_RETURN(eo.cache_key, FileIdentityAt(o.path));
  HERD_ASSIGN_OR_RETURN(m->engine_, Engine::Create(m->model_.get(), m->cache_.get(), m->tokenizer_.get(), eo));
  m->prefix_cache_file_ = o.prefix_cache_file;
  if (!o.prefix_cache_file.empty()) {
    auto loaded = m->engine_->LoadPrefixCache(o.prefix_cache_file);
    if (loaded.ok()) {
      m->prefix_blocks_loaded_ = *loaded;
    } else if (loaded.status().code() != StatusCode::kNotFound) {
      HERD_LOG(kWarn, "%s: prefix cache not loaded: %s", o.prefix_cache_file.c_str(),
               loaded.status().message().c_str());
    }
  }
  m->engine_->Start();
  return m;
}

ModelInstance::~ModelInstance() {
  if (!engine_) return;
  engine_->Stop();
  if (!prefix_cache_file_.empty()) {
    const Status saved = engine_->SavePrefixCache(prefix_cache_file_, {});
    if (!saved.ok()) HERD_LOG(kWarn, "prefix cache not saved: %s", saved.message().c_str());
  }
}

bool ModelInstance::Render(const api::ChatRequest& request, size_t n_messages, bool generation_prompt,
                           std::vector<int32_t>* tokens, api::ApiError* error) const {
  std::string text;
  if (!RenderText(request, n_messages, generation_prompt, &text, error)) return false;
  const Vocab& v = tokenizer_->vocab();
  *tokens = tokenizer_->Encode(text, /*add_special=*/false, /*parse_special=*/true);
  if (v.add_bos && v.bos != kNoToken && (tokens->empty() || tokens->front() != v.bos)) {
    tokens->insert(tokens->begin(), v.bos);
  }
  return true;
}

bool ModelInstance::RenderText(const api::ChatRequest& request, size_t n_messages, bool generation_prompt,
                               std::string* out, api::ApiError* error) const {
  chat::ChatContext ctx;
  for (size_t i = 0; i < n_messages && i < request.messages.size(); ++i) {
    const api::ChatMessage& m = request.messages[i];
    nlohmann::ordered_json msg = {{"role", m.role == "developer" ? "system" : m.role}, {"content", m.content}};
    if (!m.name.empty()) msg["name"] = m.name;
    if (!m.tool_call_id.empty()) msg["tool_call_id"] = m.tool_call_id;
    ctx.messages.push_back(std::move(msg));
  }
  ctx.add_generation_prompt = generation_prompt;
  const Vocab& v = tokenizer_->vocab();
  if (v.bos != kNoToken) ctx.bos_token = tokenizer_->TokenToPiece(v.bos, true);
  if (v.eos != kNoToken) ctx.eos_token = tokenizer_->TokenToPiece(v.eos, true);
  const chat::ChatTemplate& t = template_ ? *template_ : chat::ChatTemplate::Default();
  auto text = t.Render(ctx);
  if (!text.ok()) {
    *error = api::InvalidRequest("the model's chat template failed: " + text.status().message(), "messages");
    return false;
  }
  *out = std::move(text).value();
  return true;
}

bool ModelInstance::ChatText(const api::ChatRequest& request, std::string* text, api::ApiError* error) const {
  return RenderText(request, request.messages.size(), true, text, error);
}

bool ModelInstance::ChatPrompt(const api::ChatRequest& request, std::vector<int32_t>* tokens,
                               api::ApiError* error) const {
  return Render(request, request.messages.size(), true, tokens, error);
}

int32_t ModelInstance::PrefixTokens(const api::ChatRequest& request, int32_t message_index, size_t content_bytes,
                                    const std::vector<int32_t>& full) const {
  if (message_index < 0 || static_cast<size_t>(message_index) >= request.messages.size()) return 0;
  api::ChatRequest cut = request;
  cut.messages.resize(static_cast<size_t>(message_index) + 1);
  std::string& content = cut.messages.back().content;
  if (content_bytes < content.size()) content.resize(content_bytes);
  std::vector<int32_t> part;
  api::ApiError ignored;
  if (!Render(cut, cut.messages.size(), false, &part, &ignored)) return 0;
  size_t n = 0;
  while (n < part.size() && n < full.size() && part[n] == full[n]) ++n;
  return static_cast<int32_t>(n);
}

GenerationRequest ModelInstance::ToGenerationRequest(std::vector<int32_t> prompt, const api::GenerationOptions& o,
                                                     int32_t default_max_tokens) const {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = o.max_tokens.value_or(default_max_tokens);
  SamplingParams& s = r.sampling;
  if (o.temperature) s.temperature = *o.temperature;
  if (o.top_p) s.top_p = *o.top_p;
  if (o.top_k) s.top_k = *o.top_k;
  if (o.min_p) s.min_p = *o.min_p;
  if (o.typical_p) s.typical_p = *o.typical_p;
  if (o.repeat_penalty) s.repeat_penalty = *o.repeat_penalty;
  if (o.repeat_last_n) s.penalty_last_n = *o.repeat_last_n;
  if (o.presence_penalty) s.presence_penalty = *o.presence_penalty;
  if (o.frequency_penalty) s.frequency_penalty = *o.frequency_penalty;
  if (o.seed) s.seed = *o.seed;
  s.logit_bias = o.logit_bias;
  s.logprobs = o.logprobs;
  s.n_probs = o.top_logprobs;
  r.stop = o.stop;
  r.n = o.n;
  r.json_mode = o.json_object;
  r.ignore_eos = o.ignore_eos;
  return r;
}

}  // namespace herd::server
