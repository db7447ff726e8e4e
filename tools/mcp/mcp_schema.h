// The inputSchema of an MCP tool as tachyon's tools declare theirs: one
// self-contained JSON Schema of type object. Local references ("#/$defs/X",
// "#/definitions/X", "#") are inlined and the definitions dropped, since the
// runtime's schema compiler (and the model reading the tool list) sees one
// schema without references. A non-object root, a reference outside the
// document, or a recursive one is refused.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "base/result.h"

namespace tachyon::tools::mcp {

// `schema_json` normalised and minified; errors name `server` and `tool`.
// Arguments listed in `grounded` get "x-grounded": true (top-level
// properties of type string, or arrays of strings).
result<std::string> normalize_input_schema(std::string_view schema_json, std::string_view server, std::string_view tool,
                                           const std::set<std::string>& grounded = {});

}  // namespace tachyon::tools::mcp
