#include "chat/chat_template.h"

#include <ctime>

#include "chat/ast.h"
#include "chat/interpreter.h"
#include "chat/parser.h"

namespace herd::chat {
namespace {

Value FromJson(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::None();
    case nlohmann::json::value_t::boolean: return Value::Bool(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::Int(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return Value::Int(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::json::value_t::number_float: return Value::Float(j.get<double>());
    case nlohmann::json::value_t::string: return Value::String(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      ValueList items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(FromJson(x));
      return Value::List(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      ValueDict d;
      d.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it)
        d.items.emplace_back(Value::String(it.key()), FromJson(it.value()));
      return Value::Dict(std::move(d));
    }
    default: return Value::None();
  }
}

std::string LocalStrftime(const std::string& format) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[256];
  size_t n = std::strftime(buf, sizeof(buf), format.c_str(), &tm);
  return std::string(buf, n);
}

}  // namespace

Result<ChatTemplate> ChatTemplate::Parse(std::string_view source) {
  HERD_ASSIGN_OR_RETURN(Body body, chat::Parse(source));
  ChatTemplate t;
  t.body_ = std::make_shared<const Body>(std::move(body));
  t.source_ = std::make_shared<const std::string>(source);
  return t;
}

const ChatTemplate& ChatTemplate::Default() {
  static const ChatTemplate* t = [] {
    Result<ChatTemplate> r = Parse(kDefaultSource);
    if (!r.ok()) {
      std::fprintf(stderr, "default chat template: %s\n", r.status().ToString().c_str());
      std::abort();
    }
    return new ChatTemplate(std::move(r).value());
  }();
  return *t;
}

Result<std::string> ChatTemplate::Render(const ChatContext& ctx) const {
  if (!body_) return InvalidArgument("chat template not parsed");
  std::unordered_map<std::string, Value> vars;
  if (ctx.extra.is_object()) {
    for (auto it = ctx.extra.begin(); it != ctx.extra.end(); ++it) vars[it.key()] = FromJson(it.value());
  }
  vars["messages"] = FromJson(ctx.messages);
  vars["tools"] = FromJson(ctx.tools);
  vars["documents"] = FromJson(ctx.documents);
  vars["add_generation_prompt"] = Value::Bool(ctx.add_generation_prompt);
  vars["bos_token"] = Value::String(ctx.bos_token);
  vars["eos_token"] = Value::String(ctx.eos_token);
  RenderOptions options;
  options.strftime_now = ctx.strftime_now ? ctx.strftime_now : LocalStrftime;
  return chat::Render(*body_, std::move(vars), options);
}

}  // namespace herd::chat
