#include "server/ollama_admin_routes.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "base/log.h"
#include "protocols/ollama/ollama_api.h"
#include "protocols/ollama/ollama_models.h"
#include "server/exchange_util.h"
#include "server/model_summary.h"
#include "server/ollama_store.h"
#include "server/registry_client.h"

namespace herd::server {
namespace {

using nlohmann::json;

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void RespondError(Responder& r, const api::ApiError& e) {
  r.Respond(ErrorResponse(api::HttpStatusFor(e.kind), ollama::ErrorBody(e).dump(), e.kind));
}

void RespondConflict(Responder& r, const std::string& message) {
  r.Respond(HttpResponse::Json(409, ollama::ErrorBody({api::ErrorKind::kInvalidRequest, message, "", ""}).dump()));
}

api::ApiError NotFoundError(const std::string& name) {
  return {api::ErrorKind::kNotFound, "model '" + name + "' not found", "model", ""};
}

bool ParseBody(const HttpRequest& req, Responder& r, json* body) {
  *body = json::parse(req.body, nullptr, false);
  if (!body->is_discarded()) return true;
  RespondError(r, api::InvalidRequest("invalid JSON in the request body"));
  return false;
}

// Shared by the routes: the store objects (one per root, so pulls and deletes share holds and
// the write lock), the summary cache and the pull threads (joined when the routes go).
struct AdminState {
  explicit AdminState(ModelRegistry& m) : models(m) {}
  ~AdminState() {
    stopping = true;
    std::list<Worker> all;
    {
      std::lock_guard lock(mu);
      all.swap(workers);
    }
    for (auto& w : all) {
      // The last reference to this state can go on a worker thread (its request's responder
      // holds the connection, which holds the router and so these routes): that thread is
      // finishing; it cannot join itself.
      if (w.thread.get_id() == std::this_thread::get_id()) {
        w.thread.detach();
      } else {
        w.thread.join();
      }
    }
  }

  std::shared_ptr<OllamaStore> Store() {
    const std::string root = models.ollama_store();
    if (root.empty()) return nullptr;
    std::lock_guard lock(mu);
    auto& s = stores[root];
    if (!s) s = std::make_shared<OllamaStore>(root);
    return s;
  }

  // Starts `work` on a thread of its own (the routes read files, write the store and download:
  // never on an I/O thread); joins the threads of finished work first.
  void Spawn(std::function<void()> work) {
    std::lock_guard lock(mu);
    for (auto it = workers.begin(); it != workers.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = workers.erase(it);
      } else {
        ++it;
      }
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    workers.push_back({std::thread([work = std::move(work), done] {
                         work();
                         *done = true;
                       }),
                       done});
  }

