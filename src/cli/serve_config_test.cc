#include "cli/serve_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace herd::cli {
namespace {

struct Options {
  int port = 11434;
  std::string host = "127.0.0.1";
  std::vector<std::string> keys;
  bool quiet = false;
  double ratio = 0.5;
};

class ServeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    app_.add_option("--port", o_.port);
    app_.add_option("--host", o_.host);
    app_.add_option("--api-key", o_.keys)->delimiter(',');
    app_.add_flag("--quiet", o_.quiet);
    app_.add_option("--ratio", o_.ratio);
    AddEnvironmentNames(&app_);
    path_ = (std::filesystem::temp_directory_path() / ("herd-config-" + std::to_string(::getpid()) + ".toml")).string();
  }
  void TearDown() override {
    std::filesystem::remove(path_);
    ::unsetenv("HERD_PORT");
    ::unsetenv("HERD_API_KEY");
  }
  std::vector<ModelSpec> Apply(const std::string& toml, std::vector<std::string> args = {}) {
    std::ofstream(path_) << toml;
    std::vector<const char*> argv = {"serve"};
    for (const auto& a : args) argv.push_back(a.c_str());
    app_.parse(static_cast<int>(argv.size()), argv.data());
    return ApplyConfigFile(path_, &app_);
  }
  std::string Error(const std::string& toml) {
    try {
      Apply(toml);
    } catch (const CLI::ValidationError& e) {
      return e.what();
    }
    return "no error";
  }
  CLI::App app_;
  Options o_;
  std::string path_;
};

TEST_F(ServeConfigTest, FileSetsWhatFlagsAndEnvironmentDoNot) {
  ::setenv("HERD_API_KEY", "e1,e2", 1);
  const auto models =
      Apply("port = 8080\nhost = \"0.0.0.0\"\napi_key = [\"f\"]\nquiet = true\nratio = 0.25\n", {"--host", "10.0.0.1"});
  EXPECT_EQ(o_.port, 8080);
  EXPECT_EQ(o_.host, "10.0.0.1");                              // the flag wins
  EXPECT_EQ(o_.keys, (std::vector<std::string>{"e1", "e2"}));  // the environment wins
  EXPECT_TRUE(o_.quiet);
  EXPECT_DOUBLE_EQ(o_.ratio, 0.25);
  EXPECT_TRUE(models.empty());
}

TEST_F(ServeConfigTest, EnvironmentBeatsFile) {
  ::setenv("HERD_PORT", "9000", 1);
  Apply("port = 8080\n");
  EXPECT_EQ(o_.port, 9000);
}

TEST_F(ServeConfigTest, ModelTables) {
  const auto models = Apply(
      "[[model]]\npath = \"/m/a.gguf\"\nalias = \"a\"\nctx = 8192\nkv_type = \"q8_0\"\n"
      "[[model]]\npath = \"/m/b.gguf\"\nkv_budget = \"1GiB\"\nthreads = 2\nbatch_tokens = 64\n");
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].path, "/m/a.gguf");
  EXPECT_EQ(models[0].alias, "a");
  EXPECT_EQ(models[0].ctx, 8192);
  EXPECT_EQ(models[0].kv_type, "q8_0");
  EXPECT_FALSE(models[0].threads.has_value());
  EXPECT_EQ(models[1].kv_budget, "1GiB");
  EXPECT_EQ(models[1].threads, 2);
  EXPECT_EQ(models[1].batch_tokens, 64);
  EXPECT_TRUE(models[1].devices.empty());
}

TEST_F(ServeConfigTest, ModelReplicasOnDevices) {
  const auto models = Apply("[[model]]\npath = \"/m/a.gguf\"\ndevices = [\"cuda:0\", \"cuda:1\"]\n");
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].devices, (std::vector<std::string>{"cuda:0", "cuda:1"}));
  EXPECT_FALSE(models[0].device.has_value());
  EXPECT_NE(Error("[[model]]\npath = \"x\"\ndevices = []\n").find("'model[0].devices': expected a non-empty array"),
            std::string::npos);
  EXPECT_NE(Error("[[model]]\npath = \"x\"\ndevices = [1]\n").find("'model[0].devices'"), std::string::npos);
  EXPECT_NE(Error("[[model]]\npath = \"x\"\ndevice = \"cpu\"\ndevices = [\"cpu\"]\n")
                .find("'model[0]': takes device or devices, not both"),
            std::string::npos);
}

TEST_F(ServeConfigTest, ErrorsNameTheFileAndTheKey) {
  EXPECT_NE(Error("prot = 1\n").find("'prot': unknown key"), std::string::npos);
  EXPECT_NE(Error("port = \"abc\"\n").find("'port'"), std::string::npos);
  EXPECT_NE(Error("host = [\"a\", \"b\"]\n").find("'host': takes one value"), std::string::npos);
  EXPECT_NE(Error("quiet = 3\n").find("'quiet': expected true or false"), std::string::npos);
  EXPECT_NE(Error("port = \n").find("line 1"), std::string::npos);
  EXPECT_NE(Error("[[model]]\nctx = 1\n").find("'model[0]': needs a path"), std::string::npos);
  EXPECT_NE(Error("[[model]]\npath = \"x\"\nctx = \"big\"\n").find("'model[0].ctx': expected an integer"),
            std::string::npos);
  const std::string e = Error("prot = 1\n");
  EXPECT_EQ(e.rfind(path_, 0), 0u) << e;
}

}  // namespace
}  // namespace herd::cli
