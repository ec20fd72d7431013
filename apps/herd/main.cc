// The `herd` command line: one binary, one subcommand per job.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"herd: an LLM inference server and toolkit"};
  app.require_subcommand(1);
  herd::cli::AddServeCommand(app);
  herd::cli::AddRunCommand(app);
  herd::cli::AddInspectCommand(app);
  herd::cli::AddTokenizeCommand(app);
  herd::cli::AddMakeModelCommand(app);
  herd::cli::AddBenchModelCommand(app);
  herd::cli::AddBenchEngineCommand(app);
  herd::cli::AddBenchCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}
