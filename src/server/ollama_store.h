// Writing to Ollama's model store (reading it for serving is model_catalog.h's ScanOllamaStore).
//
// Layout under the root ($OLLAMA_MODELS, ~/.ollama/models, or `herd serve --ollama-models`):
//   manifests/<host>/<namespace>/<model>/<tag>   the registry's manifest, byte for byte (Docker
//                                                image manifest v2: "config" + "layers", each a
//                                                {mediaType, digest, size})
//   blobs/sha256-<64 hex>                        content-addressed layers (the GGUF, template,
//                                                params, license, config JSON)
// Names follow Ollama: "model" = registry.ollama.ai/library/model:latest, "ns/model:tag",
// "host[:port]/ns/model:tag".
//
// Contract: manifests are written to a temporary file and renamed into place, so a reader
// sees the old or the new manifest, never a partial one. Deleting a model removes its manifest
// and those of its blobs that no other manifest references and no pull in progress holds
// (Hold/Release); blobs of other models and files not named like blobs are never touched.
// All writes of one store object are serialized by its mutex. Costs: Delete reads every
// manifest of the store (small JSON files).
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/model_catalog.h"

namespace herd::server {

inline constexpr const char* kOllamaModelLayer = "application/vnd.ollama.image.model";
inline constexpr const char* kOllamaManifestType = "application/vnd.docker.distribution.manifest.v2+json";

struct OllamaName {
  std::string host = "registry.ollama.ai";
  std::string ns = "library";
  std::string model;
  std::string tag = "latest";

  // The name the catalog and the API use: "model:tag" for registry.ollama.ai/library,
  // "ns/model:tag" for its other namespaces, "host/ns/model:tag" otherwise.
  std::string Display() const;
};

// Parses "model", "model:tag", "ns/model[:tag]", "host[:port]/ns/model[:tag]". Each part must
// start with a letter or digit and hold only letters, digits, '_', '-', '.' (the host also ':'),
// at most 80 characters (host 350). Errors: InvalidArgument naming the bad part.
Result<OllamaName> ParseOllamaName(std::string_view name);

// "sha256:" followed by 64 lower-case hex digits.
bool IsSha256Digest(std::string_view digest);

struct OllamaLayer {
  std::string media_type;
  std::string digest;  // "sha256:<hex>"
  uint64_t size = 0;
};

struct OllamaManifest {
  OllamaLayer config;  // digest empty if the manifest has none
  std::vector<OllamaLayer> layers;
  const OllamaLayer* Find(std::string_view media_type) const;
  // The config blob (if any) and every layer: what a pull downloads and a delete may remove.
  std::vector<OllamaLayer> Blobs() const;
};

// Errors: InvalidArgument (not JSON, no layers array, a digest that is not sha256).
Result<OllamaManifest> ParseOllamaManifest(std::string_view text);

class OllamaStore {
 public:
  explicit OllamaStore(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  std::string ManifestPath(const OllamaName& name) const;
  std::string BlobPath(std::string_view digest) const;  // digest: "sha256:<hex>"

  // Errors: NotFound (no such manifest), IoError.
  Result<std::string> ReadManifest(const OllamaName& name) const;
  Status WriteManifest(const OllamaName& name, std::string_view text);
  // Copies `from`'s manifest to `to` (the blobs are shared). Errors: NotFound, IoError.
  Status Copy(const OllamaName& from, const OllamaName& to);
  // Removes the manifest (and empty folders above it), then the blobs of its layers that no
  // other manifest references and no pull holds. Errors: NotFound, IoError.
  Status Delete(const OllamaName& name);
  // Removes the blobs among `digests` that no manifest references and no pull holds (after a
  // re-pull replaced a manifest). Returns how many were removed.
  int RemoveUnused(const std::vector<std::string>& digests);

  // The servable entry of a manifest: its model layer's blob. Errors: NotFound (no manifest,
  // no model layer or its blob missing), InvalidArgument (malformed manifest).
  Result<ModelEntry> Entry(const OllamaName& name, const ModelInstanceOptions& defaults) const;

  // A pull in progress holds the blobs it writes so that a concurrent delete keeps them.
  void Hold(const std::string& digest);
  void Release(const std::string& digest);

 private:
  int RemoveUnusedLocked(const std::vector<std::string>& digests);  // mu_ held

  std::string root_;
  std::mutex mu_;
  std::multiset<std::string> held_;
};

}  // namespace herd::server
