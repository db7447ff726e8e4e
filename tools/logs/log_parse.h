// What the log tools share about times and levels: the coarse level the
// tools filter by, millisecond times in and out, time arguments, and message
// masking for grouping. Lines are read by tools/logformat. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tachyon::tools {

// Ordered by severity; fatal/critical count as error, 4xx access lines as
// warn and 5xx as error.
enum class log_level : std::uint8_t { none = 0, debug, info, warn, error };

std::string_view to_string(log_level level);  // "ERROR", "WARN", ... "-" for none
std::optional<log_level> parse_level_word(std::string_view word);  // case-insensitive

constexpr std::int64_t no_time = INT64_MIN;  // an entry without a timestamp

// Milliseconds since 1970-01-01T00:00:00Z (the calendar is logformat's).
std::string format_time(std::int64_t ms);  // "2026-03-14T14:05:12.345Z"

// "2026-03-14T14:05:12.345Z", "2026-03-14 14:05:12,345+01:00", no zone = UTC.
// `n_used` receives the characters consumed.
std::optional<std::int64_t> parse_iso_time(std::string_view s, std::size_t* n_used = nullptr);

// Time argument of a tool: full ISO time, or "HH:MM[:SS]" on the UTC day of
// `reference_ms`.
std::optional<std::int64_t> parse_time_argument(std::string_view s, std::int64_t reference_ms);

// Message with numbers and hex identifiers masked, for grouping similar lines.
std::string mask_message(std::string_view message, std::size_t max_len);

}  // namespace tachyon::tools
