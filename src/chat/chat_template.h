// Chat templates: renders a model's own Jinja2 chat template (GGUF `tokenizer.chat_template`,
// HF `chat_template`) exactly as Hugging Face transformers' apply_chat_template does with
// Python's jinja2 (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
// tojson = json.dumps(ensure_ascii=False, ...), raise_exception, strftime_now), byte for byte.
//
// The interpreter is herd's own and covers what real templates use: for (loop.* variables,
// else, `if` filter), if/elif/else, set (incl. block set, tuple unpacking, namespace
// attributes), macro (defaults, caller), call and filter blocks, break/continue, whitespace
// control; expressions with Python semantics (slicing, in, is-tests, ~, ternary, str/list/dict
// methods, integer division, str() of True/None/floats); jinja2's filters and tests. Undefined
// behaves like jinja2's default Undefined: prints as "", iterates as empty, is falsy, but
// attribute access on it, arithmetic with it and calling it fail. Not supported: recursive
// loops, {% raw %}, {% include %}/{% extends %}/{% import %}, the `%` string-format operator.
//
// Errors (syntax errors at Parse, template errors and raise_exception(msg) at Render) are
// kInvalidArgument with "line L, column C: message".
//
// A model without a template gets ChatTemplate::Default(): ChatML
// ("<|im_start|>{role}\n{content}<|im_end|>\n" per message, "<|im_start|>assistant\n" when
// add_generation_prompt), the convention most instruction-tuned models and llama.cpp fall back on.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace herd::chat {

struct Stmt;

// What HF passes to the template. JSON values become Python-like values (objects keep their
// key order; integers stay integers, 1.0 stays a float).
struct ChatContext {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;      // null: `tools` is None (as HF passes it when there are none)
  nlohmann::ordered_json documents;  // null: None
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  // Extra template variables (HF's **kwargs), e.g. {"enable_thinking": false}; an object.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  // strftime_now(format); empty: the current local time through std::strftime.
  std::function<std::string(const std::string& format)> strftime_now;
};

class ChatTemplate {
 public:
  // Parses template source. Cost: linear in the source; the result is immutable and can be
  // shared by concurrent renders.
  static Result<ChatTemplate> Parse(std::string_view source);
  // The fallback for models without a template (ChatML; see the file comment).
  static const ChatTemplate& Default();
  static constexpr std::string_view kDefaultSource =
      "{%- for message in messages -%}"
      "{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] if message['content'] is string else "
      "message['content'] | tojson) + '<|im_end|>\\n' -}}"
      "{%- endfor -%}"
      "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

  // Renders the prompt. Cost: well under a millisecond for ordinary conversations.
  Result<std::string> Render(const ChatContext& ctx) const;

  const std::string& source() const { return *source_; }

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
  std::shared_ptr<const std::string> source_;
};

}  // namespace herd::chat
