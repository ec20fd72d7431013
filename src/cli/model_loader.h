// Shared by the subcommands that run a model: open the GGUF, build the CPU backend, load the
// model and a KV cache sized for n_ctx tokens. Fails the command with a clear message.
#pragma once

#include <memory>
#include <string>

#include "io/gguf.h"
#include "kernels/backend.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace herd::cli {

struct LoadedModel {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<KvCache> cache;
  int threads = 0;
};

LoadedModel LoadModelOrFail(const std::string& path, int threads, int32_t n_ctx);

// The demo model (tiny shape, built-in vocabulary), created once under the data directory
// ($HERD_DATA_DIR, else $XDG_DATA_HOME/herd, else ~/.local/share/herd). Returns its path.
std::string DemoModelPathOrFail();

}  // namespace herd::cli
