#include "tools/logs/log_parse.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace tachyon::tools {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
char lower(char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; }

bool digits(std::string_view s, std::size_t at, std::size_t n, int* out) {
    if (at + n > s.size()) return false;
    int v = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (!is_digit(s[at + i])) return false;
        v = v * 10 + (s[at + i] - '0');
    }
    *out = v;
    return true;
}

constexpr std::array<std::string_view, 12> month_names = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

int month_from_name(std::string_view s) {
    for (std::size_t i = 0; i < month_names.size(); ++i)
        if (s == month_names[i]) return int(i) + 1;
    return 0;
}

std::int64_t to_ms(int year, int month, int day, int hour, int minute, int second, int millis) {
    return ((days_from_civil(year, unsigned(month), unsigned(day)) * 24 + hour) * 60 + minute) * 60000LL +
           second * 1000LL + millis;
}

bool valid_clock(int month, int day, int hour, int minute, int second) {
    return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && minute <= 59 && second <= 60;
}

// "Mar 14 14:05:12" (day may be space-padded) at the start of s.
std::optional<std::int64_t> parse_syslog(std::string_view s, int year, std::size_t* n_used) {
    if (s.size() < 15 || s[3] != ' ') return std::nullopt;
    int month = month_from_name(s.substr(0, 3));
    if (month == 0) return std::nullopt;
    int day = 0, hour = 0, minute = 0, second = 0;
    std::size_t at = 4;
    if (s[at] == ' ') ++at;
    if (!digits(s, at, 1, &day)) return std::nullopt;
    if (at + 1 < s.size() && is_digit(s[at + 1])) digits(s, at, 2, &day), ++at;
    ++at;
    if (at >= s.size() || s[at] != ' ') return std::nullopt;
    ++at;
    if (!digits(s, at, 2, &hour) || at + 8 > s.size() || s[at + 2] != ':' || !digits(s, at + 3, 2, &minute) ||
        s[at + 5] != ':' || !digits(s, at + 6, 2, &second))
        return std::nullopt;
    if (!valid_clock(month, day, hour, minute, second)) return std::nullopt;
    if (n_used) *n_used = at + 8;
    return to_ms(year, month, day, hour, minute, second, 0);
}

// "14/Mar/2026:14:05:12 +0000" right after the '['.
std::optional<std::int64_t> parse_nginx_time(std::string_view s) {
    int day = 0, year = 0, hour = 0, minute = 0, second = 0;
    if (s.size() < 26 || !digits(s, 0, 2, &day) || s[2] != '/' || s[6] != '/' || !digits(s, 7, 4, &year) ||
        s[11] != ':' || !digits(s, 12, 2, &hour) || s[14] != ':' || !digits(s, 15, 2, &minute) || s[17] != ':' ||
        !digits(s, 18, 2, &second) || s[20] != ' ')
        return std::nullopt;
    int month = month_from_name(s.substr(3, 3));
    if (month == 0 || !valid_clock(month, day, hour, minute, second)) return std::nullopt;
    int zh = 0, zm = 0;
    if ((s[21] != '+' && s[21] != '-') || !digits(s, 22, 2, &zh) || !digits(s, 24, 2, &zm)) return std::nullopt;
    std::int64_t offset = (zh * 60LL + zm) * 60000LL * (s[21] == '-' ? -1 : 1);
    return to_ms(year, month, day, hour, minute, second, 0) - offset;
}

