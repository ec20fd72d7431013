#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "io/gguf.h"
#include "model/arch/architectures.h"

namespace herd {
namespace {

std::map<std::string, ModelFactory>& Registry() {
  static std::map<std::string, ModelFactory> registry;
  return registry;
}

std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}

void EnsureBuiltinArchitectures() {
  static std::once_flag once;
  std::call_once(once, [] { RegisterBuiltinArchitectures(); });
}

}  // namespace

bool ForwardBatch::OneTokenPerSequence() const {
  // A run of positions (the common prefill case) answers at once, before the sort.
  for (size_t t = 1; t < seq.size(); ++t) {
    if (seq[t] == seq[t - 1]) return false;
  }
  std::vector<int32_t> sorted(seq);
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
}

Status ForwardBatch::Validate(int32_t n_vocab, int32_t block_size, int32_t n_blocks) const {
  if (tokens.empty()) return InvalidArgument("empty batch");
  if (top_k < 0 || top_k > Backend::kMaxTopK || (top_k > 0 && argmax_only)) {
    return InvalidArgument(
        StrFormat("top_k %d: must be in [0, %d] and not with argmax_only", top_k, Backend::kMaxTopK));
  }
  if (!draws.empty()) {
    if (!(argmax_only || top_k > 0) || draws.size() != logit_rows.size()) {
      return InvalidArgument(StrFormat("%zu draws for %zu logit rows: one per row, with argmax_only or top_k",
                                       draws.size(), logit_rows.size()));
    }
    for (const RowDraw& d : draws) {
      const bool greedy = d.temperature == 0.0f;
      if (!(d.temperature >= 0.0f && std::isfinite(d.temperature)) ||
          (!greedy &&
           !(d.top_p > 0.0f && d.top_p <= 1.0f && d.min_p >= 0.0f && d.min_p <= 1.0f && d.u >= 0.0 && d.u < 1.0))) {
        return InvalidArgument(
            StrFormat("bad draw: temperature %g, top_p %g, min_p %g, u %g", d.temperature, d.top_p, d.min_p, d.u));
      }
    }
  }
  if (logprob_stats && !(argmax_only || top_k > 0)) {
    return InvalidArgument("logprob_stats need argmax_only or top_k");
  }
  if (!penalties.empty()) {
    if (!(argmax_only || top_k > 0) || penalties.size() != logit_rows.size()) {
      return InvalidArgument(StrFormat("%zu penalty rows for %zu logit rows: one per row, with argmax_only or top_k",
                                       penalties.size(), logit_rows.size()));
    }
    for (const RowPenalty& p : penalties) {
      if (p.begin < 0 || p.end < p.begin || static_cast<size_t>(p.end) > penalty_entries.size() ||
          !(p.repeat > 0.0f && std::isfinite(p.repeat))) {
        return InvalidArgument(StrFormat("bad penalty row: entries [%d, %d) of %zu, repeat %g", p.begin, p.end,
                                         penalty_entries.size(), p.repeat));
      }
    }
    for (const PenaltyEntry& e : penalty_entries) {
      if (e.id < 0 || e.id >= n_vocab || !std::isfinite(e.subtrahend) || std::isnan(e.bias) || e.bias == INFINITY ||
          (e.flags & ~(PenaltyEntry::kBiased | PenaltyEntry::kPenalized)) != 0) {
        return InvalidArgument(
            StrFormat("bad penalty entry: token %d (vocabulary %d), subtrahend %g, bias %g, flags %u", e.id, n_vocab,
                      e.subtrahend, e.bias, e.flags));
      }
    }
  }
  if (pos.size() != tokens.size() || seq.size() != tokens.size())
    return InvalidArgument("batch arrays differ in length");
  if (feedback_rows < 0) return InvalidArgument(StrFormat("negative feedback_rows %d", feedback_rows));
  for (size_t i = 0; i < tokens.size(); ++i) {
    const bool fed_back = tokens[i] < 0 && -tokens[i] - 1 < feedback_rows;
    if (!fed_back && (tokens[i] < 0 || tokens[i] >= n_vocab)) {
      return InvalidArgument(StrFormat("token id %d out of range [0, %d)", tokens[i], n_vocab));
    }
    if (seq[i] < 0 || static_cast<size_t>(seq[i]) >= block_tables.size()) {
      return InvalidArgument(StrFormat("token %zu names sequence %d of %zu", i, seq[i], block_tables.size()));
    }
    if (pos[i] < 0) return InvalidArgument(StrFormat("negative position %d", pos[i]));
    const auto& table = block_tables[static_cast<size_t>(seq[i])];
    if (static_cast<size_t>(pos[i] / block_size) >= table.size()) {
      return InvalidArgument(
          StrFormat("position %d is beyond the %zu blocks of sequence %d", pos[i], table.size(), seq[i]));
    }
  }
  for (const auto& table : block_tables) {
    for (int32_t b : table) {
      if (b < 0 || b >= n_blocks) return InvalidArgument(StrFormat("block id %d out of range [0, %d)", b, n_blocks));
    }
  }
  for (int32_t r : logit_rows) {
    if (r < 0 || r >= size()) return InvalidArgument(StrFormat("logit row %d out of range", r));
  }
  return Status::Ok();
}

Status Model::QueueForward(const ForwardBatch&, std::span<const KvLayerView>) {
  return Unimplemented(config_.arch + " does not support queued passes");
}

Status Model::TakeQueued(int32_t*) { return Unimplemented(config_.arch + " does not support queued passes"); }

Status Model::Embed(const ForwardBatch&, std::span<const KvLayerView>, float*) {
  return Unimplemented(config_.arch + " does not support embeddings");
}

bool RegisterArchitecture(const std::string& arch, ModelFactory factory) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry()[arch] = std::move(factory);
  return true;
}

std::vector<std::string> RegisteredArchitectures() {
  EnsureBuiltinArchitectures();
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::vector<std::string> out;
  for (const auto& [name, f] : Registry()) out.push_back(name);
  return out;
}

Result<std::unique_ptr<Model>> LoadModel(const GgufFile& file, Backend* backend) {
  auto arch = file.GetString("general.architecture");
  if (!arch.ok()) return arch.status().WithContext(file.path());
  EnsureBuiltinArchitectures();
  ModelFactory factory;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    auto it = Registry().find(*arch);
    if (it != Registry().end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const auto& n : RegisteredArchitectures()) known += (known.empty() ? "" : ", ") + n;
    return Unimplemented(StrFormat("%s: architecture '%s' is not supported (supported: %s)", file.path().c_str(),
                                   arch->c_str(), known.c_str()));
  }
  return factory(file, backend);
}

}  // namespace herd
