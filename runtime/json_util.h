// Small JSON helpers shared by the runtime: escaping strings for output, and
// reading documents with simdjson into compact text. simdjson headers stay
// out of this header (they are heavy); callers that walk documents include
// <simdjson.h> themselves.
#pragma once

#include <string>
#include <string_view>

#include "inference/base/result.h"

namespace tachyon::json {

// `s` as a JSON string literal, quotes included. Control characters are
// escaped; invalid UTF-8 bytes become U+FFFD so the output is always valid.
std::string quote(std::string_view s);
void append_quoted(std::string& out, std::string_view s);

// Parses `text` and returns it minified, or an error naming `what` and the
// problem ("agents/x.json: not valid JSON: ...").
result<std::string> minify(std::string_view text, std::string_view what);

// Re-serialises with ", " and ": " separators (the style of the prompt
// format and the training data), keys in document order.
result<std::string> spaced(std::string_view text, std::string_view what);

}  // namespace tachyon::json
