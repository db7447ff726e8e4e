#include "tools/logs/log_parse.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "tools/logformat/log_time.h"

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

// Times are the log-format layer's (tools/logformat/log_time), in
// milliseconds: one calendar, one ISO reader for the whole program.
std::string format_time(std::int64_t ms) {
    if (ms == no_time) return "-";
    return logformat::format_iso(ms * 1000);  // whole milliseconds: always printed as .mmm
}

std::optional<std::int64_t> parse_iso_time(std::string_view s, std::size_t* n_used) {
    std::size_t used = 0;
    std::optional<int> zone;
    auto t = logformat::parse_iso_civil(s, &used, &zone);
    if (!t) return std::nullopt;
    if (n_used) *n_used = used;
    const std::int64_t us = t->to_us() - std::int64_t(zone.value_or(0)) * 60 * logformat::us_per_second;
    return logformat::floor_div(us, 1000);
}

std::optional<std::int64_t> parse_time_argument(std::string_view s, std::int64_t reference_ms) {
    std::size_t used = 0;
    if (auto t = parse_iso_time(s, &used); t && used == s.size()) return t;
    int hour = 0, minute = 0, second = 0;
    if ((s.size() != 5 && s.size() != 8) || !digits(s, 0, 2, &hour) || s[2] != ':' || !digits(s, 3, 2, &minute))
        return std::nullopt;
    if (s.size() == 8 && (s[5] != ':' || !digits(s, 6, 2, &second))) return std::nullopt;
    if (hour > 23 || minute > 59 || second > 59 || reference_ms == no_time) return std::nullopt;
    std::int64_t day_start = logformat::floor_div(reference_ms, 86400000LL) * 86400000LL;
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
