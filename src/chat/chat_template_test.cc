// Renders every template in ../shared/testdata/chat-templates over the cases stored in
// src/chat/testdata (expected renders made by Python's jinja2 with HF's settings; regenerate
// with src/chat/tools/render_fixtures.py) and compares byte for byte.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace herd::chat {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> FixtureNames() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(fs::path(HERD_SOURCE_DIR) / "src/chat/testdata")) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// strftime_now over the fixture's fixed "now" (ISO 8601, local time as Python's datetime.now()).
std::function<std::string(const std::string&)> FixedClock(const std::string& iso) {
  std::tm tm{};
  std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
              &tm.tm_sec);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::tm copy = tm;
  std::mktime(&copy);  // fills in the weekday and day of the year
  tm.tm_wday = copy.tm_wday;
  tm.tm_yday = copy.tm_yday;
  return [tm](const std::string& format) {
    char buf[256];
    size_t n = std::strftime(buf, sizeof(buf), format.c_str(), &tm);
    return std::string(buf, n);
  };
}

class ChatTemplateFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateFixture, RendersLikeJinja2) {
  const fs::path path = fs::path(HERD_SOURCE_DIR) / "src/chat/testdata" / GetParam();
  const auto doc = nlohmann::ordered_json::parse(ReadFile(path));
  const std::string source =
      ReadFile(fs::path(HERD_SHARED_DIR) / "testdata/chat-templates" / doc["template"].get<std::string>());
  ASSERT_FALSE(source.empty()) << "template missing: " << doc["template"];
  Result<ChatTemplate> tmpl = ChatTemplate::Parse(source);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  const auto& c = doc["context"];
  ChatContext ctx;
  ctx.messages = c["messages"];
  ctx.tools = c["tools"];
  ctx.add_generation_prompt = c["add_generation_prompt"].get<bool>();
  ctx.bos_token = c["bos_token"].get<std::string>();
  ctx.eos_token = c["eos_token"].get<std::string>();
  ctx.extra = c["extra"];
  ctx.strftime_now = FixedClock(c["now"].get<std::string>());
  Result<std::string> out = tmpl->Render(ctx);
  const auto& expected = doc["expected"];
  if (expected.contains("output")) {
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(*out, expected["output"].get<std::string>());
  } else {
    ASSERT_FALSE(out.ok()) << "expected the error: " << expected["error"] << "\ngot output:\n" << *out;
    // Messages of raise_exception and of jinja2's own errors ("'x' is undefined") must match;
    // Python's TypeErrors only have to be errors.
    const std::string error = expected["error"].get<std::string>();
    if (expected["raised"].get<bool>() || error.rfind("TypeError", 0) != 0) {
      EXPECT_NE(out.status().message().find(expected["error"].get<std::string>()), std::string::npos)
          << out.status().message();
    }
  }
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.size() - 5);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Templates, ChatTemplateFixture, ::testing::ValuesIn(FixtureNames()), TestName);

}  // namespace
}  // namespace herd::chat
