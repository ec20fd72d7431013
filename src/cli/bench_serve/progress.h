// The progress display of a running benchmark on stderr: on a terminal a bar redrawn in place
// (every 250 ms), otherwise one line every 10 s (logs stay readable).
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "cli/bench_serve/load_generator.h"

namespace herd::bench {

struct ProgressDisplay {
  std::function<void(const ProgressState&)> update;
  std::chrono::milliseconds interval;
};

// `label` names the run ("concurrency 8"). `tty`: whether stderr is a terminal.
ProgressDisplay MakeProgress(std::string label, bool tty);

// Whether stderr is a terminal.
bool StderrIsTty();

}  // namespace herd::bench
