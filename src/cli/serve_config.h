// `herd serve` configuration from a TOML file and HERD_* environment variables, with one rule
// of precedence: command-line flags, then environment variables, then the file, then defaults.
//
// Every flag `--some-flag` has the file key `some_flag` (or `some-flag`) and the environment
// variable `HERD_SOME_FLAG`; list flags take TOML arrays (and comma-separated environment
// values). Models with their own settings are `[[model]]` tables (docs/configuration.md).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace herd::cli {

// One [[model]] table: a GGUF file served from start, with optional per-model settings.
struct ModelSpec {
  std::string path;
  std::string alias;
  std::optional<int> ctx, threads, batch_tokens;
  std::optional<std::string> kv_type, kv_budget, device;
  std::vector<std::string> devices;  // replicas: one instance per device
};

// Gives every long option of `cmd` (except --help and --config) the environment variable
// HERD_<NAME> (dashes become underscores, upper case).
void AddEnvironmentNames(CLI::App* cmd);

// Reads the TOML file at `path` and applies its top-level keys to the options of `cmd` that were
// not given on the command line or in the environment; returns its [[model]] tables. Throws
// CLI::ValidationError naming the file and the key on a syntax error, an unknown key or a value
// of the wrong type.
std::vector<ModelSpec> ApplyConfigFile(const std::string& path, CLI::App* cmd);

}  // namespace herd::cli
