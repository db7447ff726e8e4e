// Scanning helpers shared by the formats_*.cpp files (not a public header).
#pragma once

#include <string_view>

#include "tools/logformat/log_format.h"

namespace tachyon::logformat::detail {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }
inline bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
inline bool is_space(char c) { return c == ' ' || c == '\t'; }

inline text_span span_of(std::size_t begin, std::size_t end) {
    if (end <= begin || begin > 0xffffffffu) return {};
    return text_span{std::uint32_t(begin), std::uint32_t(end - begin)};
}
inline std::size_t skip_spaces(std::string_view s, std::size_t i) {
    while (i < s.size() && is_space(s[i])) ++i;
    return i;
}
// End of the run of non-space characters from i.
inline std::size_t token_end(std::string_view s, std::size_t i) {
    while (i < s.size() && !is_space(s[i])) ++i;
    return i;
}
// Digits from i; returns the end, value in *out (saturating at 18 digits).
inline std::size_t read_number(std::string_view s, std::size_t i, std::int64_t* out) {
    std::int64_t v = 0;
    std::size_t n = 0;
    while (i < s.size() && is_digit(s[i])) {
        if (n < 18) v = v * 10 + (s[i] - '0');
        ++i, ++n;
    }
    *out = v;
    return i;
}
inline bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!is_digit(c)) return false;
    return true;
}

// Message from i to the end of the line, leading separators skipped.
inline void set_message_from(std::string_view line, std::size_t i, line_fields& out) {
    while (i < line.size() && (is_space(line[i]) || line[i] == ':' || line[i] == '-' || line[i] == '|')) ++i;
    out.message = span_of(i, line.size());
}

// A civil time read from a line: absolute with a zone, local without.
inline void set_civil(line_fields& out, const civil_time& t, std::optional<int> zone) {
    if (zone) {
        out.time_us = t.to_us() - std::int64_t(*zone) * 60 * us_per_second;
        out.time = time_kind::absolute;
        out.zone_minutes = std::int16_t(*zone);
    } else {
        out.time_us = t.to_us();
        out.time = t.year == 0 ? time_kind::yearless : time_kind::local;
    }
}
inline void set_epoch_us(line_fields& out, std::int64_t us) {
    out.time_us = us;
    out.time = time_kind::absolute;
}

// "name[pid]:" or "name(sub)[pid]:" or "name:" at i; fills service and pid
// and returns the position after the ':' (npos when not there).
std::size_t read_program(std::string_view line, std::size_t i, line_fields& out);
// A level word standing alone among the first `max_tokens` tokens from i
// (upper case, or any case inside brackets "[error]"); returns the end of the
// token or npos.
std::size_t find_level_token(std::string_view line, std::size_t i, int max_tokens, line_fields& out);
// "level=warn" / "lvl=error" anywhere in the head of the line.
bool find_level_pair(std::string_view line, line_fields& out);
// "trace=4bf9...", "trace_id=...", "traceId: ..." anywhere in the line.
void find_trace(std::string_view line, line_fields& out);

}  // namespace tachyon::logformat::detail
