#include "cli/run_options.h"

#include <CLI/CLI.hpp>

#include "cli/model_loader.h"

namespace herd::cli {

void AddRunOptions(CLI::App* cmd, RunOptions* o) {
  o->sampling.temperature = 0.8f;
  o->sampling.top_k = 40;
  o->sampling.top_p = 0.95f;
  o->sampling.min_p = 0.05f;
  o->sampling.repeat_penalty = 1.0f;
  cmd->add_option("-m,--model", o->model, "GGUF model file (default: the built-in demo model)");
  cmd->add_option("-p,--prompt", o->prompt, "Prompt text")->capture_default_str();
  cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate")->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "Threads (0: all cores)");
  cmd->add_option("-c,--ctx-size", o->ctx, "Context size in tokens")->capture_default_str();
  cmd->add_option("-b,--batch-size", o->batch, "Most prompt tokens per forward pass")->capture_default_str();
  cmd->add_flag("--ignore-eos", o->ignore_eos, "Keep generating past end-of-generation tokens");
  AddKvTypeOption(cmd, &o->kv_type);
  AddDeviceOption(cmd, &o->device);
  SamplingParams& s = o->sampling;
  cmd->add_option("--temp", s.temperature, "Temperature (0: greedy)")->capture_default_str();
  cmd->add_option("--top-k", s.top_k, "Top-k (0: off)")->capture_default_str();
  cmd->add_option("--top-p", s.top_p, "Top-p (1: off)")->capture_default_str();
  cmd->add_option("--min-p", s.min_p, "Min-p (0: off)")->capture_default_str();
  cmd->add_option("--typical-p", s.typical_p, "Typical-p (1: off)")->capture_default_str();
  cmd->add_option("--repeat-penalty", s.repeat_penalty, "Repetition penalty (1: off)")->capture_default_str();
  cmd->add_option("--repeat-last-n", s.penalty_last_n, "Penalty window (-1: all, 0: off)")->capture_default_str();
  cmd->add_option("--presence-penalty", s.presence_penalty, "Presence penalty")->capture_default_str();
  cmd->add_option("--frequency-penalty", s.frequency_penalty, "Frequency penalty")->capture_default_str();
  cmd->add_option("--seed", s.seed, "Random seed (default: random)");
}

}  // namespace herd::cli
