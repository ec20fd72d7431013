#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"

namespace herd::cli {

void Fail(const std::string& message, int code) {
  std::fprintf(stderr, "herd: %s\n", message.c_str());
  throw CLI::RuntimeError(code);
}

}  // namespace herd::cli
