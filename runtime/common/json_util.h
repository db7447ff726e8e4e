// Small JSON helpers shared by the runtime: escaping strings for output, and
// reading documents with simdjson into compact text. simdjson headers stay
// out of this header (they are heavy); callers that walk documents include
// <simdjson.h> themselves.
#pragma once

#include <string>
#include <string_view>

#include "base/json_text.h"
#include "base/result.h"

namespace simdjson::dom {
enum class element_type;  // <simdjson.h>
}

namespace tachyon::json {

// The kind of a value as an error message names it: "an array", "an
// integer", "null" ... ("expected a string, got an integer").
std::string kind_name(simdjson::dom::element_type t);

// A duration in milliseconds with three decimals ("12.345"); 0 for NaN/inf.
void append_ms(std::string& out, double value);

// Parses `text` and returns it minified, or an error naming `what` and the
// problem ("agents/x.json: not valid JSON: ...").
result<std::string> minify(std::string_view text, std::string_view what);

// Re-serialises with ", " and ": " separators (the style of the prompt
// format and the training data), keys in document order.
result<std::string> spaced(std::string_view text, std::string_view what);

}  // namespace tachyon::json
