// herd run [-m MODEL] [-p PROMPT] [-n N] [sampling flags]: streams a completion to stdout.
// Without -m it uses the demo model (random weights: the text is not meaningful).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_loader.h"
#include "cli/run_options.h"
#include "engine/generation_session.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace herd::cli {

void RunGeneration(const RunOptions& o) {
  const std::string path = o.model.empty() ? DemoModelPathOrFail() : o.model;
  LoadedModel lm = LoadModelOrFail(path, o.threads, o.ctx, KvTypeFromName(o.kv_type), 0, o.device);
  auto tok = Tokenizer::FromGguf(*lm.file);
  if (!tok.ok()) Fail(tok.status().message());
  const Tokenizer& tokenizer = **tok;
  if (tokenizer.n_tokens() > lm.model->config().n_vocab) {
    Fail(StrFormat("%s: the vocabulary has %d tokens but the model only %d", path.c_str(), tokenizer.n_tokens(),
                   lm.model->config().n_vocab));
  }
  std::vector<int32_t> prompt = tokenizer.Encode(o.prompt, /*add_special=*/true, /*parse_special=*/true);
  if (prompt.empty()) Fail("the prompt is empty after tokenization and the vocabulary adds no BOS token");
  SamplingParams params = o.sampling;
  params.stop_tokens = tokenizer.vocab().eog;
  auto sampler = Sampler::Create(params, lm.model->config().n_vocab);
  if (!sampler.ok()) Fail(sampler.status().message());
  GenerationSession session(lm.model.get(), lm.cache.get(), o.batch);
  StreamingDetokenizer detok(tokenizer, DecodeOptions{false, false});  // a continuation of the printed prompt
  std::fputs(o.prompt.c_str(), stdout);
  std::fflush(stdout);
  GenerateOptions go;
  go.max_tokens = o.n_predict;
  go.stop_at_eos = !o.ignore_eos;
  int generated = 0;
  const auto t0 = std::chrono::steady_clock::now();
  Status s = Generate(session, *sampler, prompt, go, [&](int32_t id) {
    ++generated;
    const std::string delta = detok.Push(id);
    std::fwrite(delta.data(), 1, delta.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  const std::string rest = detok.Finish();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  if (!s.ok()) Fail(s.message());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "herd: %zu prompt tokens, %d generated in %.2f s (seed %llu)\n", prompt.size(), generated, secs,
               static_cast<unsigned long long>(sampler->seed()));
}

void AddRunCommand(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt, streamed to stdout");
  AddRunOptions(cmd, o.get());
  cmd->callback([o] { RunGeneration(*o); });
}

}  // namespace herd::cli
