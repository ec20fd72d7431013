#include "cli/bench_serve/progress.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

namespace herd::bench {

bool StderrIsTty() { return ::isatty(STDERR_FILENO) == 1; }

ProgressDisplay MakeProgress(std::string label, bool tty) {
  ProgressDisplay d;
  d.interval = std::chrono::milliseconds(tty ? 250 : 10'000);
  auto ended = std::make_shared<bool>(false);
  d.update = [label = std::move(label), tty, ended](const ProgressState& p) {
    if (*ended) return;
    const bool last = p.done == p.total;
    const double tok_s = p.elapsed_s > 0 ? p.output_tokens / p.elapsed_s : 0;
    if (tty) {
      constexpr int kWidth = 30;
      const int fill = p.total > 0 ? p.done * kWidth / p.total : kWidth;
      std::string bar(static_cast<size_t>(fill), '=');
      if (fill < kWidth) bar += '>' + std::string(static_cast<size_t>(kWidth - fill - 1), ' ');
      std::fprintf(stderr, "\r\033[K%s [%s] %d/%d done, %d failed, %d in flight, %.1f out tok/s, %.0f s%s",
                   label.c_str(), bar.c_str(), p.done, p.total, p.failed, p.in_flight, tok_s, p.elapsed_s,
                   last ? "\n" : "");
    } else {
      std::fprintf(stderr, "%s: %d/%d done, %d failed, %d in flight, %.1f out tok/s, %.0f s\n", label.c_str(), p.done,
                   p.total, p.failed, p.in_flight, tok_s, p.elapsed_s);
    }
    std::fflush(stderr);
    if (last) *ended = true;
  };
  return d;
}

}  // namespace herd::bench