// First level word in the head of a plain line: an upper-case token (ERROR,
// WARN, ...) or "level=error". Returns the end of the token for the message.
std::optional<log_level> find_plain_level(std::string_view line, std::size_t from, std::size_t* token_end) {
    std::size_t end = std::min<std::size_t>(line.size(), from + 160);
    std::size_t i = from;
    while (i < end) {
        if (!is_alnum(line[i])) { ++i; continue; }
        std::size_t j = i;
        while (j < line.size() && (is_alnum(line[j]) || line[j] == '_')) ++j;
        std::string_view word = line.substr(i, j - i);
        bool upper = word.size() >= 3 && word.size() <= 8 &&
                     std::all_of(word.begin(), word.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
        if (upper) {
            if (auto level = parse_level_word(word)) {
                *token_end = j;
                return level;
            }
        } else if ((word == "level" || word == "lvl" || word == "severity") && j < line.size() && line[j] == '=') {
            std::size_t k = j + 1;
            if (k < line.size() && line[k] == '"') ++k;
            std::size_t e = k;
            while (e < line.size() && is_alnum(line[e])) ++e;
            if (auto level = parse_level_word(line.substr(k, e - k))) {
                *token_end = e + (e < line.size() && line[e] == '"' ? 1 : 0);
                return level;
            }
        }
        i = j;
    }
    return std::nullopt;
}

// "trace=4bf92f35...", "trace_id=...", "traceId: ..." in plain text.
void find_plain_trace(std::string_view line, parsed_line& out) {
    std::size_t at = 0;
    while ((at = line.find("trace", at)) != std::string_view::npos) {
        std::size_t k = at + 5;
        if (line.compare(k, 3, "_id") == 0 || line.compare(k, 3, "-id") == 0 || line.compare(k, 2, "Id") == 0 ||
            line.compare(k, 2, "ID") == 0)
            k += line[k] == '_' || line[k] == '-' ? 3 : 2;
        if (k < line.size() && (line[k] == '=' || line[k] == ':')) {
            ++k;
            while (k < line.size() && (line[k] == ' ' || line[k] == '"')) ++k;
            std::size_t e = k;
            while (e < line.size() && is_hex(line[e])) ++e;
            if (e - k >= 8 && k <= 0xffff) {
                out.trace_begin = std::uint32_t(k);
                out.trace_len = std::uint32_t(std::min<std::size_t>(e - k, 64));
                return;
            }
        }
        at += 5;
    }
}

void set_message(parsed_line& out, std::size_t begin, std::size_t end) {
    out.msg_begin = std::uint32_t(begin);
    out.msg_len = std::uint32_t(end - begin);
}

std::size_t skip_separators(std::string_view line, std::size_t i) {
    while (i < line.size() && (line[i] == ' ' || line[i] == ':' || line[i] == ']' || line[i] == '-' ||
                               line[i] == '|' || line[i] == '\t'))
        ++i;
    return i;
}

void parse_plain_rest(std::string_view line, std::size_t after_time, parsed_line& out) {
    std::size_t token_end = 0;
    if (auto level = find_plain_level(line, after_time, &token_end)) {
        out.level = *level;
        set_message(out, skip_separators(line, token_end), line.size());
    } else {
        set_message(out, skip_separators(line, after_time), line.size());
    }
    find_plain_trace(line, out);
}

bool try_json(std::string_view line, std::size_t capacity, simdjson::ondemand::parser& parser, parsed_line& out) {
    simdjson::padded_string copy;
    simdjson::ondemand::document doc;
    simdjson::error_code err;
    if (capacity >= line.size() + simdjson::SIMDJSON_PADDING) {
        err = parser.iterate(line.data(), line.size(), capacity).get(doc);
    } else {
        copy = simdjson::padded_string(line);
        err = parser.iterate(copy).get(doc);
    }
    if (err) return false;
    simdjson::ondemand::object object;
    if (doc.get_object().get(object)) return false;
    parsed_line r;
    r.json = true;
    r.starts_entry = true;
    auto offset_in_line = [&](std::string_view raw) -> std::size_t {
        // raw tokens point into `line` or into `copy`
        const char* base = copy.size() ? copy.data() : line.data();
        return std::size_t(raw.data() - base);
    };
    for (auto field : object) {
        std::string_view key;
        if (field.unescaped_key().get(key)) return false;
        simdjson::ondemand::value value;
        if (field.value().get(value)) return false;
        if (key == "ts" || key == "timestamp" || key == "time" || key == "@timestamp") {
            std::string_view s;
            if (!value.get_string().get(s)) {
                if (auto t = parse_iso_time(s)) r.ts_ms = *t;
            }
        } else if (key == "level" || key == "severity" || key == "lvl" || key == "loglevel") {
            std::string_view s;
            if (!value.get_string().get(s)) {
                if (auto level = parse_level_word(s)) r.level = *level;
            }
        } else if (key == "msg" || key == "message") {
            {
                std::string_view raw = value.raw_json_token();
                // the raw token may carry the whitespace before the next ','
                while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\t')) raw.remove_suffix(1);
                if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"') {
                    std::size_t b = offset_in_line(raw) + 1;
                    set_message(r, b, b + raw.size() - 2);
                }
            }
        } else if (key == "trace_id" || key == "traceId" || key == "trace") {
            std::string_view raw = value.raw_json_token();
            if (raw.size() >= 3 && raw.front() == '"') {
                std::size_t b = offset_in_line(raw) + 1;
                std::size_t e = b;
                while (e < line.size() && is_hex(line[e])) ++e;
                if (e > b && b <= 0xffff) {
                    r.trace_begin = std::uint32_t(b);
                    r.trace_len = std::uint32_t(std::min<std::size_t>(e - b, 64));
                }
            }
        }
    }
    if (r.msg_len == 0 && r.msg_begin == 0) set_message(r, 0, line.size());
    out = r;
    return true;
}

}  // namespace

