// Embedding requests through the engine (engine/embedding.h) on a real-shaped model:
//   1. throughput of embedding inputs against the same tokens run as generation prompts
//      (prefill, max_tokens 1): the embedding path should cost what a prefill costs;
//   2. what concurrent embeddings cost decoding streams, against the same number of prompt
//      tokens arriving as generation requests: mixed steps run two forward passes (Forward for
//      generation rows, Embed for embedding rows), so this shows the price of the second pass.
//
//   herd_embedding_bench MODEL.gguf [threads=2] [inputs=8] [input_len=256] [batch_tokens=128] [all|short]
// Prints one line per measurement. Times come from the engine's event timestamps.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "io/gguf.h"
#include "kernels/backend.h"

namespace herd {
namespace {

using Clock = EngineClock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Setup {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

std::unique_ptr<Engine> MakeEngine(Setup& s, std::unique_ptr<KvCache>* cache, int32_t batch_tokens) {
  const ModelConfig& c = s.model->config();
  KvCacheConfig kc{c.n_layer, c.n_head_kv, c.head_dim, 16, 512, DType::kF16};  // 8192 tokens
  *cache = std::move(KvCache::Create(s.backend.get(), kc)).value();
  EngineOptions o;
  o.n_ctx = 4096;
  o.scheduler.max_batch_tokens = batch_tokens;
  o.prefix_caching = false;  // every run computes everything
  o.coalesce_identical = false;
  auto e = Engine::Create(s.model.get(), cache->get(), s.tokenizer.get(), o);
  if (!e.ok()) {
    std::fprintf(stderr, "%s\n", e.status().ToString().c_str());
    std::exit(1);
  }
  (*e)->Start();
  return std::move(e).value();
}

std::vector<int32_t> Prompt(int n, unsigned seed, int32_t n_vocab) {
  std::mt19937 rng(seed);
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(static_cast<int32_t>(rng() % static_cast<unsigned>(n_vocab)));
  return p;
}

GenerationRequest Gen(std::vector<int32_t> prompt, int32_t max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  return r;
}

// Waits for a stream's end; returns its token event times and the end time.
struct Trace {
  std::vector<Clock::time_point> tokens;
  Clock::time_point end;
};
Trace Wait(RequestStream& s) {
  Trace t;
  EngineEvent ev;
  while (s.Next(&ev)) {
    if (ev.kind == EngineEvent::Kind::kToken) t.tokens.push_back(ev.time);
    if (ev.kind == EngineEvent::Kind::kFinished) {
      t.end = ev.time;
      if (!ev.error.ok()) std::fprintf(stderr, "error: %s\n", ev.error.ToString().c_str());
    }
  }
  return t;
}

// Mean gap between consecutive tokens of the decoders, for tokens up to `until`.
double MeanGapMs(const std::vector<Trace>& traces, Clock::time_point until) {
  double sum = 0;
  int n = 0;
  for (const Trace& t : traces) {
    for (size_t i = 1; i < t.tokens.size() && t.tokens[i] <= until; ++i, ++n) {
      sum += Seconds(t.tokens[i] - t.tokens[i - 1]);
    }
  }
  return n == 0 ? 0 : 1000 * sum / n;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf [threads] [inputs] [input_len] [batch_tokens]\n", argv[0]);
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const int inputs = argc > 3 ? std::atoi(argv[3]) : 8;
  const int input_len = argc > 4 ? std::atoi(argv[4]) : 256;
  const int batch_tokens = argc > 5 ? std::atoi(argv[5]) : 128;
  const std::string only = argc > 6 ? argv[6] : "all";  // all | short: only the decode runs with short inputs
  const int decoders = 4, decode_prompt = 32, decode_len = 96;
  Setup s;
  s.file = std::move(GgufFile::Open(argv[1])).value();
  s.backend = MakeCpuBackend(threads);
  s.model = std::move(LoadModel(*s.file, s.backend.get())).value();
  s.tokenizer = std::move(Tokenizer::FromGguf(*s.file)).value();
  const int32_t n_vocab = s.model->config().n_vocab;
  std::printf("model %s, %d threads, %d inputs x %d tokens, %d-token steps\n", argv[1], threads, inputs, input_len,
              batch_tokens);

  // 1. Throughput: the same inputs as generation prompts (prefill + 1 token) and as embeddings.
  for (const bool embed : {false, true}) {
    if (only == "short") break;
    std::unique_ptr<KvCache> cache;
    auto e = MakeEngine(s, &cache, batch_tokens);
    const auto t0 = Clock::now();
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int i = 0; i < inputs; ++i) {
      auto p = Prompt(input_len, 100 + i, n_vocab);
      streams.push_back(embed ? *e->SubmitEmbedding({p, Pooling::kMean}) : *e->Submit(Gen(p, 1)));
    }
    Clock::time_point end;
    for (auto& st : streams) end = std::max(end, Wait(*st).end);
    const double sec = Seconds(end - t0);
    std::printf("%-34s %8.1f input tok/s (%.2f s)\n", embed ? "embeddings alone" : "generation prefill alone",
                inputs * input_len / sec, sec);
  }

  // 2. Decoders alone, then with the inputs arriving as generation prompts, then as embeddings.
  // 3. The same with short inputs (16 tokens) submitted one after the other while the decoders
  //    run, so that nearly every step mixes decode tokens with input tokens: the worst case for
  //    the embedding path's second forward pass.
  static const char* kNames[] = {"4 decoders alone", "4 decoders + generation prompts", "4 decoders + embeddings",
                                 "4 decoders + 16-tok gen prompts", "4 decoders + 16-tok embeddings"};
  for (int mode = 0; mode < 5; ++mode) {
    if (only == "short" && (mode == 1 || mode == 2)) continue;
    const bool embed = mode == 2 || mode == 4;
    const bool stream_short = mode >= 3;
    std::unique_ptr<KvCache> cache;
    auto e = MakeEngine(s, &cache, batch_tokens);
    std::vector<std::shared_ptr<RequestStream>> dec, other;
    for (int i = 0; i < decoders; ++i) dec.push_back(*e->Submit(Gen(Prompt(decode_prompt, i, n_vocab), decode_len)));
    // Let the decoders start decoding first.
    EngineEvent ev;
    while (!dec[0]->Next(&ev) || ev.kind != EngineEvent::Kind::kToken) {
    }
    const auto t0 = Clock::now();
    const auto submit = [&](std::vector<int32_t> p) {
      return embed ? *e->SubmitEmbedding({std::move(p), Pooling::kMean}) : *e->Submit(Gen(std::move(p), 1));
    };
    Clock::time_point other_end = t0;
    int64_t input_tokens = 0;
    if (stream_short) {
      // Until every decoder has finished (requests_finished counts the inputs too).
      for (unsigned k = 0; e->stats().requests_finished - k < decoders; ++k) {
        other_end = Wait(*submit(Prompt(16, 1000 + k, n_vocab))).end;
        input_tokens += 16;
      }
    } else {
      for (int i = 0; mode > 0 && i < inputs; ++i) other.push_back(submit(Prompt(input_len, 100 + i, n_vocab)));
      input_tokens = static_cast<int64_t>(other.size()) * input_len;
    }
    std::vector<Trace> traces;
    Clock::time_point dec_end;
    for (auto& st : dec) {
      traces.push_back(Wait(*st));
      dec_end = std::max(dec_end, traces.back().end);
    }
    for (auto& st : other) other_end = std::max(other_end, Wait(*st).end);
    // While the inputs are in flight (mode 0: the whole run).
    const auto until = mode == 0 ? dec_end : std::min(other_end, dec_end);
    std::printf("%-34s decode inter-token mean %7.1f ms, decoders done %.2f s", kNames[mode], MeanGapMs(traces, until),
                Seconds(dec_end - t0));
    if (mode > 0) {
      std::printf(", inputs: %lld tokens in %.2f s (%.1f tok/s)", static_cast<long long>(input_tokens),
                  Seconds(other_end - t0), static_cast<double>(input_tokens) / Seconds(other_end - t0));
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace herd

int main(int argc, char** argv) { return herd::Main(argc, argv); }
