#include "cli/model_loader.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>

#include "base/thread_pool.h"
#include "cli/commands.h"
#include "model/make_model.h"

namespace herd::cli {

void AddKvTypeOption(CLI::App* cmd, std::string* kv_type) {
  cmd->add_option("--kv-type", *kv_type, "KV cache type: f16, f32 or q8_0 (8-bit, half of f16's memory)")
      ->check(CLI::IsMember({"f16", "f32", "q8_0"}, CLI::ignore_case))
      ->capture_default_str();
}

DType KvTypeFromName(const std::string& name) {
  const std::optional<DType> t = DTypeFromName(name);
  if (!t || (*t != DType::kF16 && *t != DType::kF32 && *t != DType::kQ8_0)) {
    Fail("--kv-type " + name + ": use f16, f32 or q8_0");
  }
  return *t;
}

void AddDeviceOption(CLI::App* cmd, std::string* device) {
  if (const char* env = std::getenv("HERD_DEVICE"); env != nullptr && *env != '\0') *device = env;
  cmd->add_option("--device", *device, "Where the model runs: cpu, cuda or cuda:N ($HERD_DEVICE)")
      ->capture_default_str();
}

LoadedModel LoadModelOrFail(const std::string& path, int threads, int32_t n_ctx, DType kv_type, size_t kv_budget_bytes,
                            const std::string& device) {
  LoadedModel lm;
  auto spec = ParseDevice(device);
  if (!spec.ok()) Fail("--device: " + spec.status().message());
  lm.device = *spec;
  auto file = GgufFile::Open(path);
  if (!file.ok()) Fail(file.status().message());
  lm.file = std::move(file).value();
  lm.threads = threads > 0 ? threads : ThreadPool::DefaultThreadCount();
  auto backend = MakeBackend(lm.device, lm.threads);
  if (!backend.ok()) Fail(backend.status().message());
  lm.backend = std::move(backend).value();
  auto model = LoadModel(*lm.file, lm.backend.get());
  if (!model.ok()) Fail(model.status().message());
  lm.model = std::move(model).value();
  const ModelConfig& c = lm.model->config();
  KvCacheConfig kc{c.n_layer, c.n_head_kv, c.head_dim, 16, 0, kv_type};
  const int32_t ctx = std::max(n_ctx, 16);
  kc.n_blocks = kv_budget_bytes > 0 ? KvCacheConfig::BlocksForBudget(kc, kv_budget_bytes)
                                    : (ctx + kc.block_size - 1) / kc.block_size;
  if (kc.n_blocks <= 0)
    Fail(StrFormat("KV budget of %zu bytes holds no block of %zu bytes", kv_budget_bytes, kc.BytesPerBlock()));
  auto cache = KvCache::Create(lm.backend.get(), kc);
  if (!cache.ok()) Fail(path + ": " + cache.status().message());
  lm.cache = std::move(cache).value();
  return lm;
}

std::string DemoModelPathOrFail() {
  namespace fs = std::filesystem;
  fs::path dir;
  if (const char* d = std::getenv("HERD_DATA_DIR")) {
    dir = d;
  } else if (const char* x = std::getenv("XDG_DATA_HOME")) {
    dir = fs::path(x) / "herd";
  } else if (const char* h = std::getenv("HOME")) {
    dir = fs::path(h) / ".local/share/herd";
  } else {
    dir = fs::temp_directory_path() / "herd";
  }
  const fs::path path = dir / "demo-tiny-q8_0.gguf";
  if (fs::exists(path)) return path.string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) Fail("cannot create data directory " + dir.string() + ": " + ec.message());
  std::fprintf(stderr, "herd: creating the demo model (random weights) at %s\n", path.string().c_str());
  MakeModelOptions o;
  o.shape = "tiny";
  o.file_type = "Q8_0";
  o.output_path = path.string() + ".tmp";
  Status s = MakeRandomModel(o);
  if (!s.ok()) Fail(s.message());
  fs::rename(o.output_path, path, ec);
  if (ec) Fail("cannot move demo model into place: " + ec.message());
  return path.string();
}

}  // namespace herd::cli
