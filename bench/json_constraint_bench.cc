// JSON mode: the cost of one JsonConstraint::Mask over a full logit row, per recognizer state,
// and of building the shared JsonVocabulary. Run:
//   build/bin/herd_json_constraint_bench [--benchmark_filter=...]
// Vocabularies (../shared/testdata/vocab): GPT-2 (50257), DeepSeek LLM (102400), Llama 2 SPM
// (32000) and "union-128k": the distinct pieces of the GPT-2, DeepSeek and Falcon byte-level
// vocabularies, cut at 128256 tokens — a stand-in for Llama 3's 128k byte-level BPE vocabulary,
// which is not in the fixtures.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "sampling/json_constraint.h"
#include "tokenizer/tokenizer.h"

namespace herd {
namespace {

std::unique_ptr<Tokenizer> Load(const std::string& name) {
  const std::string path = std::string(HERD_SHARED_DIR) + "/testdata/vocab/ggml-vocab-" + name + ".gguf";
  auto file = GgufFile::Open(path);
  if (!file.ok()) {
    std::fprintf(stderr, "%s\n", file.status().ToString().c_str());
    std::exit(1);
  }
  auto tok = Tokenizer::FromGguf(**file);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*tok);
}

std::vector<std::string> Pieces(const Tokenizer& t) {
  std::vector<std::string> p(static_cast<size_t>(t.n_tokens()));
  for (int32_t id = 0; id < t.n_tokens(); ++id) p[static_cast<size_t>(id)] = t.TokenToPiece(id);
  return p;
}

struct Vocab {
  std::vector<std::string> pieces;
  std::shared_ptr<const JsonVocabulary> json;
};

const Vocab& GetVocab(const std::string& name) {
  static std::map<std::string, Vocab>* cache = new std::map<std::string, Vocab>;
  auto it = cache->find(name);
  if (it != cache->end()) return it->second;
  Vocab v;
  if (name == "union-128k") {
    std::set<std::string> seen;
    for (const char* part : {"deepseek-llm", "gpt-2", "falcon"}) {
      for (std::string& p : Pieces(*Load(part))) {
        if (v.pieces.size() < 128256 && seen.insert(p).second) v.pieces.push_back(std::move(p));
      }
    }
    v.pieces.resize(128256);  // (already full; keeps the size exact)
  } else {
    v.pieces = Pieces(*Load(name));
  }
  v.json = JsonVocabulary::Create(v.pieces);
  return cache->emplace(name, std::move(v)).first->second;
}

// Drives a constraint into a state by feeding `prefix` one byte at a time through the
// vocabulary's single-byte tokens (every byte-level BPE vocabulary has all 256).
JsonConstraint InState(const Vocab& v, const std::string& prefix) {
  std::vector<int32_t> byte_token(256, -1);
  for (size_t id = 0; id < v.pieces.size(); ++id) {
    if (v.pieces[id].size() == 1) byte_token[static_cast<uint8_t>(v.pieces[id][0])] = static_cast<int32_t>(id);
  }
  int32_t end = static_cast<int32_t>(v.pieces.size()) - 1;  // a control token (empty piece) if there is one
  for (size_t id = 0; id < v.pieces.size(); ++id) {
    if (v.pieces[id].empty()) {
      end = static_cast<int32_t>(id);
      break;
    }
  }
  JsonConstraint c(v.json, {end});
  for (char ch : prefix) {
    const int32_t id = byte_token[static_cast<uint8_t>(ch)];
    if (id < 0 || !c.Accept(id)) {
      std::fprintf(stderr, "cannot feed %s\n", prefix.c_str());
      std::exit(1);
    }
  }
  return c;
}

void BM_Mask(benchmark::State& state, const std::string& vocab, const std::string& prefix) {
  const Vocab& v = GetVocab(vocab);
  JsonConstraint c = InState(v, prefix);
  std::vector<float> row(v.pieces.size());
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (float& x : row) x = normal(rng);
  int32_t allowed = 0;
  for (auto _ : state) {
    allowed = c.Mask(row.data());
    benchmark::DoNotOptimize(row.data());
  }
  state.counters["allowed"] = allowed;
}

void BM_BuildVocabulary(benchmark::State& state, const std::string& vocab) {
  const Vocab& v = GetVocab(vocab);
  for (auto _ : state) benchmark::DoNotOptimize(JsonVocabulary::Create(v.pieces));
  state.counters["trie_nodes"] = static_cast<double>(v.json->all().n_nodes());
  state.counters["non_plain_tokens"] = static_cast<double>(v.json->not_plain_ids().size());
}

const std::pair<const char*, const char*> kStates[] = {
    {"start", ""},
    {"object_first", "{"},
    {"key_string", "{\"na"},
    {"after_key", "{\"name\""},
    {"value", "{\"name\": "},
    {"value_string", "{\"name\": \"Al"},
    {"string_escape", "{\"name\": \"Al\\"},
    {"string_utf8", "{\"name\": \"\xe4\xb8"},
    {"number", "{\"age\": 4"},
    {"number_frac", "{\"age\": 4.5"},
    {"after_value", "{\"a\": [1, true]"},
    {"array", "{\"a\": ["},
    {"complete", "{}"},
};

void Register() {
  for (const char* vocab : {"union-128k", "deepseek-llm", "gpt-2", "llama-spm"}) {
    for (const auto& [name, prefix] : kStates) {
      benchmark::RegisterBenchmark((std::string("Mask/") + vocab + "/" + name).c_str(), BM_Mask, std::string(vocab),
                                   std::string(prefix))
          ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark((std::string("BuildVocabulary/") + vocab).c_str(), BM_BuildVocabulary,
                                 std::string(vocab))
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace
}  // namespace herd

int main(int argc, char** argv) {
  herd::Register();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
