// Tokenizer throughput: MB/s of Encode on 1 MiB of generated English-like text (and on the
// vocabulary fixtures' multilingual test texts, repeated), for each vocabulary. Run:
//   build/bin/herd_tokenizer_bench [--reps N] [--mib M] [-m FILE.gguf ...]
// Without -m it uses ../shared/testdata/vocab/*.gguf and a "llama-bpe" tokenizer built from
// the GPT-2 vocabulary with the Llama 3 pre-tokenizer (the Llama 3 code path: its
// pre-tokenizer, ignore_merges and byte-level merges; the vocabulary itself is GPT-2's 50k).
// The target is < 0.5 s per MB (> 2 MB/s) for llama-bpe and SPM.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "tokenizer/tokenizer.h"

namespace herd {
namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Deterministic English-like text: Zipf-distributed common words, capitalized sentences,
// commas, numbers, quotes, contractions and paragraph breaks.
std::string EnglishText(size_t bytes) {
  // Common English words (most frequent first), space-separated.
  static const char kWordList[] =
      "the of and to a in is that for it as was with be by on not he this are or his from at which but "
      "have an had they you were their one all we can her has there been if more when will would who so no "
      "time people year way day man thing woman life child world school state family student group country "
      "problem hand part place case week company system program question work government number night "
      "point home water room mother area money story fact month lot right study book eye job word business "
      "issue side kind head house service friend father power hour game line end member law car city "
      "community name president team minute idea kid body information back parent face others level office "
      "door health person art war history party result change morning reason research girl guy moment air "
      "teacher force education said made went took came saw knew thought looked wanted gave used found "
      "told asked seemed felt tried left called important different large small good new first last long "
      "great little own other old big high young early public bad able however therefore although "
      "nevertheless unfortunately approximately understanding responsibility characteristics international "
      "environmental development don't it's I'm we're they've she'll couldn't Mr. Dr. U.S. ";
  std::vector<std::string> words;
  for (const char* p = kWordList; *p;) {
    const char* e = std::strchr(p, ' ');
    words.emplace_back(p, e);
    p = e + 1;
  }
  const size_t n = words.size();
  std::mt19937_64 rng(42);
  std::vector<double> weights(n);
  for (size_t i = 0; i < n; ++i) weights[i] = 1.0 / static_cast<double>(i + 1);
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  std::string text;
  text.reserve(bytes + 64);
  bool sentence_start = true;
  while (text.size() < bytes) {
    std::string w = words[pick(rng)];
    if (rng() % 40 == 0) w = std::to_string(rng() % 100000);
    if (sentence_start && w[0] >= 'a' && w[0] <= 'z') w[0] = static_cast<char>(w[0] - 32);
    if (!sentence_start) text += ' ';
    if (rng() % 60 == 0) w = "\"" + w + "\"";
    text += w;
    sentence_start = false;
    unsigned r = rng() % 100;
    if (r < 7) {
      text += ',';
    } else if (r < 14) {
      text += (r == 13 ? "?" : ".");
      sentence_start = true;
      if (rng() % 6 == 0) text += "\n\n";
    }
  }
  text.resize(bytes);
  return text;
}

std::string FixtureText(const std::string& inp, size_t bytes) {
  std::ifstream in(inp, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str();
  std::string sep = "\n__ggml_vocab_test__\n";
  for (size_t p; (p = all.find(sep)) != std::string::npos;) all.replace(p, sep.size(), "\n");
  std::string text;
  while (text.size() < bytes) text += all;
  // Cut at a character boundary.
  size_t cut = bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text;
}

struct Run {
  double best_s;
  size_t tokens;
};

Run Measure(const Tokenizer& tok, const std::string& text, int reps) {
  Run r{1e30, 0};
  for (int i = 0; i < reps; ++i) {
    double t0 = Now();
    std::vector<TokenId> ids = tok.Encode(text);
    double dt = Now() - t0;
    r.best_s = std::min(r.best_s, dt);
    r.tokens = ids.size();
  }
  return r;
}

void Report(const char* name, const char* corpus, size_t bytes, const Run& r) {
  double mb = static_cast<double>(bytes) / 1e6;
  std::printf("%-44s %-9s %8.2f MB/s  %7.3f s/MB  %9.0f tok/s  %8zu tokens  %.2f bytes/token\n", name, corpus,
              mb / r.best_s, r.best_s / mb, static_cast<double>(r.tokens) / r.best_s, r.tokens,
              static_cast<double>(bytes) / static_cast<double>(std::max<size_t>(r.tokens, 1)));
}

int Main(int argc, char** argv) {
  int reps = 5;
  double mib = 1.0;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--mib") && i + 1 < argc) {
      mib = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "-m") && i + 1 < argc) {
      files.push_back(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--reps N] [--mib M] [-m FILE.gguf ...]\n", argv[0]);
      return 2;
    }
  }
  const std::string dir = std::string(HERD_SHARED_DIR) + "/testdata/vocab/";
  bool defaults = files.empty();
  if (defaults) {
    for (const char* n : {"llama-spm", "phi-3", "gpt-2", "falcon", "deepseek-llm", "bert-bge"})
      files.push_back(dir + "ggml-vocab-" + n + ".gguf");
  }
  const size_t bytes = static_cast<size_t>(mib * 1024 * 1024);
  const std::string english = EnglishText(bytes);
  const std::string fixtures = FixtureText(dir + "ggml-vocab-gpt-2.gguf.inp", bytes);
  std::printf("text: %zu bytes per run, best of %d runs, 1 thread\n", bytes, reps);

  auto bench = [&](const char* name, const Tokenizer& tok) {
    Report(name, "english", english.size(), Measure(tok, english, reps));
    Report(name, "fixtures", fixtures.size(), Measure(tok, fixtures, reps));
  };
  for (const std::string& path : files) {
    auto file = GgufFile::Open(path);
    if (!file.ok()) {
      std::fprintf(stderr, "%s\n", file.status().ToString().c_str());
      return 1;
    }
    auto vocab = LoadVocab(**file);
    if (!vocab.ok()) {
      std::fprintf(stderr, "%s\n", vocab.status().ToString().c_str());
      return 1;
    }
    std::string name = std::filesystem::path(path).stem().string() + " (" + TokenizerModelName(vocab->model) +
                       (vocab->pre.empty() ? "" : "/" + vocab->pre) + ")";
    bool is_gpt2 = vocab->pre == "gpt-2";
    Vocab llama3 = *vocab;
    auto tok = Tokenizer::Create(std::move(*vocab));
    if (!tok.ok()) {
      std::fprintf(stderr, "%s\n", tok.status().ToString().c_str());
      return 1;
    }
    bench(name.c_str(), **tok);
    if (defaults && is_gpt2) {
      llama3.pre = "llama-bpe";
      llama3.ignore_merges = true;
      auto t3 = Tokenizer::Create(std::move(llama3));
      if (t3.ok()) bench("gpt-2 vocab (gpt2/llama-bpe)", **t3);
    }
  }
  return 0;
}

}  // namespace
}  // namespace herd

int main(int argc, char** argv) { return herd::Main(argc, argv); }
