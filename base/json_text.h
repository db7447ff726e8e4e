// JSON string literals, for every layer that writes JSON by hand (the
// runtime's journal and API, the MCP client's JSON-RPC messages).
#pragma once

#include <string>
#include <string_view>

namespace tachyon::json {

// `s` as a JSON string literal, quotes included. Control characters are
// escaped; bytes that are not valid UTF-8 (RFC 3629: no overlongs, no
// surrogates) become U+FFFD, so the output is always valid JSON.
std::string quote(std::string_view s);
void append_quoted(std::string& out, std::string_view s);

// `text` with every byte that starts no valid UTF-8 sequence replaced by U+FFFD.
std::string sanitize_utf8(std::string_view text);

}  // namespace tachyon::json
