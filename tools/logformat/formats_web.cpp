// Web servers: the common/combined access log (Apache, nginx), the Apache
// error log (2.2 and 2.4 layouts) and the nginx error log.
#include "tools/logformat/format_util.h"

namespace tachyon::logformat {
namespace {
using namespace detail;

// "14/Mar/2026:14:05:12 +0000" at i; returns the end.
std::size_t read_clf_time(std::string_view s, std::size_t i, line_fields& out) {
    civil_time t;
    if (s.size() < i + 26 || !read_digits(s, i, 2, &t.day) || s[i + 2] != '/' || s[i + 6] != '/' ||
        !read_digits(s, i + 7, 4, &t.year) || s[i + 11] != ':' || !read_digits(s, i + 12, 2, &t.hour) ||
        s[i + 14] != ':' || !read_digits(s, i + 15, 2, &t.minute) || s[i + 17] != ':' ||
        !read_digits(s, i + 18, 2, &t.second) || s[i + 20] != ' ')
        return std::string_view::npos;
    t.month = month_from_name(s.substr(i + 3, 3));
    if (t.month == 0 || t.year == 0 || !t.valid()) return std::string_view::npos;
    std::size_t used = 0;
    auto zone = parse_zone(s.substr(i + 21), &used);
    if (!zone || used < 5) return std::string_view::npos;
    set_civil(out, t, zone);
    return i + 21 + used;
}

// 10.0.3.7 - frank [14/Mar/2026:14:05:12 +0000] "POST /api/checkout HTTP/1.1" 502 157 "-" "agent" ...
bool parse_access(std::string_view line, line_fields& out, line_parser&) {
    std::size_t bracket = line.substr(0, 160).find(" [");
    if (bracket == std::string_view::npos || bracket == 0) return false;
    std::size_t end = read_clf_time(line, bracket + 2, out);
    if (end == std::string_view::npos || end >= line.size() || line[end] != ']') return false;
    out.host = span_of(0, token_end(line, 0));
    std::size_t q = skip_spaces(line, end + 1);
    if (q >= line.size() || line[q] != '"') return false;
    std::size_t q_end = q + 1;
    while (q_end < line.size() && line[q_end] != '"') q_end += line[q_end] == '\\' ? 2 : 1;
    if (q_end >= line.size()) return false;
    int status = 0;
    std::size_t msg_end = q_end + 1;
    if (read_digits(line, q_end + 2, 3, &status) && (q_end + 5 == line.size() || is_space(line[q_end + 5]))) {
        msg_end = q_end + 5;
        out.level = severity_from_http_status(status).value_or(severity::unknown);
    } else {
        return false;
    }
    out.message = span_of(q, msg_end);
    find_trace(line, out);
    return true;
}

// "[Sun Dec 04 04:47:44 2005] [error] mod_jk child workerEnv in error state 6"
// "[Fri Sep 09 10:42:29.902022 2011] [core:error] [pid 35708:tid 4328636416] [client 72.15.99.187] File does not exist"
bool parse_apache_error(std::string_view line, line_fields& out, line_parser&) {
    if (line.size() < 27 || line[0] != '[' || line[4] != ' ' || line[8] != ' ') return false;
    civil_time t;
    t.month = month_from_name(line.substr(5, 3));
    if (t.month == 0 || !read_digits(line, 9, 2, &t.day) || line[11] != ' ' || !read_digits(line, 12, 2, &t.hour) ||
        line[14] != ':' || !read_digits(line, 15, 2, &t.minute) || line[17] != ':' || !read_digits(line, 18, 2, &t.second))
        return false;
    std::size_t i = 20;
    if (i < line.size() && line[i] == '.') i += 1 + read_fraction(line, i + 1, &t.micros);
    if (i >= line.size() || line[i] != ' ' || !read_digits(line, i + 1, 4, &t.year) || i + 5 >= line.size() ||
        line[i + 5] != ']' || t.year == 0 || !t.valid())
        return false;
    set_civil(out, t, std::nullopt);
    i += 6;
    // bracketed fields: [level] or [module:level], [pid N:tid M], [client addr]
    while (true) {
        std::size_t b = skip_spaces(line, i);
        if (b >= line.size() || line[b] != '[') break;
        std::size_t close = line.find(']', b);
        if (close == std::string_view::npos) break;
        std::string_view field = line.substr(b + 1, close - b - 1);
        if (field.starts_with("pid ")) {
            std::size_t colon = field.find(':');
            out.pid = span_of(b + 5, b + 1 + (colon == std::string_view::npos ? field.size() : colon));
            if (colon != std::string_view::npos && field.substr(colon + 1).starts_with("tid "))
                out.thread = span_of(b + 1 + colon + 5, close);
        } else if (field.starts_with("client ")) {
            out.host = span_of(b + 8, close);
        } else if (out.level == severity::unknown) {
            std::size_t colon = field.find(':');
            std::string_view word = colon == std::string_view::npos ? field : field.substr(colon + 1);
            if (word.starts_with("trace")) word = "trace";  // trace1..trace8
            auto s = severity_from_word(word);
            if (!s) break;
            out.level = *s;
            if (colon != std::string_view::npos) out.component = span_of(b + 1, b + 1 + colon);
        } else {
            break;
        }
        i = close + 1;
    }
    set_message_from(line, i, out);
    return true;
}

// "2024/01/02 15:04:05 [error] 1234#1234: *5 open() failed ..."
bool parse_nginx_error(std::string_view line, line_fields& out, line_parser&) {
    civil_time t;
    if (line.size() < 22 || !read_digits(line, 0, 4, &t.year) || line[4] != '/' || !read_digits(line, 5, 2, &t.month) ||
        line[7] != '/' || !read_digits(line, 8, 2, &t.day) || line[10] != ' ' || !read_digits(line, 11, 2, &t.hour) ||
        line[13] != ':' || !read_digits(line, 14, 2, &t.minute) || line[16] != ':' || !read_digits(line, 17, 2, &t.second) ||
        line[19] != ' ' || line[20] != '[' || t.year == 0 || !t.valid())
        return false;
    std::size_t close = line.find(']', 21);
    if (close == std::string_view::npos) return false;
    auto s = severity_from_word(line.substr(21, close - 21));
    if (!s) return false;
    set_civil(out, t, std::nullopt);
    out.level = *s;
    std::size_t i = skip_spaces(line, close + 1);
    std::int64_t v = 0;
    std::size_t e = read_number(line, i, &v);
    if (e > i && e < line.size() && line[e] == '#') {
        out.pid = span_of(i, e);
        std::size_t te = read_number(line, e + 1, &v);
        out.thread = span_of(e + 1, te);
        if (te < line.size() && line[te] == ':') i = te + 1;
    }
    set_message_from(line, i, out);
    return true;
}

}  // namespace

extern const log_format access_format{"access", parse_access};
extern const log_format apache_error_format{"apache_error", parse_apache_error};
extern const log_format nginx_error_format{"nginx_error", parse_nginx_error};

}  // namespace tachyon::logformat
