// Log levels normalised across formats: words in any case, single letters
// (V/D/I/W/E/F as Android and klog write them), syslog severities, numeric
// levels (pino/bunyan 10..60) and HTTP status classes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tachyon::logformat {

// Ordered by severity; unknown sorts first.
enum class severity : std::uint8_t { unknown = 0, trace, debug, info, notice, warn, error, critical, fatal };
constexpr int n_severity = 9;

std::string_view to_string(severity s);  // "trace" ... "fatal", "unknown"

// "ERROR", "Warning", "warn", "err", "crit", "emerg", "panic", "severe",
// "information", "verbose", "failure", ... (case-insensitive).
std::optional<severity> severity_from_word(std::string_view word);
// "V" "D" "I" "W" "E" "F" "A"(assert) "C", case-sensitive upper letters.
std::optional<severity> severity_from_letter(char letter);
// Syslog severity 0 (emerg) .. 7 (debug).
severity severity_from_syslog(int value);
// A number written as a level: 0..7 syslog, 10..60 pino/bunyan.
std::optional<severity> severity_from_number(std::int64_t value);
// 1xx-3xx info, 4xx warn, 5xx error.
std::optional<severity> severity_from_http_status(int status);

}  // namespace tachyon::logformat