  ModelRegistry& models;
  SummaryCache summaries;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::map<std::string, std::shared_ptr<OllamaStore>> stores;
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::list<Worker> workers;
};

ollama::ModelDetails Details(const ModelSummary& s) {
  ollama::ModelDetails d;
  d.family = s.architecture;
  if (!s.architecture.empty()) d.families = {s.architecture};
  d.parameter_size = ollama::HumanNumber(s.parameter_count);
  d.quantization_level = s.quantization;
  return d;
}

// The context a loaded model would get: the configured n_ctx capped at the training context.
int32_t ContextFor(const ModelEntry& e, const ModelSummary& s) {
  const int64_t trained = s.context_length > 0 ? s.context_length : e.load.n_ctx;
  return static_cast<int32_t>(std::min<int64_t>(e.load.n_ctx, trained));
}

std::string Quoted(const std::string& s) { return json(s).dump(); }  // "..." with JSON escapes

// The text of the manifest layer `media_type` of an Ollama-store model ("" if none).
std::string LayerText(AdminState& st, const ModelEntry& e, const char* media_type) {
  auto store = st.Store();
  auto name = ParseOllamaName(e.name);
  if (!store || !name.ok() || e.source != ModelSource::kOllama) return {};
  auto text = store->ReadManifest(*name);
  if (!text.ok()) return {};
  auto m = ParseOllamaManifest(*text);
  const OllamaLayer* layer = m.ok() ? m->Find(media_type) : nullptr;
  if (layer == nullptr || layer->size > (1u << 20)) return {};
  std::FILE* f = std::fopen(store->BlobPath(layer->digest).c_str(), "rb");
  if (f == nullptr) return {};
  std::string out(layer->size, '\0');
  out.resize(std::fread(out.data(), 1, out.size(), f));
  std::fclose(f);
  return out;
}

void Show(AdminState& st, const HttpRequest& req, const std::shared_ptr<Responder>& r) {
  json body;
  if (!ParseBody(req, *r, &body)) return;
  ollama::ShowRequest show;
  api::ApiError error;
  if (!ollama::ParseShowRequest(body, &show, &error)) return RespondError(*r, error);
  const auto entry = st.models.Find(show.model);
  if (!entry) return RespondError(*r, NotFoundError(show.model));
  std::shared_ptr<const ModelSummary> summary;
  if (show.verbose) {
    auto full = SummarizeModel(entry->load.path, true);
    if (!full.ok()) return RespondError(*r, {api::ErrorKind::kInternal, full.status().message(), "", ""});
    summary = std::make_shared<const ModelSummary>(std::move(full).value());
  } else {
    auto cached = st.summaries.Get(entry->load.path);
    if (!cached.ok()) return RespondError(*r, {api::ErrorKind::kInternal, cached.status().message(), "", ""});
    summary = *cached;
  }
  ollama::ShowResponse out;
  out.details = Details(*summary);
  out.template_text = summary->chat_template;
  out.model_info = summary->model_info;
  out.capabilities = {"completion"};
  if (summary->has_pooling) out.capabilities.push_back("embedding");
  out.modified_at = ollama::Rfc3339(entry->modified);
  out.license = LayerText(st, *entry, "application/vnd.ollama.image.license");
  // The parameters herd applies: its context length and the tokens generation stops at.
  char line[512];
  std::snprintf(line, sizeof line, "%-30s %d", "num_ctx", ContextFor(*entry, *summary));
  out.parameters = line;
  for (const std::string& stop : summary->stop_texts) {
    std::snprintf(line, sizeof line, "\n%-30s %s", "stop", Quoted(stop).c_str());
    out.parameters += line;
  }
  out.modelfile =
      "# Modelfile generated by herd (\"ollama show\")\n# To build a new Modelfile based on this one, "
      "replace the FROM line with:\n# FROM " +
      entry->name + "\n\nFROM " + entry->load.path + "\n";
  // TEMPLATE holds the GGUF's Jinja2 chat template, which herd renders (Ollama's own models
  // carry a Go template in a separate layer that herd does not use).
  if (!summary->chat_template.empty()) out.modelfile += "TEMPLATE \"\"\"" + summary->chat_template + "\"\"\"\n";
  out.modelfile += "PARAMETER num_ctx " + std::to_string(ContextFor(*entry, *summary)) + "\n";
  for (const std::string& stop : summary->stop_texts) out.modelfile += "PARAMETER stop " + Quoted(stop) + "\n";
  if (!out.license.empty()) out.modelfile += "LICENSE \"\"\"" + out.license + "\"\"\"\n";
  r->Respond(HttpResponse::Json(200, ollama::ShowJson(out).dump()));
}

// Every model the server can serve (loaded or not), with details read from the GGUF header
// (cached per file): family, parameter size, quantization level.
void Tags(AdminState& st, const std::shared_ptr<Responder>& r) {
  nlohmann::json list = nlohmann::json::array();
  for (const ModelEntry& m : st.models.Entries()) {
    ollama::ModelDetails details;
    details.family = "llama";
    if (auto summary = st.summaries.Get(m.load.path); summary.ok()) details = Details(**summary);
    list.push_back({{"name", m.name},
                    {"model", m.name},
                    {"modified_at", ollama::CreatedAt(m.modified * 1000000000LL)},
                    {"size", m.size_bytes},
                    {"digest", m.digest.rfind("sha256:", 0) == 0 ? m.digest.substr(7) : m.digest},
                    {"details", ollama::DetailsJson(details)}});
  }
  r->Respond(HttpResponse::Json(200, nlohmann::json{{"models", list}}.dump()));
}

void Ps(AdminState& st, const std::shared_ptr<Responder>& r) {
  std::vector<ollama::RunningModel> running;
  std::vector<int64_t> expiry;  // unix seconds of running[i]
  const int64_t now = UnixNow();
  for (const ModelStatus& s : st.models.Status()) {
    if (s.state != ModelState::kLoaded) continue;
    // In use: now (it expires keep_alive after its last request ends); forever: Go's far future.
    const int64_t expires = s.expires_at < 0 ? now + 9223372036LL : s.expires_at == 0 ? now : s.expires_at;
    const uint64_t size = s.device_bytes > 0 ? s.device_bytes : s.memory_bytes;
    if (s.replica > 0 && !running.empty() && running.back().name == s.entry.name) {
      // Another replica of the model before it (Status lists them in order): one element per model,
      // as Ollama has, holding the replicas' memory together; it expires with the last of them.
      running.back().size += size;
      running.back().size_vram += s.device_bytes;
      if (expires > expiry.back()) {
        expiry.back() = expires;
        running.back().expires_at = ollama::Rfc3339(expires);
      }
      continue;
    }
    ollama::RunningModel m;
    m.name = s.entry.name;
    m.digest = s.entry.digest.rfind("sha256:", 0) == 0 ? s.entry.digest.substr(7) : s.entry.digest;
    // Ollama: size = the model's memory, size_vram = the part of it on the GPU.
    m.size = size;
    m.size_vram = s.device_bytes;
    if (auto summary = st.summaries.Get(s.entry.load.path); summary.ok()) m.details = Details(**summary);
    m.expires_at = ollama::Rfc3339(expires);
    m.context_length = s.n_ctx;
    running.push_back(std::move(m));
    expiry.push_back(expires);
  }
  r->Respond(HttpResponse::Json(200, ollama::PsJson(running).dump()));
}

void Copy(AdminState& st, const HttpRequest& req, const std::shared_ptr<Responder>& r) {
  json body;
  if (!ParseBody(req, *r, &body)) return;
  ollama::CopyRequest copy;
  api::ApiError error;
  if (!ollama::ParseCopyRequest(body, &copy, &error)) return RespondError(*r, error);
  const auto source = st.models.Find(copy.source);
  if (!source) return RespondError(*r, NotFoundError(copy.source));
  auto to = ParseOllamaName(copy.destination);
  if (!to.ok()) return RespondError(*r, api::InvalidRequest(to.status().message(), "destination"));
  ModelEntry e = *source;
  e.name = to->Display();
  e.load.name = e.name;
  e.preload = false;
  e.modified = UnixNow();
  if (e.name == source->name) return r->Respond(HttpResponse{200, {}, ""});
  auto store = st.Store();
  auto from = ParseOllamaName(source->name);
  const bool persist = source->source == ModelSource::kOllama && store && from.ok();
  if (!st.models.Register(e)) {
    return RespondConflict(*r, "model '" + e.name + "' is loaded; unload it (keep_alive 0) before replacing it");
  }
  if (persist) {  // a new manifest with the same layers, so the copy survives a restart
    const Status copied = store->Copy(*from, *to);
    if (!copied.ok()) {
      st.models.Unregister(e.name);
      return RespondError(*r, {api::ErrorKind::kInternal, copied.message(), "", ""});
    }
  }
  r->Respond(HttpResponse{200, {}, ""});
}

void Delete(AdminState& st, const HttpRequest& req, const std::shared_ptr<Responder>& r) {
  json body;
  if (!ParseBody(req, *r, &body)) return;
  std::string model;
  api::ApiError error;
  if (!ollama::ParseDeleteRequest(body, &model, &error)) return RespondError(*r, error);
  auto store = st.Store();
  const auto entry = st.models.Find(model);
  auto name = ParseOllamaName(entry ? entry->name : model);
  if (entry) {
    if (!st.models.Unregister(entry->name)) {
      for (const ModelStatus& s : st.models.Status()) {
        if (s.entry.name != entry->name) continue;
        return RespondConflict(
            *r, "model '" + entry->name + "' is " +
                    (s.state == ModelState::kLoading ? std::string("loading")
                     : s.active_leases > 0           ? "in use by " + std::to_string(s.active_leases) + " request(s)"
                                                     : std::string("pinned in memory")) +
                    "; retry when it is idle");
      }
    }
    if (entry->source != ModelSource::kOllama || !store || !name.ok()) return r->Respond(HttpResponse{200, {}, ""});
  }
  // An Ollama-store model (also one the registry does not list): its manifest and unshared blobs.
  if (!store || !name.ok()) return RespondError(*r, NotFoundError(model));
  const Status deleted = store->Delete(*name);
  if (deleted.code() == StatusCode::kNotFound) {
    return entry ? r->Respond(HttpResponse{200, {}, ""}) : RespondError(*r, NotFoundError(model));
  }
  if (!deleted.ok()) return RespondError(*r, {api::ErrorKind::kInternal, deleted.message(), "", ""});
  r->Respond(HttpResponse{200, {}, ""});
}

void Pull(AdminState& st, const HttpRequest& req, const std::shared_ptr<Responder>& r) {
  json body;
  if (!ParseBody(req, *r, &body)) return;
  ollama::PullRequest pull;
  api::ApiError error;
  if (!ollama::ParsePullRequest(body, &pull, &error)) return RespondError(*r, error);
  auto store = st.Store();
  if (!store) {
    return RespondError(*r, api::InvalidRequest("no Ollama model store to pull into (herd serve --ollama-models DIR; "
                                                "not with --no-ollama)",
                                                "model"));
  }
  auto name = ParseOllamaName(pull.model);
  if (!name.ok()) return RespondError(*r, api::InvalidRequest(name.status().message(), "model"));
  std::shared_ptr<ResponseStream> ndjson = pull.stream ? r->StartNdjson() : nullptr;
  AdminState* state = &st;
  {
    PullOptions o;
    o.insecure = pull.insecure;
    o.fetch.cancelled = [state, r] { return state->stopping.load() || r->cancelled(); };
    const auto progress = [&](const ollama::PullProgress& p) {
      if (ndjson) ndjson->WriteNdjson(ollama::ProgressJson(p).dump());
    };
    auto pulled = PullModel(*store, *name, o, progress);
    Status status = pulled.ok() ? Status::Ok() : pulled.status();
    if (pulled.ok()) {
      auto entry = store->Entry(*name, state->models.entry_defaults());
      bool registered = false;
      if (!entry.ok()) {
        status = entry.status();
      } else if (!(registered = state->models.Register(std::move(entry).value()))) {
        HERD_LOG(kWarn, "pulled '%s' while it is loaded: the loaded version serves until the server restarts",
                 name->Display().c_str());
      }
      if (status.ok() && pulled->replaced) {
        progress({"removing any unused layers", "", 0, 0});
        // Blobs of a version still loaded stay until a later delete or pull.
        if (registered) store->RemoveUnused(pulled->old_blobs);
      }
    }
    if (!status.ok()) {
      HERD_LOG(kWarn, "pull '%s' failed: %s", name->Display().c_str(), status.message().c_str());
      const api::ApiError e{api::FromStatus(status).kind, status.message(), "", ""};
      if (!ndjson) return RespondError(*r, e);
      ndjson->WriteNdjson(ollama::ErrorBody(e).dump());
      return ndjson->Finish();
    }
    HERD_LOG(kInfo, "pulled '%s' (%llu bytes downloaded)", name->Display().c_str(),
             static_cast<unsigned long long>(pulled->downloaded));
    const std::string success = ollama::ProgressJson({"success", "", 0, 0}).dump();
    if (!ndjson) return r->Respond(HttpResponse::Json(200, success));
    ndjson->WriteNdjson(success);
    ndjson->Finish();
  }
}

}  // namespace

void AddOllamaAdminRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys) {
  auto st = std::make_shared<AdminState>(models);
  const auto reject = [](const api::ApiError& e) { return HttpResponse::Json(401, ollama::ErrorBody(e).dump()); };
  const auto route = [&](const char* method, const char* path,
                         std::function<void(AdminState&, HttpRequest&, const std::shared_ptr<Responder>&)> f) {
    router.Add(method, path, RequireKey(keys, reject, [st, f](HttpRequest& req, std::shared_ptr<Responder> r) {
                 AdminState* state = st.get();  // outlives the worker: ~AdminState joins it
                 state->Spawn([state, f, req, r]() mutable { f(*state, req, r); });
               }));
  };
  route("POST", "/api/show", Show);
  route("GET", "/api/ps", [](AdminState& s, HttpRequest&, const std::shared_ptr<Responder>& r) { Ps(s, r); });
  route("GET", "/api/tags", [](AdminState& s, HttpRequest&, const std::shared_ptr<Responder>& r) { Tags(s, r); });
  route("POST", "/api/copy", Copy);
  route("DELETE", "/api/delete", Delete);
  route("POST", "/api/pull", Pull);
}

}  // namespace herd::server
