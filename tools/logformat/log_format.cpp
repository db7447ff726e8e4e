#include "tools/logformat/log_format.h"

#include <array>
#include <string>

#include "tools/logformat/format_util.h"

namespace tachyon::logformat {

// Defined in formats_*.cpp.
extern const log_format journald_format, json_format, logfmt_format, cri_format;
extern const log_format syslog5424_format, syslog_format, bgl_format, thunderbird_format, hpc_format;
extern const log_format access_format, apache_error_format, nginx_error_format;
extern const log_format log4j_format, zookeeper_format, python_format, openstack_format, hdfs_format, spark_format,
    klog_format, android_format, android_brief_format, windows_cbs_format, windows_event_format, health_format,
    proxifier_format, stamped_format;

namespace {
// The most specific shapes first; the catch-alls (logfmt, any stamped line) last.
constexpr std::array<const log_format*, 26> registry = {
    &journald_format,     &json_format,          &cri_format,        &syslog5424_format,    &bgl_format,
    &thunderbird_format,  &hpc_format,           &access_format,     &apache_error_format,  &nginx_error_format,
    &windows_cbs_format,  &windows_event_format, &zookeeper_format,  &python_format,        &openstack_format,
    &log4j_format,        &hdfs_format,          &spark_format,      &klog_format,          &android_format,
    &android_brief_format, &health_format,       &proxifier_format,  &syslog_format,        &logfmt_format,
    &stamped_format,
};

using namespace detail;

// A level word that opens an otherwise unexplained line: "ERROR: ...",
// "[warn] ...", "WARNING ...", "panic: ...".
void parse_text(std::string_view line, line_fields& out) {
    out.message = span_of(0, line.size());
    std::size_t i = skip_spaces(line, 0);
    if (i != 0) return;  // indented lines are frames or wrapped text
    std::size_t e = token_end(line, 0);
    std::string_view tok = line.substr(0, e);
    bool bracketed = !tok.empty() && tok.front() == '[' && tok.back() == ']';
    bool colon = !tok.empty() && tok.back() == ':';
    if (bracketed) tok = tok.substr(1, tok.size() - 2);
    else if (colon) tok.remove_suffix(1);
    bool upper = tok.size() >= 3;
    for (char c : tok) upper &= c >= 'A' && c <= 'Z';
    if (upper || bracketed || colon) {
        if (auto s = severity_from_word(tok)) {
            out.level = *s;
            set_message_from(line, e, out);
            return;
        }
    }
    find_level_pair(line, out);
}

bool is_identifier_char(char c) { return is_alnum(c) || c == '_' || c == '$'; }

// "java.net.SocketTimeoutException: ...", "main.main()", "ValueError: ..."
bool looks_like_exception_or_frame(std::string_view line) {
    std::size_t i = 0;
    if (line.empty() || !(is_alpha(line[0]) || line[0] == '_')) return false;
    bool dotted = false;
    while (i < line.size() && (is_identifier_char(line[i]) || line[i] == '.' || line[i] == '/')) {
        dotted |= line[i] == '.';
        ++i;
    }
    std::string_view name = line.substr(0, i);
    bool ends_ok = i == line.size() || line[i] == ':' || line[i] == '(';
    if (!ends_ok) return false;
    if (dotted) return true;
    for (std::string_view tail : {"Error", "Exception", "Warning", "Exit", "Interrupt", "Fault"})
        if (name.size() > tail.size() && name.ends_with(tail)) return true;
    return false;
}

}  // namespace

std::span<const log_format* const> log_formats() { return registry; }

int find_format(std::string_view name) {
    for (std::size_t i = 0; i < registry.size(); ++i)
        if (registry[i]->name == name) return int(i);
    return -1;
}

std::string_view format_name(int index) {
    if (index < 0 || std::size_t(index) >= registry.size()) return "text";
    return registry[std::size_t(index)]->name;
}

int parse_line(std::string_view line, int preferred, line_fields& out, line_parser& scratch) {
    out = line_fields{};
    if (line.empty()) return -1;
    if (preferred >= 0 && std::size_t(preferred) < registry.size()) {
        if (registry[std::size_t(preferred)]->parse(line, out, scratch)) return preferred;
        out = line_fields{};
    }
    // indented lines are stack frames or wrapped text in every format
    if (is_space(line[0])) {
        out.message = span_of(0, line.size());
        return -1;
    }
    for (std::size_t i = 0; i < registry.size(); ++i) {
        if (int(i) == preferred) continue;
        if (registry[i]->parse(line, out, scratch)) return int(i);
        out = line_fields{};
    }
    parse_text(line, out);
    return -1;
}

namespace {
int hex_value(char c) {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
// Four hex digits at s[at], -1 when not there.
long read_hex4(std::string_view s, std::size_t at) {
    if (at > s.size() || s.size() - at < 4) return -1;
    long v = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        int h = hex_value(s[at + i]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}
void append_utf8(std::string& out, unsigned long cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}
}  // namespace

std::string unescape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out += s[i];
            continue;
        }
        const char c = s[i + 1];
        switch (c) {
            case '"': case '\\': case '/': out += c; ++i; continue;
            case 'b': out += '\b'; ++i; continue;
            case 'f': out += '\f'; ++i; continue;
            case 'n': out += '\n'; ++i; continue;
            case 'r': out += '\r'; ++i; continue;
            case 't': out += '\t'; ++i; continue;
            case 'u': break;
            default: out += s[i]; continue;  // not an escape: both characters stay
        }
        long cp = read_hex4(s, i + 2);
        if (cp < 0) {
            out += s[i];
            continue;
        }
        std::size_t used = 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate wants its low half
            long low = i + 7 < s.size() && s[i + 6] == '\\' && s[i + 7] == 'u' ? read_hex4(s, i + 8) : -1;
            if (low >= 0xDC00 && low <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                used = 12;
            } else {
                cp = 0xFFFD;
            }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            cp = 0xFFFD;  // a lone low surrogate
        }
        append_utf8(out, static_cast<unsigned long>(cp));
        i += used - 1;
    }
    return out;
}

bool is_continuation(std::string_view line, const line_fields& fields, int format, bool in_trace) {
    if (format >= 0 || fields.time != time_kind::none || fields.level != severity::unknown) return false;
    if (line.empty() || is_space(line[0])) return true;
    for (std::string_view opener : {"at ", "Caused by:", "Suppressed:", "Traceback", "File \"", "...", "goroutine ",
                                    "During handling of", "The above exception", "created by "})
        if (line.starts_with(opener)) return true;
    return in_trace && looks_like_exception_or_frame(line);
}

}  // namespace tachyon::logformat
