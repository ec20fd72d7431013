#include "server/ollama_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "base/log.h"

namespace herd::server {
namespace fs = std::filesystem;

namespace {

bool ValidPart(std::string_view s, size_t max_len, bool host, bool tag) {
  if (s.empty() || s.size() > max_len) return false;
  const auto ok_first = [&](char c) { return std::isalnum(static_cast<unsigned char>(c)) || (tag && c == '_'); };
  if (!ok_first(s[0])) return false;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || (host && c == ':')) {
      continue;
    }
    return false;
  }
  return true;
}

// Appends rather than `"literal" + std::string&&`, which gcc 12 misreports under -Wrestrict.
Status BadName(std::string_view name, std::string_view what) {
  std::string m = "invalid model name '";
  m.append(name).append("': ").append(what);
  return InvalidArgument(std::move(m));
}

Result<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path.string() + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return IoError(path.string() + ": read failed");
  return text.str();
}

// Writes `text` to a temporary file next to `path`, syncs it and renames it onto `path`.
Status WriteAtomically(const fs::path& path, std::string_view text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return IoError(path.parent_path().string() + ": cannot create: " + ec.message());
  static std::atomic<uint64_t> counter{0};
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(tmp.string() + ": cannot create");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      ::close(fd);
      fs::remove(tmp, ec);
      return IoError(tmp.string() + ": write failed");
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || ::rename(tmp.c_str(), path.c_str()) != 0) {
    fs::remove(tmp, ec);
    return IoError(path.string() + ": cannot write the manifest");
  }
  return Status::Ok();
}

}  // namespace

std::string OllamaName::Display() const {
  const std::string model_tag = model + ":" + tag;
  if (host == "registry.ollama.ai") return ns == "library" ? model_tag : ns + "/" + model_tag;
  return host + "/" + ns + "/" + model_tag;
}

Result<OllamaName> ParseOllamaName(std::string_view name) {
  if (name.empty()) return InvalidArgument("the model name is empty");
  if (name.find('@') != std::string_view::npos) {
    return BadName(name, "digest references are not supported");
  }
  OllamaName out;
  std::string_view rest = name;
  const size_t slash = rest.rfind('/');
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    out.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (!ValidPart(out.tag, 80, false, true)) return BadName(name, "bad tag");
  }
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t s = rest.find('/', start);
    parts.push_back(rest.substr(start, s == std::string_view::npos ? std::string_view::npos : s - start));
    if (s == std::string_view::npos) break;
    start = s + 1;
  }
  if (parts.size() > 3) return BadName(name, "too many '/' parts");
  out.model = std::string(parts.back());
  if (parts.size() >= 2) out.ns = std::string(parts[parts.size() - 2]);
  if (parts.size() == 3) out.host = std::string(parts[0]);
  if (!ValidPart(out.model, 80, false, false)) return BadName(name, "bad model");
  if (!ValidPart(out.ns, 80, false, false)) return BadName(name, "bad namespace");
  if (!ValidPart(out.host, 350, true, false)) return BadName(name, "bad host");
  return out;
}

