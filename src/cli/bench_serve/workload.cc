#include "cli/bench_serve/workload.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace herd::bench {
namespace {

using nlohmann::json;

// An agent preamble and tool schemas (as text: servers without tool support take it too).
const char* kAgentPreamble =
    "You are a software engineering agent working in a repository on the user's machine. You can read and "
    "edit files, run commands and search the code base through the tools below. Think about what the user "
    "asked, call one tool at a time, read its result, and stop when the task is done. Answer briefly.\n\n"
    "# Tools\n\nYou may call these functions. Reply with a JSON object {\"name\": ..., \"arguments\": {...}}.\n";

// clang-format off
const char* kToolSchemas[] = {
    R"J({"name": "read_file", "description": "Read a text file of the repository. Returns its lines with numbers.", "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "Path relative to the repository root"}, "offset": {"type": "integer", "description": "First line to read (1-based)"}, "limit": {"type": "integer", "description": "Number of lines"}}, "required": ["path"]}})J",
    R"J({"name": "write_file", "description": "Create or overwrite a file with the given content.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}})J",
    R"J({"name": "edit_file", "description": "Replace an exact, unique string in a file by another.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "old_string": {"type": "string"}, "new_string": {"type": "string"}}, "required": ["path", "old_string", "new_string"]}})J",
    R"J({"name": "run_command", "description": "Run a shell command in the repository and return its exit status, stdout and stderr.", "parameters": {"type": "object", "properties": {"command": {"type": "string"}, "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 600}}, "required": ["command"]}})J",
    R"J({"name": "search_code", "description": "Search the repository for a regular expression; returns matching lines with paths.", "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}, "path": {"type": "string", "description": "Folder to search"}, "max_results": {"type": "integer"}}, "required": ["pattern"]}})J",
    R"J({"name": "list_directory", "description": "List the entries of a folder.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}})J",
};
// clang-format on

const char* kTasks[] = {
    "The test in {w} fails after my last change; find out why and fix it.",
    "Add a command line flag that turns {w} off, with a test.",
    "Rename the function that handles {w} so its name says what it does.",
    "Why is the {w} step slow? Measure it and suggest one change.",
    "Write a short summary of how {w} works in this code base.",
    "The build prints a warning about {w}; make it go away without hiding it.",
    "Find every place that parses {w} and make them share one helper.",
    "Add logging when {w} fails, including the file name.",
};

std::string Replace(std::string s, const std::string& what, const std::string& with) {
  const size_t at = s.find(what);
  if (at != std::string::npos) s.replace(at, what.size(), with);
  return s;
}

Result<std::vector<Session>> Dataset(const WorkloadOptions& o, const TokenCounter& counter) {
  std::ifstream in(o.dataset);
  if (!in) return InvalidArgument(o.dataset + ": cannot open the dataset file");
  std::vector<Session> lines;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = o.dataset + ":" + std::to_string(n);
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return InvalidArgument(where + ": not a JSON object");
    Session s;
    if (j.contains("prompt") && j["prompt"].is_string()) {
      s.user_turns.push_back(j["prompt"].get<std::string>());
    } else if (j.contains("messages") && j["messages"].is_array() && !j["messages"].empty()) {
      for (const json& m : j["messages"]) {
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
            !m["content"].is_string()) {
          return InvalidArgument(where + ": each message needs a string role and content");
        }
        s.base.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
      }
      if (s.base.back().role != "user") return InvalidArgument(where + ": the last message must be the user's");
      s.user_turns.push_back(s.base.back().content);
      s.base.pop_back();
    } else {
      return InvalidArgument(where + ": expected {\"prompt\": string} or {\"messages\": [...]}");
    }
    int max_tokens = o.output_len;
    for (const char* key : {"max_tokens", "output_len"}) {
      if (j.contains(key)) {
        if (!j[key].is_number_integer() || j[key].get<int64_t>() < 1) {
          return InvalidArgument(where + ": " + key + " must be a positive integer");
        }
        max_tokens = static_cast<int>(j[key].get<int64_t>());
      }
    }
    s.max_tokens.push_back(max_tokens);
    lines.push_back(std::move(s));
  }
  if (lines.empty()) return InvalidArgument(o.dataset + ": no prompts");
  std::vector<Session> out;
  for (int i = 0; i < o.num_prompts; ++i) out.push_back(lines[i % lines.size()]);
  // Count each distinct line once (the counter may be a server round trip).
  for (size_t i = 0; i < out.size() && i < lines.size(); ++i) {
    Session& s = out[i];
    bool exact = true, e = false;
    for (const Message& m : s.base) {
      s.base_tokens += counter.Count(m.content, &e);
      exact = exact && e;
    }
    s.turn_tokens.push_back(counter.Count(s.user_turns[0], &e));
    s.exact = exact && e;
  }
  for (size_t i = lines.size(); i < out.size(); ++i) out[i] = out[i % lines.size()];
  return out;
}

}  // namespace

