#include "tools/logformat/log_time.h"

#include <array>
#include <cstdio>

namespace tachyon::logformat {
namespace {
bool is_digit(char c) { return c >= '0' && c <= '9'; }
char lower(char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; }
constexpr std::array<std::string_view, 12> month_names = {"jan", "feb", "mar", "apr", "may", "jun",
                                                          "jul", "aug", "sep", "oct", "nov", "dec"};
}  // namespace

// Era arithmetic: the calendar repeats every 400 years = 146097 days, with
// March as month 0 so that the leap day is last.
std::int64_t days_from_civil(int year, unsigned month, unsigned day) {
    year -= month <= 2 ? 1 : 0;
    const std::int64_t era = (year >= 0 ? year : year - 399) / 400;
    const unsigned yoe = unsigned(year - era * 400);
    const unsigned doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + std::int64_t(doe) - 719468;
}

void civil_from_days(std::int64_t z, int* year, unsigned* month, unsigned* day) {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = unsigned(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *day = doy - (153 * mp + 2) / 5 + 1;
    *month = mp < 10 ? mp + 3 : mp - 9;
    *year = int(std::int64_t(yoe) + era * 400 + (*month <= 2 ? 1 : 0));
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

bool civil_time::valid() const {
    return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour >= 0 && hour <= 23 && minute >= 0 &&
           minute <= 59 && second >= 0 && second <= 60 && micros >= 0 && micros < 1000000 && year >= 0 &&
           year <= 9999;
}

std::int64_t civil_time::to_us() const {
    const int y = year == 0 ? 2000 : year;
    const std::int64_t days = days_from_civil(y, unsigned(month), unsigned(day));
    return ((days * 24 + hour) * 60 + minute) * 60 * us_per_second + std::int64_t(second) * us_per_second + micros;
}

civil_time civil_from_us(std::int64_t us) {
    const std::int64_t days = floor_div(us, us_per_day);
    const std::int64_t rest = us - days * us_per_day;
    civil_time t;
    unsigned m = 0, d = 0;
    civil_from_days(days, &t.year, &m, &d);
    t.month = int(m), t.day = int(d);
    t.hour = int(rest / (3600 * us_per_second));
    t.minute = int(rest / (60 * us_per_second) % 60);
    t.second = int(rest / us_per_second % 60);
    t.micros = int(rest % us_per_second);
    return t;
}

int year_of(std::int64_t us) { return civil_from_us(us).year; }

std::string format_iso(std::int64_t us) {
    if (us == no_time) return "-";
    const civil_time t = civil_from_us(us);
    char buf[48];
    if (t.micros % 1000 != 0)
        std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", t.year, t.month, t.day, t.hour, t.minute,
                      t.second, t.micros);
    else
        std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.year, t.month, t.day, t.hour, t.minute,
                      t.second, t.micros / 1000);
    return buf;
}

bool read_digits(std::string_view s, std::size_t at, std::size_t n, int* out) {
    if (at > s.size() || s.size() - at < n) return false;
    int v = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (!is_digit(s[at + i])) return false;
        v = v * 10 + (s[at + i] - '0');
    }
    *out = v;
    return true;
}

std::size_t read_fraction(std::string_view s, std::size_t at, int* micros) {
    std::size_t n = 0;
    int v = 0;
    while (at + n < s.size() && is_digit(s[at + n])) {
        if (n < 6) v = v * 10 + (s[at + n] - '0');
        ++n;
    }
    for (std::size_t k = n; k < 6; ++k) v *= 10;
    if (n > 0) *micros = v;
    return n;
}

int month_from_name(std::string_view s) {
    if (s.size() < 3) return 0;
    char b[3] = {lower(s[0]), lower(s[1]), lower(s[2])};
    for (std::size_t i = 0; i < month_names.size(); ++i)
        if (std::string_view(b, 3) == month_names[i]) return int(i) + 1;
    return 0;
}

std::optional<int> parse_zone(std::string_view s, std::size_t* n_used) {
    if (s.empty()) return std::nullopt;
    if (s[0] == 'Z') {
        *n_used = 1;
        return 0;
    }
    if (s.starts_with("UTC") || s.starts_with("GMT")) {
        std::size_t k = 3;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) {
            std::size_t more = 0;
            if (auto z = parse_zone(s.substr(k), &more)) {
                *n_used = k + more;
                return z;
            }
        }
        *n_used = 3;
        return 0;
    }
    if (s[0] != '+' && s[0] != '-') return std::nullopt;
    int zh = 0, zm = 0;
    std::size_t k = 1;
    if (!read_digits(s, k, 2, &zh) || zh > 14) return std::nullopt;
    k += 2;
    if (k < s.size() && s[k] == ':') {
        if (!read_digits(s, k + 1, 2, &zm)) return std::nullopt;
        k += 3;
    } else if (read_digits(s, k, 2, &zm)) {
        k += 2;
    }
    if (zm > 59) return std::nullopt;
    *n_used = k;
    return (zh * 60 + zm) * (s[0] == '-' ? -1 : 1);
}

std::optional<int> parse_zone_hint(std::string_view s) {
    std::size_t used = 0;
    auto z = parse_zone(s, &used);
    if (!z || used != s.size()) return std::nullopt;
    return z;
}

std::optional<civil_time> parse_iso_civil(std::string_view s, std::size_t* n_used, std::optional<int>* zone) {
    civil_time t;
    if (s.size() < 19 || !read_digits(s, 0, 4, &t.year) || s[4] != '-' || !read_digits(s, 5, 2, &t.month) ||
        s[7] != '-' || !read_digits(s, 8, 2, &t.day) || (s[10] != 'T' && s[10] != ' ') ||
        !read_digits(s, 11, 2, &t.hour) || s[13] != ':' || !read_digits(s, 14, 2, &t.minute) || s[16] != ':' ||
        !read_digits(s, 17, 2, &t.second))
        return std::nullopt;
    if (t.year == 0 || !t.valid()) return std::nullopt;
    std::size_t at = 19;
    if (at + 1 < s.size() && (s[at] == '.' || s[at] == ',') && is_digit(s[at + 1])) at += 1 + read_fraction(s, at + 1, &t.micros);
    if (zone) zone->reset();
    std::size_t z_used = 0;
    std::size_t z_at = at < s.size() && s[at] == ' ' && at + 1 < s.size() && (s[at + 1] == '+' || s[at + 1] == '-' || s[at + 1] == 'U')
                           ? at + 1
                           : at;
    if (z_at < s.size()) {
        if (auto z = parse_zone(s.substr(z_at), &z_used)) {
            // a zone must end there: "+0100]" or "Z " but not "-" of " - INFO"
            std::size_t end = z_at + z_used;
            bool ends = end == s.size() || !(s[end] >= 'A' && s[end] <= 'z');
            bool dash_word = z_at != at && z_used == 1;
            if (ends && !dash_word && (z_at == at || s[z_at] != 'U' || z_used >= 3)) {
                if (zone) *zone = *z;
                at = end;
            }
        }
    }
    if (n_used) *n_used = at;
    return t;
}

}  // namespace tachyon::logformat