std::string_view to_string(log_level level) {
    switch (level) {
        case log_level::debug: return "DEBUG";
        case log_level::info: return "INFO";
        case log_level::warn: return "WARN";
        case log_level::error: return "ERROR";
        case log_level::none: break;
    }
    return "-";
}

std::optional<log_level> parse_level_word(std::string_view word) {
    if (word.size() > 8) return std::nullopt;
    char buf[8];
    for (std::size_t i = 0; i < word.size(); ++i) buf[i] = lower(word[i]);
    std::string_view w(buf, word.size());
    if (w == "error" || w == "err" || w == "fatal" || w == "critical" || w == "crit" || w == "severe" ||
        w == "alert" || w == "emerg" || w == "panic")
        return log_level::error;
    if (w == "warn" || w == "warning") return log_level::warn;
    if (w == "info" || w == "notice") return log_level::info;
    if (w == "debug" || w == "trace") return log_level::debug;
    return std::nullopt;
}

// Days since 1970-01-01 of a proleptic Gregorian date (era arithmetic: the
// calendar repeats every 400 years = 146097 days, with March as month 0 so
// that the leap day is last).
std::int64_t days_from_civil(int year, unsigned month, unsigned day) {
    year -= month <= 2 ? 1 : 0;
    const std::int64_t era = (year >= 0 ? year : year - 399) / 400;
    const unsigned yoe = unsigned(year - era * 400);
    const unsigned doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + std::int64_t(doe) - 719468;
}

namespace {
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
}  // namespace

int year_of(std::int64_t ms) {
    int y;
    unsigned m, d;
    civil_from_days(floor_div(ms, 86400000LL), &y, &m, &d);
    return y;
}

std::string format_time(std::int64_t ms) {
    if (ms == no_time) return "-";
    std::int64_t days = floor_div(ms, 86400000LL);
    std::int64_t rest = ms - days * 86400000LL;
    int y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", y, m, d, int(rest / 3600000),
                  int(rest / 60000 % 60), int(rest / 1000 % 60), int(rest % 1000));
    return buf;
}

std::optional<std::int64_t> parse_iso_time(std::string_view s, std::size_t* n_used) {
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
    if (!digits(s, 0, 4, &year) || s.size() < 19 || s[4] != '-' || !digits(s, 5, 2, &month) || s[7] != '-' ||
        !digits(s, 8, 2, &day) || (s[10] != 'T' && s[10] != ' ') || !digits(s, 11, 2, &hour) || s[13] != ':' ||
        !digits(s, 14, 2, &minute) || s[16] != ':' || !digits(s, 17, 2, &second))
        return std::nullopt;
    if (!valid_clock(month, day, hour, minute, second)) return std::nullopt;
    std::size_t at = 19;
    int millis = 0;
    if (at < s.size() && (s[at] == '.' || s[at] == ',')) {
        ++at;
        int n = 0;
        while (at < s.size() && is_digit(s[at])) {
            if (n < 3) millis = millis * 10 + (s[at] - '0');
            ++n, ++at;
        }
        if (n == 0) return std::nullopt;
        for (; n < 3; ++n) millis *= 10;
    }
    std::int64_t offset = 0;
    if (at < s.size() && s[at] == 'Z') {
        ++at;
    } else if (at < s.size() && (s[at] == '+' || s[at] == '-')) {
        int zh = 0, zm = 0;
        std::size_t k = at + 1;
        if (digits(s, k, 2, &zh)) {
            k += 2;
            if (k < s.size() && s[k] == ':') ++k;
            if (digits(s, k, 2, &zm)) k += 2;
            offset = (zh * 60LL + zm) * 60000LL * (s[at] == '-' ? -1 : 1);
            at = k;
        }
    }
    if (n_used) *n_used = at;
    return to_ms(year, month, day, hour, minute, second, millis) - offset;
}

