#include "model/test_models.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "base/check.h"
#include "model/make_model.h"

namespace herd::testing {

std::string TestModelPath(const std::string& shape, const std::string& file_type) {
  static std::mutex mu;
  static std::map<std::string, std::string> made;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = shape + "-" + file_type;
  if (auto it = made.find(key); it != made.end()) return it->second;
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path dir =
      std::filesystem::path(tmp ? tmp : "/tmp") / ("herd-test-models-" + std::to_string(getpid()));
  if (made.empty()) {
    std::filesystem::create_directories(dir);
    static const std::string to_remove = dir.string();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(to_remove, ec);
    });
  }
  MakeModelOptions o;
  o.shape = shape;
  o.file_type = file_type;
  o.output_path = (dir / (key + ".gguf")).string();
  o.seed = 1234;
  o.threads = 2;
  Status s = MakeRandomModel(o);
  HERD_CHECK_MSG(s.ok(), "generating %s: %s", key.c_str(), s.ToString().c_str());
  made[key] = o.output_path;
  return o.output_path;
}

}  // namespace herd::testing
