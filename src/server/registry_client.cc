#include "server/registry_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <vector>

#include "server/sha256.h"

namespace herd::server {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

bool IsLoopback(std::string_view host) {
  if (!host.empty() && host[0] == '[')
    host = host.substr(0, host.find(']') + 1);  // "[::1]:5000"
  else
    host = host.substr(0, host.rfind(':'));  // "127.0.0.1:5000"
  return host == "localhost" || host == "127.0.0.1" || host == "[::1]";
}

// One blob being downloaded: a temporary file and the running hash; removed unless committed.
struct Download {
  OllamaLayer layer;
  std::string temp, final_path;
  Sha256 hash;
  uint64_t received = 0;
  int fd = -1;
  bool committed = false;
  ~Download() {
    if (fd >= 0) ::close(fd);
    std::error_code ec;
    if (!committed && !temp.empty()) fs::remove(temp, ec);
  }
};

// Holds the blobs of a pull in the store (so a concurrent delete keeps them) until released.
class Holds {
 public:
  explicit Holds(OllamaStore& store) : store_(store) {}
  ~Holds() {
    for (const std::string& d : digests_) store_.Release(d);
  }
  void Add(const std::string& digest) {
    store_.Hold(digest);
    digests_.push_back(digest);
  }

 private:
  OllamaStore& store_;
  std::vector<std::string> digests_;
};

std::string Short(std::string_view body) {
  std::string s(body.substr(0, 200));
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

Status FetchBlob(const std::string& url, const PullOptions& o, const PullProgressFn& progress, Download* d) {
  static std::atomic<uint64_t> counter{0};
  d->temp = d->final_path + "-partial-herd-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  d->fd = ::open(d->temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (d->fd < 0) return IoError(d->temp + ": cannot create");
  const std::string status = "pulling " + d->layer.digest.substr(7, 12);
  auto last = Clock::now();
  progress({status, d->layer.digest, d->layer.size, 0});
  Status write_error;
  auto r = HttpGet(url, o.fetch, [&](std::string_view chunk) {
    if (o.fetch.cancelled && o.fetch.cancelled()) return false;
    size_t done = 0;
    while (done < chunk.size()) {
      const ssize_t n = ::write(d->fd, chunk.data() + done, chunk.size() - done);
      if (n <= 0) {
        write_error = IoError(d->temp + ": write failed (disk full?)");
        return false;
      }
      done += static_cast<size_t>(n);
    }
    d->hash.Update(chunk.data(), chunk.size());
    d->received += chunk.size();
    const auto now = Clock::now();
    if (now - last >= o.progress_interval) {
      last = now;
      progress({status, d->layer.digest, d->layer.size, d->received});
    }
    return true;
  });
  if (!write_error.ok()) return write_error;
  if (!r.ok()) return r.status();
  if (r->status != 200) {
    return IoError("pull " + d->layer.digest + ": the registry answered " + std::to_string(r->status) + " " +
                   Short(r->body));
  }
  if (::fsync(d->fd) != 0) return IoError(d->temp + ": fsync failed");
  ::close(d->fd);
  d->fd = -1;
  progress({status, d->layer.digest, d->layer.size, d->received});
  return Status::Ok();
}

}  // namespace

std::string RegistryBase(const OllamaName& name, bool insecure) {
  return (insecure || IsLoopback(name.host) ? "http://" : "https://") + name.host;
}

Result<PullResult> PullModel(OllamaStore& store, const OllamaName& name, const PullOptions& o,
                             const PullProgressFn& progress) {
  const std::string repo = RegistryBase(name, o.insecure) + "/v2/" + name.ns + "/" + name.model;
  progress({"pulling manifest", "", 0, 0});
  FetchOptions manifest_fetch = o.fetch;
  manifest_fetch.headers.push_back({"Accept", kOllamaManifestType});
  HERD_ASSIGN_OR_RETURN(FetchResponse got, HttpGet(repo + "/manifests/" + name.tag, manifest_fetch, {}, 4u << 20));
  if (got.status == 404) return NotFound("pull model manifest: file does not exist");
  if (got.status == 401 || got.status == 403) {
    return IoError("pull model manifest: the registry requires authentication (" + std::to_string(got.status) +
                   "), which herd does not support yet");
  }
  if (got.status != 200) {
    return IoError("pull model manifest: the registry answered " + std::to_string(got.status) + " " + Short(got.body));
  }
  auto parsed = ParseOllamaManifest(got.body);
  if (!parsed.ok()) return InvalidArgument("pull model manifest: " + parsed.status().message());
  PullResult result;
  result.manifest = std::move(parsed).value();
  if (result.manifest.Find(kOllamaModelLayer) == nullptr) {
    return InvalidArgument("model '" + name.Display() + "' has no GGUF model layer; herd cannot serve it");
  }

  std::error_code ec;
  fs::create_directories(fs::path(store.root()) / "blobs", ec);
  if (ec) return IoError(store.root() + "/blobs: cannot create: " + ec.message());
  Holds holds(store);
  std::vector<std::unique_ptr<Download>> downloads;
  for (const OllamaLayer& layer : result.manifest.Blobs()) {
    holds.Add(layer.digest);
    const std::string path = store.BlobPath(layer.digest);
    if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) == layer.size) {
      progress({"pulling " + layer.digest.substr(7, 12), layer.digest, layer.size, layer.size});
      continue;
    }
    bool duplicate = false;  // a manifest may name one blob twice
    for (const auto& d : downloads) duplicate = duplicate || d->layer.digest == layer.digest;
    if (duplicate) continue;
    auto d = std::make_unique<Download>();
    d->layer = layer;
    d->final_path = path;
    HERD_RETURN_IF_ERROR(FetchBlob(repo + "/blobs/" + layer.digest, o, progress, d.get()));
    result.downloaded += d->received;
    downloads.push_back(std::move(d));
  }

  progress({"verifying sha256 digest", "", 0, 0});
  for (const auto& d : downloads) {
    const std::string got_digest = "sha256:" + d->hash.HexDigest();
    if (got_digest != d->layer.digest) {
      return IoError("digest mismatch, file must be downloaded again: want " + d->layer.digest + ", got " + got_digest);
    }
  }
  for (const auto& d : downloads) {
    if (::rename(d->temp.c_str(), d->final_path.c_str()) != 0) return IoError(d->final_path + ": cannot rename");
    d->committed = true;
  }

  progress({"writing manifest", "", 0, 0});
  if (auto old = store.ReadManifest(name); old.ok()) {
    result.replaced = true;
    if (auto m = ParseOllamaManifest(*old); m.ok()) {
      for (const OllamaLayer& l : m->Blobs()) result.old_blobs.push_back(l.digest);
    }
  }
  HERD_RETURN_IF_ERROR(store.WriteManifest(name, got.body));
  return result;
}

}  // namespace herd::server
