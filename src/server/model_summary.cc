#include "server/model_summary.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "io/gguf.h"

namespace herd::server {
namespace {

using nlohmann::json;

// The shortest decimal that reads back as the same float (Ollama prints 1e-05, not
// 9.999999747378752e-06).
json FloatJson(double v) {
  const float f = static_cast<float>(v);
  char buf[32];
  for (int precision = 6; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(f));
    if (std::strtof(buf, nullptr) == f) break;
  }
  return json(std::strtod(buf, nullptr));
}

json ValueJson(const GgufValue& v, bool arrays) {
  switch (v.type) {
    case GgufType::kUint8:
    case GgufType::kUint16:
    case GgufType::kUint32:
    case GgufType::kUint64: return json(v.u);
    case GgufType::kInt8:
    case GgufType::kInt16:
    case GgufType::kInt32:
    case GgufType::kInt64: return json(v.i);
    case GgufType::kFloat32: return FloatJson(v.f);
    case GgufType::kFloat64: return json(v.f);
    case GgufType::kBool: return json(v.b);
    case GgufType::kString: return json(v.str);
    case GgufType::kArray: {
      if (!arrays) return json(nullptr);
      json out = json::array();
      for (const GgufValue& e : v.array) out.push_back(ValueJson(e, true));
      return out;
    }
  }
  return json(nullptr);
}

// The text of token `key`'s id, if the key and the token exist.
void AddTokenText(const GgufFile& f, const char* key, std::vector<std::string>* out) {
  const GgufValue* id = f.Find(key);
  const GgufValue* tokens = f.Find("tokenizer.ggml.tokens");
  if (id == nullptr || tokens == nullptr || tokens->type != GgufType::kArray) return;
  const uint64_t i =
      id->type == GgufType::kInt32 || id->type == GgufType::kInt64 ? static_cast<uint64_t>(id->i) : id->u;
  if (i >= tokens->array.size() || tokens->array[i].type != GgufType::kString) return;
  const std::string& text = tokens->array[i].str;
  for (const std::string& s : *out) {
    if (s == text) return;
  }
  out->push_back(text);
}

}  // namespace

std::string FileTypeName(uint32_t t) {
  static const char* const kNames[] = {
      "F32",    "F16",    "Q4_0",   "Q4_1",    "Q4_1_F16", "",       "",       "Q8_0",   "Q5_0",  "Q5_1",
      "Q2_K",   "Q3_K_S", "Q3_K_M", "Q3_K_L",  "Q4_K_S",   "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K",  "IQ2_XXS",
      "IQ2_XS", "Q2_K_S", "IQ3_XS", "IQ3_XXS", "IQ1_S",    "IQ4_NL", "IQ3_S",  "IQ3_M",  "IQ2_S", "IQ2_M",
      "IQ4_XS", "IQ1_M",  "BF16",   "",        "",         "",       "TQ1_0",  "TQ2_0"};
  return t < sizeof kNames / sizeof kNames[0] ? kNames[t] : "";
}

Result<ModelSummary> SummarizeModel(const std::string& path, bool verbose) {
  HERD_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> f, GgufFile::Open(path));
  ModelSummary s;
  if (auto arch = f->GetString("general.architecture"); arch.ok()) s.architecture = *arch;
  for (const GgufTensorInfo& t : f->tensors()) {
    uint64_t n = 1;
    for (int64_t d : t.ne) n *= static_cast<uint64_t>(d);
    s.parameter_count += n;
  }
  if (const GgufValue* ft = f->Find("general.file_type"); ft != nullptr) {
    s.quantization = FileTypeName(static_cast<uint32_t>(ft->type == GgufType::kInt32 ? ft->i : ft->u));
  }
  if (auto ctx = f->GetI64(s.architecture + ".context_length"); ctx.ok()) s.context_length = *ctx;
  if (auto tmpl = f->GetString("tokenizer.chat_template"); tmpl.ok()) s.chat_template = *tmpl;
  AddTokenText(*f, "tokenizer.ggml.eos_token_id", &s.stop_texts);
  AddTokenText(*f, "tokenizer.ggml.eot_token_id", &s.stop_texts);
  s.has_pooling = f->Has(s.architecture + ".pooling_type");
  for (const auto& [key, value] : f->metadata()) s.model_info[key] = ValueJson(value, verbose);
  if (!s.model_info.contains("general.parameter_count")) s.model_info["general.parameter_count"] = s.parameter_count;
  return s;
}

Result<std::shared_ptr<const ModelSummary>> SummaryCache::Get(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return NotFound(path + ": no such model file");
  const auto size = static_cast<uint64_t>(st.st_size);
  const auto mtime = static_cast<int64_t>(st.st_mtime);
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(path);
    if (it != cache_.end() && std::get<0>(it->second) == size && std::get<1>(it->second) == mtime) {
      return std::get<2>(it->second);
    }
  }
  HERD_ASSIGN_OR_RETURN(ModelSummary s, SummarizeModel(path, false));
  auto shared = std::make_shared<const ModelSummary>(std::move(s));
  std::lock_guard lock(mu_);
  cache_[path] = {size, mtime, shared};
  return shared;
}

}  // namespace herd::server
