#include "cli/serve_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <fstream>

namespace herd::cli {
namespace {

std::string EnvName(const std::string& long_name) {
  std::string env = "HERD_";
  for (char c : long_name) env += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return env;
}

[[noreturn]] void Bad(const std::string& path, const std::string& key, const std::string& why) {
  throw CLI::ValidationError(path + ": " + (key.empty() ? "" : "'" + key + "': ") + why);
}

// A scalar TOML value as the text a flag would take.
std::optional<std::string> ScalarText(const toml::node& node) {
  if (auto s = node.value<std::string>(); s && node.is_string()) return *s;
  if (node.is_boolean()) return *node.value<bool>() ? "true" : "false";
  if (node.is_integer()) return std::to_string(*node.value<int64_t>());
  if (node.is_floating_point()) {
    std::string t = std::to_string(*node.value<double>());
    t.erase(t.find_last_not_of('0') + 1);
    if (!t.empty() && t.back() == '.') t.pop_back();
    return t;
  }
  return std::nullopt;
}

ModelSpec ReadModel(const std::string& path, const toml::table& t, size_t index) {
  const std::string where = "model[" + std::to_string(index) + "]";
  ModelSpec m;
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    const std::string name = where + "." + key;
    if (key == "devices") {  // replicas: one instance per device
      const toml::array* list = v.as_array();
      if (list == nullptr || list->empty()) Bad(path, name, "expected a non-empty array of device names");
      for (const auto& item : *list) {
        if (!item.is_string()) Bad(path, name, "expected an array of device names (\"cpu\", \"cuda:N\")");
        m.devices.push_back(*item.value<std::string>());
      }
      continue;
    }
    auto text = ScalarText(v);
    if (!text) Bad(path, name, "expected a string, number or boolean");
    const auto integer = [&]() -> int {
      if (!v.is_integer()) Bad(path, name, "expected an integer");
      return static_cast<int>(*v.value<int64_t>());
    };
    if (key == "path") {
      m.path = *text;
    } else if (key == "alias") {
      m.alias = *text;
    } else if (key == "ctx") {
      m.ctx = integer();
    } else if (key == "threads") {
      m.threads = integer();
    } else if (key == "batch_tokens" || key == "batch-tokens") {
      m.batch_tokens = integer();
    } else if (key == "kv_type" || key == "kv-type") {
      m.kv_type = *text;
    } else if (key == "kv_budget" || key == "kv-budget") {
      m.kv_budget = *text;
    } else if (key == "device") {
      m.device = *text;
    } else {
      Bad(path, name,
          "unknown key (known: path, alias, ctx, threads, batch_tokens, kv_type, kv_budget, device, devices)");
    }
  }
  if (m.path.empty()) Bad(path, where, "needs a path");
  if (m.device && !m.devices.empty()) Bad(path, where, "takes device or devices, not both");
  return m;
}

}  // namespace

void AddEnvironmentNames(CLI::App* cmd) {
  for (CLI::Option* opt : cmd->get_options()) {
    const std::string& name = opt->get_single_name();
    if (opt->get_lnames().empty() || name == "help" || name == "config") continue;
    opt->envname(EnvName(opt->get_lnames().front()));
  }
}

std::vector<ModelSpec> ApplyConfigFile(const std::string& path, CLI::App* cmd) {
  toml::table file;
  if (!std::ifstream(path).good()) Bad(path, "", "cannot open the configuration file");
  try {
    file = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    Bad(path, "",
        "line " + std::to_string(where.line) + ", column " + std::to_string(where.column) + ": " +
            std::string(e.description()));
  }
  std::vector<ModelSpec> models;
  for (const auto& [k, v] : file) {
    std::string key(k.str());
    if (key == "model") {
      const toml::array* list = v.as_array();
      if (list == nullptr) Bad(path, key, "expected [[model]] tables");
      for (size_t i = 0; i < list->size(); ++i) {
        const toml::table* t = (*list)[i].as_table();
        if (t == nullptr) Bad(path, key, "expected [[model]] tables");
        models.push_back(ReadModel(path, *t, i));
      }
      continue;
    }
    std::replace(key.begin(), key.end(), '_', '-');
    CLI::Option* opt = cmd->get_option_no_throw("--" + key);
    if (opt == nullptr || key == "config" || key == "help") Bad(path, std::string(k.str()), "unknown key");
    if (opt->count() > 0) continue;  // given on the command line or in the environment
    std::vector<std::string> values;
    if (const toml::array* list = v.as_array()) {
      for (const auto& item : *list) {
        auto text = ScalarText(item);
        if (!text) Bad(path, std::string(k.str()), "expected an array of strings or numbers");
        values.push_back(*text);
      }
      if (opt->get_items_expected_max() <= 1) Bad(path, std::string(k.str()), "takes one value, not an array");
    } else {
      auto text = ScalarText(v);
      if (!text) Bad(path, std::string(k.str()), "expected a string, number, boolean or array");
      values.push_back(*text);
    }
    if (opt->get_expected_min() == 0 && values.size() == 1) {  // a flag
      if (values[0] != "true" && values[0] != "false") Bad(path, std::string(k.str()), "expected true or false");
    }
    for (auto& value : values) opt->add_result(value);
    try {
      opt->run_callback();
    } catch (const CLI::ParseError& e) {
      Bad(path, std::string(k.str()), e.what());
    }
  }
  return models;
}

}  // namespace herd::cli
