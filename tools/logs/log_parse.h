// One log line into its parts: timestamp, level, message and trace id, for
// the formats incident logs mix (JSON lines, ISO-stamped plain text, syslog,
// nginx access lines), plus the rule that glues stack-trace continuation lines
// to the entry above them. Pure functions: no I/O, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

namespace tachyon::tools {

// Ordered by severity; fatal/critical count as error, 4xx access lines as
// warn and 5xx as error.
enum class log_level : std::uint8_t { none = 0, debug, info, warn, error };

std::string_view to_string(log_level level);  // "ERROR", "WARN", ... "-" for none
std::optional<log_level> parse_level_word(std::string_view word);  // case-insensitive

constexpr std::int64_t no_time = INT64_MIN;  // an entry without a timestamp

// Milliseconds since 1970-01-01T00:00:00Z.
std::int64_t days_from_civil(int year, unsigned month, unsigned day);
std::string format_time(std::int64_t ms);  // "2026-03-14T14:05:12.345Z"

// "2026-03-14T14:05:12.345Z", "2026-03-14 14:05:12,345+01:00", no zone = UTC.
// `n_used` receives the characters consumed.
std::optional<std::int64_t> parse_iso_time(std::string_view s, std::size_t* n_used = nullptr);

struct parsed_line {
    std::int64_t ts_ms = no_time;
    log_level level = log_level::none;
    bool yearless = false;      // syslog stamp: ts_ms assumes year 1970 until fixed
    bool starts_entry = false;  // has a leading timestamp or is a JSON object
    bool json = false;
    std::uint32_t msg_begin = 0, msg_len = 0;      // in the line
    std::uint32_t trace_begin = 0, trace_len = 0;  // in the line; trace_len 0: none
};

// `capacity` is the number of readable bytes from line.data() (at least
// line.size()); JSON lines are parsed in place when it leaves simdjson its
// padding, otherwise through a copy.
parsed_line parse_line(std::string_view line, std::size_t capacity, simdjson::ondemand::parser& parser);

// A line that continues the previous entry (stack frames, "Caused by:",
// Python tracebacks, an unstamped line after a stamped entry).
bool is_continuation(std::string_view line, const parsed_line& parsed, bool previous_has_time);

// Re-stamps a syslog line ("Mar 14 14:05:12 ...") with the year taken from
// context; returns no_time when the line has no syslog stamp.
std::int64_t syslog_time_in_year(std::string_view line, int year);
int year_of(std::int64_t ms);

// Time argument of a tool: full ISO time, or "HH:MM[:SS]" on the UTC day of
// `reference_ms`.
std::optional<std::int64_t> parse_time_argument(std::string_view s, std::int64_t reference_ms);

// Message with numbers and hex identifiers masked, for grouping similar lines.
std::string mask_message(std::string_view message, std::size_t max_len);

}  // namespace tachyon::tools
