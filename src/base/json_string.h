// JSON string escaping as Python's json.dumps(ensure_ascii=False) writes it: `"` and `\` and
// \n \r \t \b \f by name, other control characters as \u00XX, everything else (UTF-8 included)
// verbatim. Shared by the chat templates' tojson (which must match Python byte for byte) and the
// HTTP layer's hand-written JSON.
#pragma once

#include <string>
#include <string_view>

namespace herd {

// Appends the escaped contents of `s` (without surrounding quotes) to *out.
void AppendJsonEscaped(std::string_view s, std::string* out);

}  // namespace herd
