// Test helper: generates (once per process) random-weight GGUF models into a temp folder.
#pragma once

#include <string>

namespace herd::testing {

// Path of a model of `shape` and `file_type` with herd's built-in vocabulary; created on
// first use under $TMPDIR/herd-test-models-<pid>/ (removed at exit). Aborts the test binary if
// generation fails.
std::string TestModelPath(const std::string& shape, const std::string& file_type);

}  // namespace herd::testing
