// Structured lines: JSON lines (zap, logrus, pino, bunyan, ECS ...), the
// journald JSON export, logfmt, and Kubernetes CRI container lines that wrap
// any other format.
#include "tools/logformat/format_util.h"

namespace tachyon::logformat {
namespace {
using namespace detail;

// Epoch numbers by magnitude: seconds, milliseconds, microseconds, nanoseconds.
// A number past what int64 nanoseconds hold (the year 2262) is no time.
std::optional<std::int64_t> epoch_to_us(double v) {
    if (!(v > 0) || v >= 9.2e18) return std::nullopt;
    if (v > 1e17) return std::int64_t(v / 1000);
    if (v > 1e14) return std::int64_t(v);
    if (v > 1e11) return std::int64_t(v * 1000);
    return std::int64_t(v * 1e6);
}

bool time_from_text(std::string_view s, line_fields& out) {
    std::size_t used = 0;
    std::optional<int> zone;
    if (auto t = parse_iso_civil(s, &used, &zone)) {
        set_civil(out, *t, zone);
        return true;
    }
    if (all_digits(s) && s.size() >= 9 && s.size() <= 19) {
        std::int64_t v = 0;
        read_number(s, 0, &v);
        if (auto us = epoch_to_us(double(v))) {
            set_epoch_us(out, *us);
            return true;
        }
        return false;
    }
    return false;
}

// The bytes between the quotes of a raw JSON string token, as a span of the line.
text_span string_span(std::string_view raw, const char* base) {
    while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\t')) raw.remove_suffix(1);
    if (raw.size() < 2 || raw.front() != '"' || raw.back() != '"') return {};
    std::size_t b = std::size_t(raw.data() - base) + 1;
    return span_of(b, b + raw.size() - 2);
}

// One JSON object line; `journald` says whether it carries journald's fields.
bool parse_json(std::string_view line, line_fields& out, line_parser& p, bool* journald) {
    std::size_t first = skip_spaces(line, 0);
    if (first >= line.size() || line[first] != '{' || line.back() != '}') return false;
    p.buffer.assign(line);
    p.buffer.append(simdjson::SIMDJSON_PADDING, '\0');
    const char* base = p.buffer.data();
    simdjson::ondemand::document doc;
    if (p.json.iterate(base, line.size(), p.buffer.size()).get(doc)) return false;
    simdjson::ondemand::object object;
    if (doc.get_object().get(object)) return false;
    *journald = false;
    bool has_message = false;
    for (auto field : object) {
        std::string_view key;
        if (field.unescaped_key().get(key)) return false;
        simdjson::ondemand::value value;
        if (field.value().get(value)) return false;
        simdjson::ondemand::json_type type;
        if (value.type().get(type)) return false;
        std::string_view s;
        const bool is_string = type == simdjson::ondemand::json_type::string && !value.get_string().get(s);
        const bool is_number = type == simdjson::ondemand::json_type::number;
        auto raw_span = [&] { return string_span(value.raw_json_token(), base); };
        if (key == "__REALTIME_TIMESTAMP" || key == "__CURSOR" || key == "_SYSTEMD_UNIT" || key == "_BOOT_ID")
            *journald = true;
        if (key == "ts" || key == "time" || key == "timestamp" || key == "@timestamp" || key == "t" ||
            key == "datetime" || key == "date" || key == "__REALTIME_TIMESTAMP") {
            if (out.time != time_kind::none && key != "__REALTIME_TIMESTAMP") continue;
            if (is_string) time_from_text(s, out);
            else if (is_number) {
                double d = 0;
                if (!value.get_double().get(d))
                    if (auto us = epoch_to_us(d)) set_epoch_us(out, *us);
            }
        } else if (key == "level" || key == "severity" || key == "lvl" || key == "loglevel" || key == "levelname" ||
                   key == "log.level" || key == "PRIORITY" || key == "priority") {
            if (is_string) {
                if (auto sev = severity_from_word(s)) out.level = *sev;
                else if (all_digits(s) && s.size() <= 2) out.level = severity_from_number(std::stoi(std::string(s))).value_or(out.level);
                else if (s.size() == 1) out.level = severity_from_letter(s[0]).value_or(out.level);
            } else if (is_number) {
                std::int64_t n = 0;
                if (!value.get_int64().get(n)) out.level = severity_from_number(n).value_or(out.level);
            }
        } else if (key == "msg" || key == "message" || key == "MESSAGE" || key == "@message" || key == "log") {
            if (is_string && (!has_message || key == "msg" || key == "MESSAGE")) {
                out.message = raw_span();
                has_message = true;
            }
        } else if (key == "service" || key == "service.name" || key == "app" || key == "application" ||
                   key == "SYSLOG_IDENTIFIER" || key == "_SYSTEMD_UNIT" || key == "_COMM") {
            if (is_string && (out.service.empty() || key == "SYSLOG_IDENTIFIER")) out.service = raw_span();
        } else if (key == "logger" || key == "logger_name" || key == "caller" || key == "component" || key == "name" ||
                   key == "module") {
            if (is_string && out.component.empty()) out.component = raw_span();
        } else if (key == "host" || key == "hostname" || key == "_HOSTNAME" || key == "host.name") {
            if (is_string) out.host = raw_span();
        } else if (key == "pid" || key == "_PID" || key == "process.pid") {
            if (is_string) out.pid = raw_span();
            else if (is_number) {
                std::string_view raw = value.raw_json_token();
                while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\t')) raw.remove_suffix(1);
                out.pid = span_of(std::size_t(raw.data() - base), std::size_t(raw.data() - base) + raw.size());
            }
        } else if (key == "thread" || key == "thread_name" || key == "tid" || key == "_TID") {
            if (is_string) out.thread = raw_span();
        } else if (key == "trace_id" || key == "traceId" || key == "trace" || key == "traceID" || key == "trace.id") {
            if (is_string) {
                text_span t = raw_span();
                std::size_t e = t.begin;
                while (e < t.begin + t.len && is_hex(line[e])) ++e;
                if (e > t.begin && t.begin <= 0xffff) out.trace = span_of(t.begin, std::min<std::size_t>(e, t.begin + 64));
            }
        }
    }
    if (!has_message) out.message = span_of(0, line.size());
    out.escaped = has_message;
    return true;
}

bool parse_json_line(std::string_view line, line_fields& out, line_parser& p) {
    bool journald = false;
    return parse_json(line, out, p, &journald);
}

bool parse_journald(std::string_view line, line_fields& out, line_parser& p) {
    bool journald = false;
    return parse_json(line, out, p, &journald) && journald;
}

// key=value pairs; values bare or double-quoted with backslash escapes.
bool parse_logfmt(std::string_view line, line_fields& out, line_parser&) {
    std::size_t i = 0;
    int n_pairs = 0;
    bool known = false;
    while (i < line.size()) {
        i = skip_spaces(line, i);
        if (i >= line.size()) break;
        std::size_t k = i;
        while (k < line.size() && (is_alnum(line[k]) || line[k] == '_' || line[k] == '.' || line[k] == '-' || line[k] == '@')) ++k;
        if (k == i || k >= line.size() || line[k] != '=') {
            if (n_pairs == 0) return false;
            break;  // trailing free text
        }
        std::string_view key = line.substr(i, k - i);
        std::size_t v = k + 1, v_end = v;
        text_span value;
        if (v < line.size() && line[v] == '"') {
            v_end = v + 1;
            while (v_end < line.size() && line[v_end] != '"') v_end += line[v_end] == '\\' ? 2 : 1;
            if (v_end >= line.size()) return false;
            value = span_of(v + 1, v_end);
            ++v_end;
        } else {
            v_end = token_end(line, v);
            value = span_of(v, v_end);
        }
        std::string_view val = value.in(line);
        ++n_pairs;
        if (key == "time" || key == "ts" || key == "timestamp" || key == "t" || key == "@timestamp") {
            known |= time_from_text(val, out);
        } else if (key == "level" || key == "lvl" || key == "severity") {
            if (auto s = severity_from_word(val)) out.level = *s, known = true;
        } else if (key == "msg" || key == "message") {
            out.message = value;
            out.escaped = v < line.size() && line[v] == '"';
            known = true;
        } else if (key == "service" || key == "app") {
            out.service = value;
        } else if (key == "component" || key == "logger" || key == "caller" || key == "module") {
            out.component = value;
        } else if (key == "host" || key == "hostname") {
            out.host = value;
        } else if (key == "pid") {
            out.pid = value;
        } else if (key == "trace_id" || key == "traceId" || key == "trace") {
            std::size_t e = value.begin;
            while (e < value.begin + value.len && is_hex(line[e])) ++e;
            if (e - value.begin >= 8 && value.begin <= 0xffff) out.trace = span_of(value.begin, e);
        }
        i = v_end;
    }
    if (n_pairs < 2 || !known) return false;
    if (out.message.empty()) out.message = span_of(0, line.size());
    return true;
}

// "2016-10-06T00:17:09.669794202Z stdout F <line of any format>"
bool parse_cri(std::string_view line, line_fields& out, line_parser& p) {
    std::size_t used = 0;
    std::optional<int> zone;
    auto t = parse_iso_civil(line, &used, &zone);
    if (!t || !zone || used >= line.size() || line[used] != ' ') return false;
    std::size_t i = used + 1;
    if (line.compare(i, 7, "stdout ") != 0 && line.compare(i, 7, "stderr ") != 0) return false;
    i += 7;
    if (i + 1 >= line.size() || (line[i] != 'F' && line[i] != 'P') || line[i + 1] != ' ') {
        if (!(i + 1 == line.size() && (line[i] == 'F' || line[i] == 'P'))) return false;
    }
    const std::size_t inner_begin = std::min(line.size(), i + 2);
    line_fields inner;
    if (p.depth < 4 && inner_begin < line.size()) {
        ++p.depth;
        parse_line(line.substr(inner_begin), -1, inner, p);
        --p.depth;
    } else {
        inner.message = span_of(0, line.size() - inner_begin);
    }
    auto shift = [&](text_span s) { return s.empty() ? s : span_of(inner_begin + s.begin, inner_begin + s.begin + s.len); };
    out = line_fields{};
    set_civil(out, *t, zone);  // the runtime's stamp: the line's own may be absent or local
    out.level = inner.level;
    out.service = shift(inner.service), out.component = shift(inner.component), out.host = shift(inner.host);
    out.pid = shift(inner.pid), out.thread = shift(inner.thread), out.message = shift(inner.message);
    out.trace = shift(inner.trace);
    out.escaped = inner.escaped;
    if (out.message.empty()) out.message = span_of(inner_begin, line.size());
    return true;
}

}  // namespace

extern const log_format journald_format{"journald", parse_journald};
extern const log_format json_format{"json", parse_json_line};
extern const log_format logfmt_format{"logfmt", parse_logfmt};
extern const log_format cri_format{"cri", parse_cri};

}  // namespace tachyon::logformat
