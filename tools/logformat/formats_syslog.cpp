// Syslog and the supercomputer logs built on it: RFC 5424, BSD syslog (RFC
// 3164, also macOS and rsyslog's ISO stamps), BlueGene/L RAS, Thunderbird and
// HPC node logs.
#include "tools/logformat/format_util.h"

namespace tachyon::logformat {
namespace {
using namespace detail;

// "<34>" at i: the priority; returns the position after '>' (npos when absent).
std::size_t read_pri(std::string_view line, std::size_t i, int* pri) {
    if (i >= line.size() || line[i] != '<') return std::string_view::npos;
    std::int64_t v = 0;
    std::size_t e = read_number(line, i + 1, &v);
    if (e == i + 1 || e - i - 1 > 3 || e >= line.size() || line[e] != '>' || v > 191) return std::string_view::npos;
    *pri = int(v);
    return e + 1;
}

// "Mar 14 14:05:12" / "Mar  4 14:05:12.123" at i; returns the end.
std::size_t read_bsd_stamp(std::string_view line, std::size_t i, civil_time* t) {
    if (line.size() < i + 15 || line[i + 3] != ' ') return std::string_view::npos;
    t->month = month_from_name(line.substr(i, 3));
    if (t->month == 0 || !is_alpha(line[i + 1]) || !is_alpha(line[i + 2])) return std::string_view::npos;
    std::size_t k = i + 4;
    if (line[k] == ' ') ++k;
    if (!read_digits(line, k, 1, &t->day)) return std::string_view::npos;
    if (k + 1 < line.size() && is_digit(line[k + 1])) read_digits(line, k, 2, &t->day), ++k;
    ++k;
    if (k >= line.size() || line[k] != ' ') return std::string_view::npos;
    ++k;
    if (!read_digits(line, k, 2, &t->hour) || line.size() < k + 8 || line[k + 2] != ':' ||
        !read_digits(line, k + 3, 2, &t->minute) || line[k + 5] != ':' || !read_digits(line, k + 6, 2, &t->second))
        return std::string_view::npos;
    k += 8;
    if (k + 1 < line.size() && line[k] == '.' && is_digit(line[k + 1])) k += 1 + read_fraction(line, k + 1, &t->micros);
    t->year = 0;
    if (!t->valid()) return std::string_view::npos;
    return k;
}

// After the stamp: "host program[pid]: message", "program[pid]: message" or
// "host message". `need_program`: the line must name its program.
bool read_syslog_rest(std::string_view line, std::size_t i, line_fields& out, bool need_program) {
    i = skip_spaces(line, i);
    std::size_t after = read_program(line, i, out);
    if (after == std::string_view::npos) {
        std::size_t host_end = token_end(line, i);
        if (host_end == i) return false;
        std::size_t p = skip_spaces(line, host_end);
        after = read_program(line, p, out);
        if (after != std::string_view::npos) out.host = span_of(i, host_end);
        else if (need_program) return false;
        else {
            out.host = span_of(i, host_end);
            after = p;
        }
    }
    std::size_t msg = skip_spaces(line, after);
    if (out.level == severity::unknown) {
        line_fields probe;
        std::size_t level_end = find_level_token(line, msg, 1, probe);
        if (level_end == std::string_view::npos) {
            // daemons prefix their own level in lower case: sshd "error: ...",
            // "fatal: ...", postfix "warning: ..."
            std::size_t e = msg;
            while (e < line.size() && line[e] >= 'a' && line[e] <= 'z') ++e;
            if (e > msg && e + 1 < line.size() && line[e] == ':' && line[e + 1] == ' ')
                if (auto s = severity_from_word(line.substr(msg, e - msg))) probe.level = *s, level_end = e + 1;
        }
        if (level_end != std::string_view::npos) {
            out.level = probe.level;
            msg = level_end;
        }
    }
    set_message_from(line, msg, out);
    find_trace(line, out);
    return true;
}

bool parse_bsd_syslog(std::string_view line, line_fields& out, line_parser&) {
    std::size_t i = 0;
    int pri = -1;
    if (std::size_t after = read_pri(line, 0, &pri); after != std::string_view::npos) i = after;
    civil_time t;
    std::size_t end = read_bsd_stamp(line, i, &t);
    const bool iso_stamp = end == std::string_view::npos;
    if (!iso_stamp) {
        set_civil(out, t, std::nullopt);
    } else {
        // rsyslog's high-precision stamp: "2026-03-14T14:05:12.123456+01:00 host prog[pid]: ..."
        std::size_t used = 0;
        std::optional<int> zone;
        auto iso = parse_iso_civil(line.substr(i), &used, &zone);
        if (!iso || line[i + 10] != 'T') return false;  // parse_iso_civil read 19 bytes or more
        set_civil(out, *iso, zone);
        end = i + used;
    }
    if (end >= line.size() || line[end] != ' ') return false;
    if (pri >= 0) out.level = severity_from_syslog(pri);
    // an ISO-stamped line must name its program, or every timestamped text line would be syslog
    return read_syslog_rest(line, end, out, iso_stamp);
}

// "<165>1 2003-10-11T22:14:15.003Z host app procid msgid [sd] message"
bool parse_syslog5424(std::string_view line, line_fields& out, line_parser&) {
    int pri = 0;
    std::size_t i = read_pri(line, 0, &pri);
    if (i == std::string_view::npos || i + 2 > line.size() || line[i] != '1' || line[i + 1] != ' ') return false;
    i += 2;
    if (line.compare(i, 2, "- ") == 0) {
        i += 2;
    } else {
        std::size_t used = 0;
        std::optional<int> zone;
        auto t = parse_iso_civil(line.substr(i), &used, &zone);
        if (!t || i + used >= line.size() || line[i + used] != ' ') return false;
        set_civil(out, *t, zone);
        i += used + 1;
    }
    text_span fields[4];  // host, app, procid, msgid
    for (auto& f : fields) {
        std::size_t e = token_end(line, i);
        if (e == i) return false;
        if (line.substr(i, e - i) != "-") f = span_of(i, e);
        i = skip_spaces(line, e);
    }
    out.host = fields[0], out.service = fields[1], out.pid = fields[2], out.component = fields[3];
    // structured data: "-" or [id k="v" ...][...], values may escape ']' as \]
    if (i < line.size() && line[i] == '-') {
        ++i;
    } else {
        while (i < line.size() && line[i] == '[') {
            bool quoted = false;
            ++i;
            while (i < line.size() && (quoted || line[i] != ']')) {
                if (line[i] == '\\') ++i;
                else if (line[i] == '"') quoted = !quoted;
                ++i;
            }
            if (i >= line.size()) return false;
            ++i;
        }
    }
    i = skip_spaces(line, i);
    if (line.compare(i, 3, "\xEF\xBB\xBF") == 0) i += 3;
    out.level = severity_from_syslog(pri);
    out.message = span_of(i, line.size());
    find_trace(line, out);
    return true;
}

// "- 1117838570 2005.06.03 NODE" shared by BlueGene/L and Thunderbird; returns
// the position after NODE and the epoch.
std::size_t read_ras_head(std::string_view line, std::int64_t* epoch, text_span* tag, text_span* node) {
    std::size_t e = token_end(line, 0);
    if (e == 0 || e > 32) return std::string_view::npos;
    *tag = span_of(0, e);
    std::size_t i = skip_spaces(line, e);
    std::size_t n = read_number(line, i, epoch);
    if (n - i < 9 || n - i > 10 || n >= line.size() || line[n] != ' ') return std::string_view::npos;
    i = n + 1;
    int y = 0, m = 0, d = 0;
    if (!read_digits(line, i, 4, &y) || line.size() < i + 11 || line[i + 4] != '.' || !read_digits(line, i + 5, 2, &m) ||
        line[i + 7] != '.' || !read_digits(line, i + 8, 2, &d) || line[i + 10] != ' ')
        return std::string_view::npos;
    i += 11;
    std::size_t node_end = token_end(line, i);
    if (node_end == i) return std::string_view::npos;
    *node = span_of(i, node_end);
    return skip_spaces(line, node_end);
}

// "- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.363779
//  R02-M1-N0-C:J12-U11 RAS KERNEL INFO instruction cache parity error corrected"
bool parse_bgl(std::string_view line, line_fields& out, line_parser&) {
    std::int64_t epoch = 0;
    text_span tag, node;
    std::size_t i = read_ras_head(line, &epoch, &tag, &node);
    if (i == std::string_view::npos) return false;
    civil_time t;
    if (!read_digits(line, i, 4, &t.year) || line.size() < i + 19 || line[i + 4] != '-' ||
        !read_digits(line, i + 5, 2, &t.month) || line[i + 7] != '-' || !read_digits(line, i + 8, 2, &t.day) ||
        line[i + 10] != '-' || !read_digits(line, i + 11, 2, &t.hour) || line[i + 13] != '.' ||
        !read_digits(line, i + 14, 2, &t.minute) || line[i + 16] != '.' || !read_digits(line, i + 17, 2, &t.second))
        return false;
    i += 19;
    if (i < line.size() && line[i] == '.') i += 1 + read_fraction(line, i + 1, &t.micros);
    if (!t.valid()) return false;
    // the epoch is UTC; the date column is the machine's local clock
    set_epoch_us(out, epoch * us_per_second + t.micros);
    std::int64_t offset_min = floor_div(t.to_us() - t.micros - epoch * us_per_second + 30 * us_per_second, 60 * us_per_second);
    if (offset_min > -16 * 60 && offset_min < 16 * 60) out.zone_minutes = std::int16_t(offset_min);
    out.host = node;
    i = skip_spaces(line, i);
    std::size_t e = token_end(line, i);  // the node again
    i = skip_spaces(line, e);
    e = token_end(line, i);  // RAS
    i = skip_spaces(line, e);
    std::size_t comp_end = token_end(line, i);
    out.component = span_of(i, comp_end);
    i = skip_spaces(line, comp_end);
    std::size_t level_end = token_end(line, i);
    if (auto s = severity_from_word(line.substr(i, level_end - i))) {
        out.level = *s;
        i = level_end;
    }
    set_message_from(line, i, out);
    return true;
}

// "- 1131566461 2005.11.09 dn228 Nov 9 12:01:01 dn228/dn228 crond(pam_unix)[2915]: session closed for user root"
bool parse_thunderbird(std::string_view line, line_fields& out, line_parser&) {
    std::int64_t epoch = 0;
    text_span tag, node;
    std::size_t i = read_ras_head(line, &epoch, &tag, &node);
    if (i == std::string_view::npos) return false;
    civil_time t;
    // the day of a Thunderbird stamp is not padded: "Nov 9 12:01:01"
    if (line.size() < i + 4 || month_from_name(line.substr(i, 3)) == 0 || line[i + 3] != ' ') return false;
    std::size_t k = i + 4;
    std::int64_t day = 0;
    std::size_t day_end = read_number(line, k, &day);
    if (day_end == k || day_end >= line.size() || line[day_end] != ' ') return false;
    k = day_end + 1;
    if (!read_digits(line, k, 2, &t.hour) || line.size() < k + 8 || line[k + 2] != ':' || line[k + 5] != ':')
        return false;
    set_epoch_us(out, epoch * us_per_second);
    std::size_t rest = k + 8;
    if (!read_syslog_rest(line, rest, out, false)) {
        out.host = node;
        set_message_from(line, rest, out);
    }
    if (out.host.empty()) out.host = node;
    if (out.level == severity::unknown && tag.in(line) != "-") out.level = severity::error;  // an alert tag
    return true;
}

// "134681 node-246 unix.hw state_change.unavailable 1077804742 1 Component State Change: ..."
bool parse_hpc(std::string_view line, line_fields& out, line_parser&) {
    std::int64_t v = 0;
    std::size_t i = read_number(line, 0, &v);
    if (i == 0 || i >= line.size() || line[i] != ' ') return false;
    text_span parts[3];  // node, component, state
    ++i;
    for (auto& p : parts) {
        std::size_t e = token_end(line, i);
        if (e == i) return false;
        p = span_of(i, e);
        i = skip_spaces(line, e);
    }
    std::int64_t epoch = 0;
    std::size_t e = read_number(line, i, &epoch);
    if (e - i < 9 || e - i > 10 || e >= line.size() || line[e] != ' ') return false;
    i = e + 1;
    std::int64_t flag = 0;
    e = read_number(line, i, &flag);
    if (e == i || (e < line.size() && line[e] != ' ')) return false;
    set_epoch_us(out, epoch * us_per_second);
    out.host = parts[0], out.component = parts[1];
    set_message_from(line, e, out);
    // no level column: the state, else the message, says whether it failed
    std::string_view state = parts[2].in(line), message = out.message.in(line);
    auto says = [&](std::string_view word) {
        return state.find(word) != std::string_view::npos || message.find(word) != std::string_view::npos;
    };
    if (says("error") || says("fail")) out.level = severity::error;
    else if (says("unavailable") || state.find("down") != std::string_view::npos) out.level = severity::warn;
    return true;
}

}  // namespace

extern const log_format syslog5424_format{"syslog5424", parse_syslog5424};
extern const log_format syslog_format{"syslog", parse_bsd_syslog};
extern const log_format bgl_format{"bgl", parse_bgl};
extern const log_format thunderbird_format{"thunderbird", parse_thunderbird};
extern const log_format hpc_format{"hpc", parse_hpc};

}  // namespace tachyon::logformat
