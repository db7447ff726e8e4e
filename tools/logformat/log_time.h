// Civil time for log lines: days from dates, ISO-8601 in and out, and the
// small number scanners every log format uses. Times are microseconds since
// 1970-01-01T00:00:00Z (BlueGene/L and klog stamps carry microseconds).
// Pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tachyon::logformat {

constexpr std::int64_t no_time = INT64_MIN;  // an entry without a timestamp
constexpr std::int64_t us_per_second = 1000000;
constexpr std::int64_t us_per_day = 86400 * us_per_second;

// Days since 1970-01-01 of a proleptic Gregorian date, and back.
std::int64_t days_from_civil(int year, unsigned month, unsigned day);
void civil_from_days(std::int64_t days, int* year, unsigned* month, unsigned* day);
std::int64_t floor_div(std::int64_t a, std::int64_t b);

struct civil_time {
    int year = 0;  // 0: the line gives none
    int month = 0, day = 0, hour = 0, minute = 0, second = 0;
    int micros = 0;
    bool valid() const;  // month 1-12, day 1-31, hour 0-23, minute 0-59, second 0-60
    std::int64_t to_us() const;  // as if UTC; year 0 counts as 2000 (a leap year: Feb 29 stays)
};
civil_time civil_from_us(std::int64_t us);

// "2026-03-14T14:05:12.345678Z"; the fraction shows microseconds when the
// time has any, else milliseconds. "-" for no_time.
std::string format_iso(std::int64_t us);
int year_of(std::int64_t us);

// A zone written after a time: "Z", "UTC", "+01:00", "-0500", "+01".
// Returns the offset in minutes east of UTC; `n_used` the characters read.
std::optional<int> parse_zone(std::string_view s, std::size_t* n_used);
// A zone hint from settings: "UTC", "Z", "+02:00", "-0700".
std::optional<int> parse_zone_hint(std::string_view s);

// "2026-03-14T14:05:12[.,]fff[zone]" or with ' ' for 'T'. The fraction needs
// a digit after the separator (so "12, Info" ends at the seconds). `zone`
// receives the offset when one is written.
std::optional<civil_time> parse_iso_civil(std::string_view s, std::size_t* n_used, std::optional<int>* zone);

// Scanners: `n` digits at s[at], a fraction of up to 9 digits as micros.
bool read_digits(std::string_view s, std::size_t at, std::size_t n, int* out);
std::size_t read_fraction(std::string_view s, std::size_t at, int* micros);  // digits consumed
int month_from_name(std::string_view three_letters);  // "Jan" -> 1 (case-insensitive); 0 when none

}  // namespace tachyon::logformat
