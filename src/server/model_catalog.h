// Where models come from: GGUF files named on the command line, a models directory, and the
// user's Ollama store. A ModelEntry names a model the server can load; nothing is loaded here.
//
// Ollama's store (`$OLLAMA_MODELS`, default `~/.ollama/models`) holds manifests at
// `manifests/<host>/<namespace>/<model>/<tag>` (JSON: a layer with media type
// "application/vnd.ollama.image.model" names the GGUF blob by digest) and blobs at
// `blobs/sha256-<hex>`. Names follow Ollama: `model:tag` for registry.ollama.ai/library,
// `namespace/model:tag` for other namespaces, `host/namespace/model:tag` for other hosts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "server/model_instance.h"

namespace herd::server {

enum class ModelSource { kFile, kDirectory, kOllama };
const char* ModelSourceName(ModelSource source);

struct ModelEntry {
  std::string name;           // the API's model id
  ModelInstanceOptions load;  // load.path is the GGUF file; load.name == name
  uint64_t size_bytes = 0;    // file size
  int64_t modified = 0;       // file mtime, unix seconds
  std::string digest;         // "sha256:<hex>" for Ollama blobs, else empty
  ModelSource source = ModelSource::kFile;
  bool preload = false;  // load at start and keep loaded (models named with -m)
  // Replicas: one instance per device (two GPUs, or a device named twice), requests routed to
  // the least busy (replica_picker.h). Empty: one instance on load.device.
  std::vector<DeviceSpec> devices;
};

// An entry for one GGUF file; `name` empty: the file name without ".gguf". Errors: NotFound.
Result<ModelEntry> FileEntry(const std::string& path, const std::string& name, const ModelInstanceOptions& defaults);

// Every *.gguf directly in `dir` (sorted by name). Errors: the directory cannot be read.
Result<std::vector<ModelEntry>> ScanModelsDir(const std::string& dir, const ModelInstanceOptions& defaults);

// The Ollama store root: $OLLAMA_MODELS, else $HOME/.ollama/models (empty if neither is set).
std::string DefaultOllamaStore();

// Every manifest in the store with a GGUF model layer whose blob exists (sorted by name). A
// missing store is empty, not an error; unreadable or malformed manifests are skipped with a
// warning in the log.
std::vector<ModelEntry> ScanOllamaStore(const std::string& root, const ModelInstanceOptions& defaults);

// Ollama's name normalization: "llama3" -> "llama3:latest"; names with a tag are unchanged.
std::string OllamaFullName(const std::string& name);

}  // namespace herd::server