int CountRequests(const std::vector<Session>& sessions) {
  int n = 0;
  for (const Session& s : sessions) n += static_cast<int>(s.user_turns.size());
  return n;
}

Result<std::vector<Session>> BuildWorkload(const WorkloadOptions& o, const TokenCounter& counter) {
  if (o.num_prompts < 1) return InvalidArgument("--num-prompts must be at least 1");
  if (o.output_len < 1) return InvalidArgument("--output-len must be at least 1");
  if (o.kind == "dataset") {
    if (o.dataset.empty()) return InvalidArgument("the dataset workload needs --dataset FILE.jsonl");
    return Dataset(o, counter);
  }
  if (o.input_len < 1) return InvalidArgument("--input-len must be at least 1");
  if (o.shared_prefix_len < 0) return InvalidArgument("--shared-prefix-len must not be negative");
  PromptText text(o.seed, &counter);
  std::vector<Session> out;
  if (o.kind == "random") {
    if (o.shared_prefix_len >= o.input_len) return InvalidArgument("--shared-prefix-len must be below --input-len");
    const FittedText prefix = o.shared_prefix_len > 0 ? text.Fit("", o.shared_prefix_len) : FittedText{};
    for (int i = 0; i < o.num_prompts; ++i) {
      const FittedText t = text.Fit(prefix.text, o.input_len);
      Session s;
      s.user_turns = {t.text};
      s.turn_tokens = {t.tokens};
      s.max_tokens = {o.output_len};
      s.exact = t.exact;
      out.push_back(std::move(s));
    }
  } else if (o.kind == "agent") {
    const int system_len = o.shared_prefix_len > 0 ? o.shared_prefix_len : 1024;
    // Tool schemas while they fit the target; then guidelines (random words) up to it.
    std::string system = "Project " + text.Words(3) + ".\n" + kAgentPreamble;
    for (const char* tool : kToolSchemas) {
      std::string with = system + tool + "\n";
      if (counter.Count(with) > system_len) break;
      system = std::move(with);
    }
    system += "\n# Guidelines\n\n";
    const FittedText sys = text.Fit(system, system_len);
    std::uniform_int_distribution<size_t> pick(0, std::size(kTasks) - 1);
    for (int i = 0; i < o.num_prompts; ++i) {
      const std::string task = Replace(kTasks[pick(text.rng())], "{w}", text.Words(2));
      const FittedText user = text.Fit(task, o.input_len);
      Session s;
      s.base = {{"system", sys.text}};
      s.base_tokens = sys.tokens;
      s.user_turns = {user.text};
      s.turn_tokens = {user.tokens};
      s.max_tokens = {o.output_len};
      s.exact = sys.exact && user.exact;
      out.push_back(std::move(s));
    }
  } else if (o.kind == "multiturn") {
    if (o.turns < 1 || o.turn_len < 1) return InvalidArgument("--turns and --turn-len must be at least 1");
    const FittedText prefix = o.shared_prefix_len > 0 ? text.Fit("", o.shared_prefix_len) : FittedText{};
    for (int left = o.num_prompts; left > 0; left -= o.turns) {
      Session s;
      s.exact = true;
      if (!prefix.text.empty()) {
        s.base = {{"system", prefix.text}};
        s.base_tokens = prefix.tokens;
      }
      for (int t = 0; t < std::min(left, o.turns); ++t) {
        const FittedText user = text.Fit("", t == 0 ? o.input_len : o.turn_len);
        s.user_turns.push_back(user.text);
        s.turn_tokens.push_back(user.tokens);
        s.max_tokens.push_back(o.output_len);
        s.exact = s.exact && user.exact;
      }
      out.push_back(std::move(s));
    }
  } else {
    return InvalidArgument("unknown workload '" + o.kind + "' (random, agent, multiturn, dataset)");
  }
  return out;
}

}  // namespace herd::bench
