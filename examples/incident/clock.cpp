#include "examples/incident/clock.h"

#include <cstdio>

namespace incident {
namespace {

constexpr const char* month_names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// Days since 1970-01-01 of a proleptic Gregorian date (the era arithmetic of
// H. Hinnant's public-domain date algorithms).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

struct civil {
    int year;
    int month;  // 1..12
    int day;
    int hour;
    int minute;
    int second;
    int millis;
};

civil to_civil(time_ms t) {
    int64_t days = t >= 0 ? t / 86400000 : (t - 86399999) / 86400000;
    int64_t ms_of_day = t - days * 86400000;
    days += 719468;
    const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    const unsigned doe = static_cast<unsigned>(days - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    const unsigned d = doy - (153 * mp + 2) / 5 + 1;
    const unsigned m = mp < 10 ? mp + 3 : mp - 9;
    const int64_t y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
    civil c{};
    c.year = static_cast<int>(y);
    c.month = static_cast<int>(m);
    c.day = static_cast<int>(d);
    c.hour = static_cast<int>(ms_of_day / 3600000);
    c.minute = static_cast<int>(ms_of_day / 60000 % 60);
    c.second = static_cast<int>(ms_of_day / 1000 % 60);
    c.millis = static_cast<int>(ms_of_day % 1000);
    return c;
}

}  // namespace

time_ms make_time(int year, int month, int day, int hour, int minute, int second, int millis) {
    const int64_t days = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
    return ((days * 24 + hour) * 60 + minute) * 60000 + second * 1000 + millis;
}

std::string iso_ms(time_ms t) {
    const civil c = to_civil(t);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", c.year, c.month, c.day, c.hour,
                  c.minute, c.second, c.millis);
    return buf;
}

std::string iso_s(time_ms t) {
    const civil c = to_civil(t);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", c.year, c.month, c.day, c.hour, c.minute,
                  c.second);
    return buf;
}

std::string syslog_time(time_ms t) {
    const civil c = to_civil(t);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%s %2d %02d:%02d:%02d", month_names[c.month - 1], c.day, c.hour, c.minute,
                  c.second);
    return buf;
}

std::string nginx_time(time_ms t) {
    const civil c = to_civil(t);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%02d/%s/%04d:%02d:%02d:%02d +0000", c.day, month_names[c.month - 1], c.year,
                  c.hour, c.minute, c.second);
    return buf;
}

std::string hh_mm(time_ms t) {
    const civil c = to_civil(t);
    char buf[16];
    std::snprintf(buf, sizeof buf, "%02d:%02d", c.hour, c.minute);
    return buf;
}

}  // namespace incident
