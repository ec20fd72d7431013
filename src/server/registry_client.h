// Pulls a model from an Ollama-style registry (the OCI distribution API) into an OllamaStore:
//   GET <base>/v2/<namespace>/<model>/manifests/<tag>   (Accept: Docker manifest v2)
//   GET <base>/v2/<namespace>/<model>/blobs/<digest>    for the config and every layer
// Blobs already in the store (right size) are skipped. Each download goes to a temporary
// "sha256-<hex>-partial-herd-..." file, hashed as it arrives; after all downloads each digest is
// compared and the file renamed to blobs/sha256-<hex> only when it matches. The manifest is
// written last, so a failed or cancelled pull never leaves a manifest that names missing or
// corrupt blobs (its temporary files are removed; there is no resume).
//
// The registry is <scheme>://<host of the name> (registry.ollama.ai by default): http when
// `insecure` or when the host is localhost / 127.0.0.1 / [::1] (any port), https otherwise.
// Registry token authentication (401 + WWW-Authenticate) is not implemented: such a registry
// gets a clear error.
//
// Blocking (network and disk): run it on a thread of its own.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "protocols/ollama/ollama_models.h"
#include "server/http_fetch.h"
#include "server/ollama_store.h"

namespace herd::server {

// "http://127.0.0.1:5000", "https://registry.ollama.ai".
std::string RegistryBase(const OllamaName& name, bool insecure);

struct PullOptions {
  bool insecure = false;
  FetchOptions fetch;  // timeout per network step, cancellation, extra CA file
  // Least time between two progress events of one blob (its first and last are always sent).
  std::chrono::milliseconds progress_interval{250};
};

struct PullResult {
  OllamaManifest manifest;
  bool replaced = false;  // an older manifest of that name was replaced
  // The older manifest's blobs: the caller removes those no manifest uses any more
  // (OllamaStore::RemoveUnused) once no loaded model maps them.
  std::vector<std::string> old_blobs;
  uint64_t downloaded = 0;  // bytes fetched (skipped blobs excluded)
};

// Progress, in Ollama's order: "pulling manifest"; per blob "pulling <first 12 hex digits>" with
// digest/total/completed (throttled); "verifying sha256 digest"; "writing manifest"; the caller
// then sends "removing any unused layers" (when a manifest was replaced) and "success".
using PullProgressFn = std::function<void(const ollama::PullProgress&)>;

// Errors: NotFound (no such model or tag on the registry), InvalidArgument (a manifest herd cannot
// use: malformed, no GGUF layer), IoError (network, disk,
// digest mismatch: "digest mismatch, file must be downloaded again: want ..., got ..."),
// kCancelled.
Result<PullResult> PullModel(OllamaStore& store, const OllamaName& name, const PullOptions& options,
                             const PullProgressFn& progress);

}  // namespace herd::server