parsed_line parse_line(std::string_view line, std::size_t capacity, simdjson::ondemand::parser& parser) {
    parsed_line out;
    if (line.empty()) return out;
    if (line.front() == '{' && try_json(line, capacity, parser, out)) return out;
    std::size_t used = 0;
    std::size_t start = line.front() == '[' ? 1 : 0;
    if (auto t = parse_iso_time(line.substr(start), &used)) {
        out.ts_ms = *t;
        out.starts_entry = true;
        parse_plain_rest(line, start + used, out);
        return out;
    }
    if (auto t = parse_syslog(line, 1970, &used)) {
        out.ts_ms = *t;
        out.yearless = true;
        out.starts_entry = true;
        // "host service[pid]: message": the level search starts after the stamp
        parse_plain_rest(line, used, out);
        return out;
    }
    std::size_t bracket = line.substr(0, 64).find(" [");
    if (bracket != std::string_view::npos) {
        if (auto t = parse_nginx_time(line.substr(bracket + 2))) {
            out.ts_ms = *t;
            out.starts_entry = true;
            out.level = log_level::info;
            std::size_t q = line.find('"', bracket);
            std::size_t q_end = q == std::string_view::npos ? q : line.find('"', q + 1);
            if (q_end != std::string_view::npos) {
                int status = 0;
                std::size_t end = q_end + 1;
                if (digits(line, q_end + 2, 3, &status)) {
                    end = q_end + 5;
                    if (status >= 500) out.level = log_level::error;
                    else if (status >= 400) out.level = log_level::warn;
                }
                set_message(out, q, end);
            } else {
                set_message(out, 0, line.size());
            }
            find_plain_trace(line, out);
            return out;
        }
    }
    parse_plain_rest(line, 0, out);
    return out;
}

bool is_continuation(std::string_view line, const parsed_line& parsed, bool previous_has_time) {
    if (parsed.starts_entry) return false;
    if (line.empty()) return true;
    char c = line.front();
    if (c == ' ' || c == '\t') return true;
    if (line.starts_with("at ") || line.starts_with("Caused by:") || line.starts_with("Traceback") ||
        line.starts_with("File \"") || line.starts_with("..."))
        return true;
    return previous_has_time;
}

std::int64_t syslog_time_in_year(std::string_view line, int year) {
    auto t = parse_syslog(line, year, nullptr);
    return t ? *t : no_time;
}

std::optional<std::int64_t> parse_time_argument(std::string_view s, std::int64_t reference_ms) {
    std::size_t used = 0;
    if (auto t = parse_iso_time(s, &used); t && used == s.size()) return t;
    int hour = 0, minute = 0, second = 0;
    if ((s.size() != 5 && s.size() != 8) || !digits(s, 0, 2, &hour) || s[2] != ':' || !digits(s, 3, 2, &minute))
        return std::nullopt;
    if (s.size() == 8 && (s[5] != ':' || !digits(s, 6, 2, &second))) return std::nullopt;
    if (hour > 23 || minute > 59 || second > 59 || reference_ms == no_time) return std::nullopt;
    std::int64_t day_start = floor_div(reference_ms, 86400000LL) * 86400000LL;
    return day_start + (hour * 3600LL + minute * 60LL + second) * 1000LL;
}

std::string mask_message(std::string_view message, std::size_t max_len) {
    std::string out;
    out.reserve(std::min(message.size(), max_len));
    std::size_t i = 0;
    while (i < message.size() && out.size() < max_len) {
        char c = message[i];
        if (is_alnum(c)) {
            std::size_t j = i;
            bool has_digit = false, all_hex = true;
            while (j < message.size() && (is_alnum(message[j]) || message[j] == '.' || message[j] == '-')) {
                has_digit |= is_digit(message[j]);
                all_hex &= is_hex(message[j]);
                ++j;
            }
            std::string_view word = message.substr(i, j - i);
            // an HTTP status right after a quoted request ('"POST /x HTTP/1.1" 502') stays
            bool status = word.size() == 3 && i >= 2 && message[i - 1] == ' ' && message[i - 2] == '"' &&
                          (word[0] == '4' || word[0] == '5');
            if (status) out += word;
            else if (has_digit && all_hex && word.size() >= 8) out += "<id>";
            else if (has_digit && std::all_of(word.begin(), word.end(), [](char ch) {
                         return is_digit(ch) || ch == '.' || ch == '-';
                     }))
                out += "<n>";
            else if (has_digit) {
                // mixed word ("pod-7f9c", "v2.15.0", "502ms"): mask the digit runs only
                bool in_digits = false;
                for (std::size_t k = 0; k < word.size(); ++k) {
                    char ch = word[k];
                    bool decimal_point = ch == '.' && in_digits && k + 1 < word.size() && is_digit(word[k + 1]);
                    if (is_digit(ch) || decimal_point) {
                        if (!in_digits) out += "<n>";
                        in_digits = true;
                    } else {
                        out += ch;
                        in_digits = false;
                    }
                }
            } else {
                out += word;
            }
            i = j;
        } else {
            out += c;
            ++i;
        }
    }
    if (out.size() > max_len) out.resize(max_len);
    return out;
}

}  // namespace tachyon::tools
