// Time stamps of the incident world: milliseconds since the Unix epoch, UTC,
// rendered in the formats real logs use.
#pragma once

#include <cstdint>
#include <string>

namespace incident {

using time_ms = int64_t;  // milliseconds since 1970-01-01T00:00:00Z

time_ms make_time(int year, int month, int day, int hour, int minute, int second, int millis = 0);

std::string iso_ms(time_ms t);      // 2026-03-14T14:05:12.345Z
std::string iso_s(time_ms t);       // 2026-03-14T14:05:12Z
std::string syslog_time(time_ms t); // Mar 14 14:05:12
std::string nginx_time(time_ms t);  // 14/Mar/2026:14:05:12 +0000
std::string hh_mm(time_ms t);       // 14:05

}  // namespace incident
