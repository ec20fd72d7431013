// Subcommands of the `herd` binary. Each Add*Command registers one CLI11 subcommand whose
// callback does the work. A callback that fails prints a message naming the file and the
// reason to stderr and throws CLI::RuntimeError(exit_code); apps/herd/main.cc turns that
// into the process exit status.
#pragma once

#include <string>

#include <iosfwd>

namespace CLI {
class App;
}

namespace herd {
class GgufFile;
}

namespace herd::cli {

void AddInspectCommand(CLI::App& app);     // inspect_command.cc
void AddTokenizeCommand(CLI::App& app);    // tokenize_command.cc
void AddMakeModelCommand(CLI::App& app);   // make_model_command.cc
void AddRunCommand(CLI::App& app);         // run_command.cc
void AddBenchModelCommand(CLI::App& app);  // bench_model_command.cc
void AddBenchEngineCommand(CLI::App& app);  // bench_engine_command.cc
void AddServeCommand(CLI::App& app);       // serve_command.cc
void AddBenchCommand(CLI::App& app);       // bench_serve_command.cc: `bench serve`

// `herd inspect`'s report: metadata, tensor table (if `tensors`), summary.
void PrintGgufSummary(const GgufFile& file, std::ostream& out, bool tensors);

// Fails the current command: prints "herd: <message>" to stderr, exits with `code`.
[[noreturn]] void Fail(const std::string& message, int code = 1);

}  // namespace herd::cli
