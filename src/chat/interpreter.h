// Renders a parsed template: jinja2's evaluation rules (scoping per loop iteration and macro,
// loop variables, namespace(), break/continue, macros and call blocks, filter blocks), with the
// globals HF provides. Errors carry the line and column of the node that failed.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "chat/ast.h"
#include "chat/value.h"

namespace herd::chat {

// One scope of variables; lookups walk to the parent.
struct Frame {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Frame> parent;

  const Value* Find(const std::string& name) const;
};

struct RenderOptions {
  // strftime_now(format) as HF defines it (datetime.now().strftime(format)).
  std::function<std::string(const std::string& format)> strftime_now;
};

// Renders `body` with `globals` (the template's variables: messages, tools, ...) visible. The
// builtin globals range, dict, namespace, raise_exception and strftime_now are added.
// Cost: proportional to the work the template does; no allocation beyond the values it builds.
Result<std::string> Render(const Body& body, std::unordered_map<std::string, Value> globals,
                           const RenderOptions& options);

}  // namespace herd::chat
