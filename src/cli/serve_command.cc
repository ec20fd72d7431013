// herd serve: herd's main job. The HTTP server (OpenAI / Anthropic / Ollama APIs) is the next
// milestone; until it exists, `serve` loads the model (the demo model by default) and streams
// one generation, so `make serve` shows the whole path working end to end.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "cli/run_options.h"

namespace herd::cli {

void AddServeCommand(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model (for now: stream one generation; HTTP comes next)");
  AddRunOptions(cmd, o.get());
  cmd->callback([o] {
    std::fprintf(stderr,
                 "herd serve: the HTTP APIs are not built yet; streaming one generation from %s instead.\n",
                 o->model.empty() ? "the built-in demo model (random weights: the text is not meaningful)"
                                  : o->model.c_str());
    RunGeneration(*o);
  });
}

}  // namespace herd::cli
