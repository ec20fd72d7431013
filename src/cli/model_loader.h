// Shared by the subcommands that run a model: open the GGUF, build the backend (CPU or CUDA),
// load the model and a KV cache sized for n_ctx tokens. Fails the command with a clear message.
#pragma once

#include <memory>
#include <string>

#include "io/gguf.h"
#include "kernels/backend.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace CLI {
class App;
}

namespace herd::cli {

struct LoadedModel {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<KvCache> cache;
  int threads = 0;
  DeviceSpec device;
};

// kv_type: the KV cache element type (F16, F32 or Q8_0; see KvCacheConfig). The cache holds
// n_ctx tokens, or as many blocks as kv_budget_bytes allows when that is non-zero.
// device: "cpu", "cuda" or "cuda:N" (see ParseDevice).
LoadedModel LoadModelOrFail(const std::string& path, int threads, int32_t n_ctx, DType kv_type = DType::kF16,
                            size_t kv_budget_bytes = 0, const std::string& device = "cpu");

// The --device option (cpu | cuda | cuda:N, default cpu; $HERD_DEVICE when set) on `cmd`.
void AddDeviceOption(CLI::App* cmd, std::string* device);

// The --kv-type option (f16 | f32 | q8_0, default f16) on `cmd`, stored in *kv_type.
void AddKvTypeOption(CLI::App* cmd, std::string* kv_type);
// DType of a validated --kv-type value.
DType KvTypeFromName(const std::string& name);

// The demo model (tiny shape, built-in vocabulary), created once under the data directory
// ($HERD_DATA_DIR, else $XDG_DATA_HOME/herd, else ~/.local/share/herd). Returns its path.
std::string DemoModelPathOrFail();

}  // namespace herd::cli
