// Writing JSON text by hand: string escaping that always yields valid JSON
// (control characters escaped, invalid UTF-8 replaced by U+FFFD), and numbers
// that JSON can represent. Used where a whole JSON DOM would be a needless
// allocation per field (the journal writes one line per event).
#pragma once

#include <string>
#include <string_view>

namespace tachyon {

// Appends `text` as a quoted JSON string. Bytes that are not valid UTF-8
// (stray continuation bytes, overlong forms, surrogates, truncated sequences)
// each become U+FFFD, so the output parses whatever the input was.
void append_json_string(std::string& out, std::string_view text);

// Appends `value` with 3 decimals (microseconds when the unit is ms);
// NaN and infinities, which JSON cannot hold, are written as 0.
void append_json_ms(std::string& out, double value);

// Replaces invalid UTF-8 in `text` by U+FFFD (same rules as append_json_string).
std::string sanitize_utf8(std::string_view text);

}  // namespace tachyon
