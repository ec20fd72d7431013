// Options shared by `herd run` and (until the HTTP server exists) `herd serve`.
#pragma once

#include <string>

#include "sampling/sampling_params.h"

namespace CLI {
class App;
}

namespace herd::cli {

struct RunOptions {
  std::string model;  // empty: the demo model
  std::string prompt = "Once upon a time";
  int n_predict = 64;
  int threads = 0;
  int ctx = 4096;
  int batch = 512;
  bool ignore_eos = false;
  std::string kv_type = "f16";  // --kv-type: f16 | f32 | q8_0
  std::string device = "cpu";   // --device: cpu | cuda | cuda:N
  SamplingParams sampling;
};

// Registers -m, -p, -n, -t, -c, -b, --ignore-eos, --kv-type, --device and the sampling flags (--temp, --top-k,
// --top-p, --min-p, --typical-p, --repeat-penalty, --repeat-last-n, --presence-penalty,
// --frequency-penalty, --seed) on `cmd`.
void AddRunOptions(CLI::App* cmd, RunOptions* o);

// Loads the model (the demo model when o.model is empty) and streams a completion.
void RunGeneration(const RunOptions& o);

}  // namespace herd::cli
