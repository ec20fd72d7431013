// Parses Jinja2 template source into a syntax tree (the subset of Jinja2 that chat templates
// use; see chat_template.h). Errors carry line and column.
#pragma once

#include <string_view>

#include "base/status.h"
#include "chat/ast.h"

namespace herd::chat {

Result<Body> Parse(std::string_view source);

}  // namespace herd::chat
