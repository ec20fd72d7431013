#include "server/model_catalog.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "base/log.h"

namespace herd::server {
namespace fs = std::filesystem;

namespace {

int64_t MtimeSeconds(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtime);
}

ModelEntry MakeEntry(const fs::path& file, std::string name, const ModelInstanceOptions& defaults, ModelSource source) {
  ModelEntry e;
  e.name = std::move(name);
  e.load = defaults;
  e.load.path = file.string();
  e.load.name = e.name;
  std::error_code ec;
  e.size_bytes = fs::file_size(file, ec);
  if (ec) e.size_bytes = 0;
  e.modified = MtimeSeconds(file);
  e.source = source;
  return e;
}

// The display name of the manifest at manifests/<host>/<namespace>/<model>/<tag>.
std::string OllamaName(const fs::path& relative) {
  std::vector<std::string> parts;
  for (const auto& p : relative) parts.push_back(p.string());
  if (parts.size() != 4) return {};
  const std::string model_tag = parts[2] + ":" + parts[3];
  if (parts[0] == "registry.ollama.ai") {
    return parts[1] == "library" ? model_tag : parts[1] + "/" + model_tag;
  }
  return parts[0] + "/" + parts[1] + "/" + model_tag;
}

}  // namespace

const char* ModelSourceName(ModelSource source) {
  switch (source) {
    case ModelSource::kFile: return "file";
    case ModelSource::kDirectory: return "directory";
    case ModelSource::kOllama: return "ollama";
  }
  return "file";
}

Result<ModelEntry> FileEntry(const std::string& path, const std::string& name, const ModelInstanceOptions& defaults) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return NotFound(path + ": no such model file");
  return MakeEntry(path, name.empty() ? fs::path(path).stem().string() : name, defaults, ModelSource::kFile);
}

Result<std::vector<ModelEntry>> ScanModelsDir(const std::string& dir, const ModelInstanceOptions& defaults) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return IoError(dir + ": cannot read the models directory: " + ec.message());
  std::vector<ModelEntry> out;
  for (const auto& f : it) {
    if (!f.is_regular_file(ec) || f.path().extension() != ".gguf") continue;
    out.push_back(MakeEntry(f.path(), f.path().stem().string(), defaults, ModelSource::kDirectory));
  }
  std::sort(out.begin(), out.end(), [](const ModelEntry& a, const ModelEntry& b) { return a.name < b.name; });
  return out;
}

std::string DefaultOllamaStore() {
  if (const char* env = std::getenv("OLLAMA_MODELS"); env != nullptr && *env != '\0') return env;
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return (fs::path(home) / ".ollama" / "models").string();
  }
  return {};
}

std::vector<ModelEntry> ScanOllamaStore(const std::string& root, const ModelInstanceOptions& defaults) {
  std::vector<ModelEntry> out;
  const fs::path manifests = fs::path(root) / "manifests";
  std::error_code ec;
  if (root.empty() || !fs::is_directory(manifests, ec)) return out;
  for (fs::recursive_directory_iterator it(manifests, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = OllamaName(fs::relative(it->path(), manifests, ec));
    if (name.empty()) continue;
    std::ifstream in(it->path());
    std::stringstream text;
    text << in.rdbuf();
    const auto manifest = nlohmann::json::parse(text.str(), nullptr, false);
    if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("layers") ||
        !manifest["layers"].is_array()) {
      HERD_LOG(kWarn, "%s: not an Ollama manifest, skipped", it->path().c_str());
      continue;
    }
    for (const auto& layer : manifest["layers"]) {
      if (!layer.is_object() || layer.value("mediaType", "") != "application/vnd.ollama.image.model") continue;
      std::string digest = layer.value("digest", "");
      if (digest.rfind("sha256:", 0) != 0) break;
      const fs::path blob = fs::path(root) / "blobs" / ("sha256-" + digest.substr(7));
      if (!fs::is_regular_file(blob, ec)) {
        HERD_LOG(kWarn, "%s: blob %s is missing, skipped", name.c_str(), blob.c_str());
        break;
      }
      ModelEntry e = MakeEntry(blob, name, defaults, ModelSource::kOllama);
      e.modified = MtimeSeconds(it->path());
      e.digest = std::move(digest);
      out.push_back(std::move(e));
      break;
    }
  }
  std::sort(out.begin(), out.end(), [](const ModelEntry& a, const ModelEntry& b) { return a.name < b.name; });
  return out;
}

std::string OllamaFullName(const std::string& name) {
  const size_t slash = name.rfind('/');
  const size_t colon = name.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) return name;
  return name + ":latest";
}

}  // namespace herd::server