bool IsSha256Digest(std::string_view d) {
  if (d.size() != 71 || d.substr(0, 7) != "sha256:") return false;
  for (char c : d.substr(7)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

const OllamaLayer* OllamaManifest::Find(std::string_view media_type) const {
  for (const OllamaLayer& l : layers) {
    if (l.media_type == media_type) return &l;
  }
  return nullptr;
}

std::vector<OllamaLayer> OllamaManifest::Blobs() const {
  std::vector<OllamaLayer> out;
  if (!config.digest.empty()) out.push_back(config);
  out.insert(out.end(), layers.begin(), layers.end());
  return out;
}

Result<OllamaManifest> ParseOllamaManifest(std::string_view text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("the manifest is not a JSON object");
  const auto layer = [](const nlohmann::json& l, OllamaLayer* out) -> Status {
    if (!l.is_object()) return InvalidArgument("a manifest layer is not an object");
    const auto digest = l.find("digest");
    if (digest == l.end() || !digest->is_string() || !IsSha256Digest(digest->get<std::string>())) {
      return InvalidArgument("a manifest layer has no sha256 digest");
    }
    out->digest = digest->get<std::string>();
    const auto type = l.find("mediaType");
    if (type != l.end() && type->is_string()) out->media_type = type->get<std::string>();
    const auto size = l.find("size");
    if (size != l.end() && size->is_number_unsigned()) out->size = size->get<uint64_t>();
    return Status::Ok();
  };
  OllamaManifest m;
  const auto layers = j.find("layers");
  if (layers == j.end() || !layers->is_array()) return InvalidArgument("the manifest has no layers array");
  for (const auto& l : *layers) {
    OllamaLayer out;
    HERD_RETURN_IF_ERROR(layer(l, &out));
    m.layers.push_back(std::move(out));
  }
  const auto config = j.find("config");
  if (config != j.end() && !config->is_null()) HERD_RETURN_IF_ERROR(layer(*config, &m.config));
  return m;
}

std::string OllamaStore::ManifestPath(const OllamaName& n) const {
  return (fs::path(root_) / "manifests" / n.host / n.ns / n.model / n.tag).string();
}

std::string OllamaStore::BlobPath(std::string_view digest) const {
  std::string file(digest);
  if (const size_t c = file.find(':'); c != std::string::npos) file[c] = '-';
  return (fs::path(root_) / "blobs" / file).string();
}

Result<std::string> OllamaStore::ReadManifest(const OllamaName& name) const {
  std::error_code ec;
  const std::string path = ManifestPath(name);
  if (!fs::is_regular_file(path, ec)) return NotFound("model '" + name.Display() + "' not found");
  return ReadFile(path);
}

Status OllamaStore::WriteManifest(const OllamaName& name, std::string_view text) {
  std::lock_guard lock(mu_);
  return WriteAtomically(ManifestPath(name), text);
}

Status OllamaStore::Copy(const OllamaName& from, const OllamaName& to) {
  HERD_ASSIGN_OR_RETURN(std::string text, ReadManifest(from));
  return WriteManifest(to, text);
}

Status OllamaStore::Delete(const OllamaName& name) {
  HERD_ASSIGN_OR_RETURN(std::string text, ReadManifest(name));
  std::vector<std::string> digests;
  if (auto m = ParseOllamaManifest(text); m.ok()) {
    for (const OllamaLayer& l : m->Blobs()) digests.push_back(l.digest);
  }
  std::lock_guard lock(mu_);
  std::error_code ec;
  fs::path path = ManifestPath(name);
  if (!fs::remove(path, ec) || ec) return IoError(path.string() + ": cannot remove: " + ec.message());
  // Empty <model> and <namespace> and <host> folders go too (as Ollama prunes them).
  const fs::path manifests = fs::path(root_) / "manifests";
  for (path = path.parent_path(); path != manifests && fs::is_empty(path, ec) && !ec; path = path.parent_path()) {
    fs::remove(path, ec);
  }
  RemoveUnusedLocked(digests);
  return Status::Ok();
}

int OllamaStore::RemoveUnused(const std::vector<std::string>& digests) {
  std::lock_guard lock(mu_);
  return RemoveUnusedLocked(digests);
}

int OllamaStore::RemoveUnusedLocked(const std::vector<std::string>& digests) {
  std::set<std::string> referenced(held_.begin(), held_.end());
  const fs::path manifests = fs::path(root_) / "manifests";
  std::error_code ec;
  for (fs::recursive_directory_iterator it(manifests, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().filename().string().find(".tmp-") != std::string::npos) continue;
    auto text = ReadFile(it->path());
    if (!text.ok()) continue;
    auto m = ParseOllamaManifest(*text);
    if (!m.ok()) {
      // Unreadable manifests could reference anything: keep every blob.
      HERD_LOG(kWarn, "%s: %s; no blobs removed", it->path().c_str(), m.status().message().c_str());
      return 0;
    }
    for (const OllamaLayer& l : m->Blobs()) referenced.insert(l.digest);
  }
  int removed = 0;
  for (const std::string& d : digests) {
    if (!IsSha256Digest(d) || referenced.count(d) > 0) continue;
    if (fs::remove(BlobPath(d), ec) && !ec) ++removed;
  }
  return removed;
}

Result<ModelEntry> OllamaStore::Entry(const OllamaName& name, const ModelInstanceOptions& defaults) const {
  HERD_ASSIGN_OR_RETURN(std::string text, ReadManifest(name));
  HERD_ASSIGN_OR_RETURN(OllamaManifest m, ParseOllamaManifest(text));
  const OllamaLayer* model = m.Find(kOllamaModelLayer);
  if (model == nullptr) return NotFound("model '" + name.Display() + "' has no GGUF model layer");
  const std::string blob = BlobPath(model->digest);
  HERD_ASSIGN_OR_RETURN(ModelEntry e, FileEntry(blob, name.Display(), defaults));
  e.source = ModelSource::kOllama;
  e.digest = model->digest;
  struct stat st {};
  if (::stat(ManifestPath(name).c_str(), &st) == 0) e.modified = static_cast<int64_t>(st.st_mtime);
  return e;
}

void OllamaStore::Hold(const std::string& digest) {
  std::lock_guard lock(mu_);
  held_.insert(digest);
}

void OllamaStore::Release(const std::string& digest) {
  std::lock_guard lock(mu_);
  if (auto it = held_.find(digest); it != held_.end()) held_.erase(it);
}

}  // namespace herd::server
