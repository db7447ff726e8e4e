// Application logs: Java (log4j, logback, slf4j, Spring Boot, Hadoop, HDFS,
// Spark, ZooKeeper), Python logging, OpenStack (oslo.log), Go (klog/glog),
// Android logcat, Windows (CBS, Event Viewer exports), a health app, Proxifier,
// and any other line that opens with a timestamp.
#include "tools/logformat/format_util.h"

namespace tachyon::logformat {
namespace {
using namespace detail;

// An ISO stamp at i ("2015-10-18 18:01:47,978", "...T...Z"); returns its end.
std::size_t read_iso(std::string_view line, std::size_t i, line_fields& out) {
    std::size_t used = 0;
    std::optional<int> zone;
    auto t = parse_iso_civil(line.substr(i), &used, &zone);
    if (!t) return std::string_view::npos;
    set_civil(out, *t, zone);
    return i + used;
}

// A level word at i (upper, capitalised or lower); returns its end.
std::size_t read_level_word(std::string_view line, std::size_t i, line_fields& out) {
    std::size_t e = i;
    while (e < line.size() && is_alpha(line[e])) ++e;
    if (e == i || (e < line.size() && !is_space(line[e]) && line[e] != ':' && line[e] != ']' && line[e] != ',')) return std::string_view::npos;
    auto s = severity_from_word(line.substr(i, e - i));
    if (!s) return std::string_view::npos;
    out.level = *s;
    return e;
}

// "[thread]" at i, brackets nested ("[QuorumPeer[myid=1]/0:0:0:0:0:0:0:0:2181:...]"); returns the end.
std::size_t read_bracketed(std::string_view line, std::size_t i, text_span* inside) {
    if (i >= line.size() || line[i] != '[') return std::string_view::npos;
    int depth = 0;
    for (std::size_t k = i; k < line.size() && k < i + 512; ++k) {
        if (line[k] == '[') ++depth;
        else if (line[k] == ']' && --depth == 0) {
            *inside = span_of(i + 1, k);
            return k + 1;
        }
    }
    return std::string_view::npos;
}

// "logger.Name: " or "logger.Name - " at i: the component; the message stays whole.
void read_logger(std::string_view line, std::size_t i, line_fields& out) {
    std::size_t e = token_end(line, i);
    std::string_view tok = line.substr(i, e - i);
    if (!tok.empty() && tok.back() == ':') out.component = span_of(i, e - 1);
    else if (line.compare(skip_spaces(line, e), 2, "- ") == 0 || line.compare(skip_spaces(line, e), 2, ": ") == 0)
        out.component = span_of(i, e);
}

// log4j / logback / slf4j / Hadoop / Spring Boot:
// "2015-10-18 18:01:47,978 INFO [main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: Created MRAppMaster"
// "2024-01-02 15:04:05.123  INFO 12345 --- [           main] com.example.App   : Started"
// "15:04:05.123 [main] INFO  com.example.App - Started" (logback's console default, no date)
bool parse_log4j(std::string_view line, line_fields& out, line_parser&) {
    std::size_t i = read_iso(line, 0, out);
    std::size_t level_end = std::string_view::npos;
    if (i == std::string_view::npos) {
        // time only: no date, so no time either; the level and thread still count
        int h = 0, m = 0, s = 0;
        if (!read_digits(line, 0, 2, &h) || line.size() < 13 || line[2] != ':' || !read_digits(line, 3, 2, &m) ||
            line[5] != ':' || !read_digits(line, 6, 2, &s) || line[8] != '.' || line[12] != ' ')
            return false;
        text_span thread;
        std::size_t k = read_bracketed(line, 13, &thread);
        if (k == std::string_view::npos) return false;
        out.thread = thread;
        level_end = read_level_word(line, skip_spaces(line, k), out);
        if (level_end == std::string_view::npos) return false;
    } else {
        if (i >= line.size() || !is_space(line[i])) return false;
        std::size_t at = skip_spaces(line, i);
        text_span thread;
        // logback's default "DATE [thread] LEVEL logger - message"
        if (std::size_t te = read_bracketed(line, at, &thread); te != std::string_view::npos) {
            out.thread = thread;
            at = skip_spaces(line, te);
        }
        level_end = read_level_word(line, at, out);
        if (level_end == std::string_view::npos) return false;
    }
    std::size_t k = skip_spaces(line, level_end);
    std::size_t after_level = k;
    std::int64_t pid = 0;
    std::size_t pe = read_number(line, k, &pid);
    if (pe > k && line.compare(skip_spaces(line, pe), 4, "--- ") == 0) {  // Spring Boot
        out.pid = span_of(k, pe);
        k = skip_spaces(line, skip_spaces(line, pe) + 4);
    } else if (pe > k) {
        return false;  // "DATE LEVEL 123 ..." is not log4j (oslo writes the pid before the level)
    }
    text_span thread;
    if (std::size_t te = read_bracketed(line, k, &thread); te != std::string_view::npos) {
        out.thread = thread;
        k = skip_spaces(line, te);
    }
    read_logger(line, k, out);
    set_message_from(line, after_level, out);
    find_trace(line, out);
    return true;
}

// "2015-07-29 17:41:44,747 - INFO  [QuorumPeer[myid=1]/0:0:0:0:0:0:0:0:2181:FastLeaderElection@774] - Notification time out: 3200"
bool parse_zookeeper(std::string_view line, line_fields& out, line_parser&) {
    std::size_t i = read_iso(line, 0, out);
    if (i == std::string_view::npos || line.compare(i, 3, " - ") != 0) return false;
    std::size_t e = read_level_word(line, i + 3, out);
    if (e == std::string_view::npos) return false;
    std::size_t k = skip_spaces(line, e);
    text_span inside;
    std::size_t b = read_bracketed(line, k, &inside);
    if (b == std::string_view::npos) return false;
    std::string_view in = inside.in(line);
    std::size_t colon = in.rfind(':');
    if (colon != std::string_view::npos) {
        out.thread = span_of(inside.begin, inside.begin + colon);
        out.component = span_of(inside.begin + colon + 1, inside.begin + inside.len);
    } else {
        out.thread = inside;
    }
    set_message_from(line, b, out);
    return true;
}

// "2024-01-02 15:04:05,123 - myapp.db - ERROR - connection lost"; "ERROR:root:connection lost"
bool parse_python(std::string_view line, line_fields& out, line_parser&) {
    std::size_t i = read_iso(line, 0, out);
    if (i == std::string_view::npos) {
        std::size_t colon = line.find(':');
        if (colon == std::string_view::npos || colon > 8) return false;
        if (read_level_word(line, 0, out) != colon) return false;
        for (std::size_t k = 0; k < colon; ++k)
            if (!(line[k] >= 'A' && line[k] <= 'Z')) return false;
        std::size_t name_end = line.find(':', colon + 1);
        if (name_end == std::string_view::npos || name_end == colon + 1) return false;
        for (std::size_t k = colon + 1; k < name_end; ++k)
            if (is_space(line[k])) return false;
        out.component = span_of(colon + 1, name_end);
        out.message = span_of(name_end + 1, line.size());
        return true;
    }
    if (line.compare(i, 3, " - ") != 0) return false;
    std::size_t name_end = line.find(" - ", i + 3);
    if (name_end == std::string_view::npos || name_end == i + 3) return false;
    std::size_t e = read_level_word(line, name_end + 3, out);
    if (e == std::string_view::npos || line.compare(e, 3, " - ") != 0) return false;
    out.component = span_of(i + 3, name_end);
    out.message = span_of(e + 3, line.size());
    find_trace(line, out);
    return true;
}

// oslo.log, optionally after the file name as LogHub's OpenStack sample has it:
// "nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:00.008 25746 INFO nova.osapi_compute.wsgi.server [req-38101a0b ...] 10.11.10.1 "GET ..." status: 200"
bool parse_openstack(std::string_view line, line_fields& out, line_parser&) {
    std::size_t i = 0;
    std::size_t first = token_end(line, 0);
    if (line.substr(0, first).find(".log") != std::string_view::npos) {
        out.component = span_of(0, first);
        i = skip_spaces(line, first);
    }
    i = read_iso(line, i, out);
    if (i == std::string_view::npos || i >= line.size() || line[i] != ' ') return false;
    std::int64_t pid = 0;
    std::size_t pe = read_number(line, i + 1, &pid);
    if (pe == i + 1 || pe >= line.size() || line[pe] != ' ') return false;
    out.pid = span_of(i + 1, pe);
    std::size_t e = read_level_word(line, pe + 1, out);
    if (e == std::string_view::npos) return false;
    std::size_t k = skip_spaces(line, e);
    std::size_t me = token_end(line, k);
    out.component = span_of(k, me);
    set_message_from(line, e, out);
    return true;
}

// HDFS: "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block blk_38865049064139660 terminating"
bool parse_hdfs(std::string_view line, line_fields& out, line_parser&) {
    civil_time t;
    if (line.size() < 17 || !read_digits(line, 0, 2, &t.year) || !read_digits(line, 2, 2, &t.month) ||
        !read_digits(line, 4, 2, &t.day) || line[6] != ' ' || !read_digits(line, 7, 2, &t.hour) ||
        !read_digits(line, 9, 2, &t.minute) || !read_digits(line, 11, 2, &t.second) || line[13] != ' ')
        return false;
    t.year += 2000;
    if (!t.valid()) return false;
    std::int64_t pid = 0;
    std::size_t pe = read_number(line, 14, &pid);
    if (pe == 14 || pe >= line.size() || line[pe] != ' ') return false;
    std::size_t e = read_level_word(line, pe + 1, out);
    if (e == std::string_view::npos) return false;
    set_civil(out, t, std::nullopt);
    out.pid = span_of(14, pe);
    read_logger(line, skip_spaces(line, e), out);
    set_message_from(line, e, out);
    return true;
}

// Spark: "17/06/09 20:10:40 INFO executor.CoarseGrainedExecutorBackend: Registered signal handlers for [TERM, HUP, INT]"
bool parse_spark(std::string_view line, line_fields& out, line_parser&) {
    civil_time t;
    if (line.size() < 19 || !read_digits(line, 0, 2, &t.year) || line[2] != '/' || !read_digits(line, 3, 2, &t.month) ||
        line[5] != '/' || !read_digits(line, 6, 2, &t.day) || line[8] != ' ' || !read_digits(line, 9, 2, &t.hour) ||
        line[11] != ':' || !read_digits(line, 12, 2, &t.minute) || line[14] != ':' || !read_digits(line, 15, 2, &t.second) ||
        line[17] != ' ')
        return false;
    t.year += 2000;
    if (!t.valid()) return false;
    std::size_t e = read_level_word(line, 18, out);
    if (e == std::string_view::npos) return false;
    set_civil(out, t, std::nullopt);
    read_logger(line, skip_spaces(line, e), out);
    set_message_from(line, e, out);
    return true;
}

// klog/glog: "I0102 15:04:05.123456    1234 main.go:42] message"
bool parse_klog(std::string_view line, line_fields& out, line_parser&) {
    if (line.size() < 22) return false;
    auto s = severity_from_letter(line[0]);
    civil_time t;
    if (!s || (line[0] != 'I' && line[0] != 'W' && line[0] != 'E' && line[0] != 'F') ||
        !read_digits(line, 1, 2, &t.month) || !read_digits(line, 3, 2, &t.day) || line[5] != ' ' ||
        !read_digits(line, 6, 2, &t.hour) || line[8] != ':' || !read_digits(line, 9, 2, &t.minute) || line[11] != ':' ||
        !read_digits(line, 12, 2, &t.second))
        return false;
    std::size_t i = 14;
    if (line[i] == '.') i += 1 + read_fraction(line, i + 1, &t.micros);
    if (!t.valid()) return false;
    i = skip_spaces(line, i);
    std::int64_t tid = 0;
    std::size_t te = read_number(line, i, &tid);
    if (te == i || te >= line.size() || line[te] != ' ') return false;
    std::size_t close = line.find("] ", te);
    if (close == std::string_view::npos && line.back() == ']') close = line.size() - 1;
    if (close == std::string_view::npos) return false;
    out.level = *s;
    set_civil(out, t, std::nullopt);
    out.thread = span_of(i, te);
    out.component = span_of(te + 1, close);
    out.message = span_of(std::min(line.size(), close + 2), line.size());
    find_trace(line, out);
    return true;
}

// logcat threadtime "03-17 16:13:38.811  1702  2395 D WindowManager: message"
// and time "03-17 16:13:38.811 D/WindowManager( 1702): message"
bool parse_android(std::string_view line, line_fields& out, line_parser&) {
    civil_time t;
    if (line.size() < 21 || !read_digits(line, 0, 2, &t.month) || line[2] != '-' || !read_digits(line, 3, 2, &t.day) ||
        line[5] != ' ' || !read_digits(line, 6, 2, &t.hour) || line[8] != ':' || !read_digits(line, 9, 2, &t.minute) ||
        line[11] != ':' || !read_digits(line, 12, 2, &t.second) || line[14] != '.')
        return false;
    std::size_t i = 15 + read_fraction(line, 15, &t.micros);
    if (!t.valid() || i >= line.size() || line[i] != ' ') return false;
    i = skip_spaces(line, i);
    std::int64_t v = 0;
    std::size_t pe = read_number(line, i, &v);
    if (pe > i) {  // threadtime
        out.pid = span_of(i, pe);
        std::size_t ts = skip_spaces(line, pe);
        std::size_t te = read_number(line, ts, &v);
        if (te == ts) return false;
        out.thread = span_of(ts, te);
        std::size_t l = skip_spaces(line, te);
        if (l + 2 >= line.size() || line[l + 1] != ' ') return false;
        auto s = severity_from_letter(line[l]);
        if (!s) return false;
        out.level = *s;
        std::size_t tag = skip_spaces(line, l + 2);
        std::size_t colon = line.find(": ", tag);
        if (colon == std::string_view::npos) colon = line.find(':', tag);
        if (colon == std::string_view::npos) return false;
        std::size_t tag_end = colon;
        while (tag_end > tag && is_space(line[tag_end - 1])) --tag_end;
        out.component = span_of(tag, tag_end);
        out.message = span_of(std::min(line.size(), colon + 2), line.size());
    } else {  // time: "D/Tag( 1702): message"
        if (i + 2 >= line.size() || line[i + 1] != '/') return false;
        auto s = severity_from_letter(line[i]);
        if (!s) return false;
        out.level = *s;
        std::size_t open = line.find('(', i + 2);
        std::size_t close = open == std::string_view::npos ? open : line.find("):", open);
        if (close == std::string_view::npos) return false;
        out.component = span_of(i + 2, open);
        std::size_t ps = skip_spaces(line, open + 1);
        out.pid = span_of(ps, close);
        out.message = span_of(std::min(line.size(), close + 3), line.size());
    }
    set_civil(out, t, std::nullopt);
    return true;
}

// logcat brief "I/ActivityManager(  585): Start proc com.android.settings"
bool parse_android_brief(std::string_view line, line_fields& out, line_parser&) {
    if (line.size() < 6 || line[1] != '/') return false;
    auto s = severity_from_letter(line[0]);
    if (!s) return false;
    std::size_t open = line.find('(', 2);
    if (open == std::string_view::npos || open == 2 || open > 100) return false;
    std::size_t close = line.find("):", open);
    if (close == std::string_view::npos) return false;
    std::size_t ps = skip_spaces(line, open + 1);
    std::int64_t v = 0;
    if (read_number(line, ps, &v) != close) return false;
    out.level = *s;
    out.component = span_of(2, open);
    out.pid = span_of(ps, close);
    out.message = span_of(std::min(line.size(), close + 3), line.size());
    return true;
}

// Windows CBS: "2016-09-28 04:30:30, Info                  CBS    Loaded Servicing Stack v6.1.7601.23505"
bool parse_windows_cbs(std::string_view line, line_fields& out, line_parser&) {
    std::size_t i = read_iso(line, 0, out);
    if (i != 19 || line.compare(19, 2, ", ") != 0) return false;
    std::size_t e = read_level_word(line, 21, out);
    if (e == std::string_view::npos) return false;
    std::size_t c = skip_spaces(line, e);
    std::size_t ce = token_end(line, c);
    out.component = span_of(c, ce);
    set_message_from(line, ce, out);
    return true;
}

// Event Viewer exports: "Error,1/2/2024 3:04:05 PM,Service Control Manager,7000,None,The X service failed"
// (or tab-separated, or with an ISO date)
bool parse_windows_event(std::string_view line, line_fields& out, line_parser&) {
    std::size_t sep_at = line.find_first_of(",\t");
    if (sep_at == std::string_view::npos || sep_at > 12) return false;
    const char sep = line[sep_at];
    auto level = severity_from_word(line.substr(0, sep_at));
    if (!level) return false;
    std::size_t i = sep_at + 1;
    std::size_t date_end = line.find(sep, i);
    if (date_end == std::string_view::npos) return false;
    std::string_view date = line.substr(i, date_end - i);
    civil_time t;
    std::size_t used = 0;
    std::optional<int> zone;
    if (auto iso = parse_iso_civil(date, &used, &zone); iso && used == date.size()) {
        set_civil(out, *iso, zone);
    } else {
        // M/D/YYYY h:mm:ss AM
        std::int64_t m = 0, d = 0, y = 0, h = 0, mi = 0, s = 0;
        std::size_t k = read_number(date, 0, &m);
        if (k == 0 || k >= date.size() || date[k] != '/') return false;
        std::size_t k2 = read_number(date, k + 1, &d);
        if (k2 == k + 1 || k2 >= date.size() || date[k2] != '/') return false;
        std::size_t k3 = read_number(date, k2 + 1, &y);
        if (k3 - k2 - 1 != 4 || k3 >= date.size() || date[k3] != ' ') return false;
        std::size_t k4 = read_number(date, k3 + 1, &h);
        if (k4 == k3 + 1 || k4 >= date.size() || date[k4] != ':') return false;
        std::size_t k5 = read_number(date, k4 + 1, &mi);
        if (k5 >= date.size() || date[k5] != ':') return false;
        std::size_t k6 = read_number(date, k5 + 1, &s);
        std::string_view ampm = date.substr(std::min(date.size(), k6 + 1));
        if (ampm == "PM" && h < 12) h += 12;
        else if (ampm == "AM" && h == 12) h = 0;
        t.year = int(y), t.month = int(m), t.day = int(d), t.hour = int(h), t.minute = int(mi), t.second = int(s);
        if (t.year == 0 || !t.valid()) return false;
        set_civil(out, t, std::nullopt);
    }
    out.level = *level;
    std::size_t src_end = line.find(sep, date_end + 1);
    if (src_end == std::string_view::npos) return false;
    out.service = span_of(date_end + 1, src_end);
    // event id, task category, then the message
    std::size_t id_end = line.find(sep, src_end + 1);
    std::size_t task_end = id_end == std::string_view::npos ? id_end : line.find(sep, id_end + 1);
    std::size_t msg = task_end != std::string_view::npos ? task_end + 1 : id_end != std::string_view::npos ? id_end + 1 : src_end + 1;
    if (id_end != std::string_view::npos) out.component = span_of(src_end + 1, id_end);
    out.message = span_of(msg, line.size());
    return true;
}

// "20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579"
bool parse_health(std::string_view line, line_fields& out, line_parser&) {
    civil_time t;
    int ms = 0;
    if (line.size() < 22 || !read_digits(line, 0, 4, &t.year) || !read_digits(line, 4, 2, &t.month) ||
        !read_digits(line, 6, 2, &t.day) || line[8] != '-' || !read_digits(line, 9, 2, &t.hour) || line[11] != ':' ||
        !read_digits(line, 12, 2, &t.minute) || line[14] != ':' || !read_digits(line, 15, 2, &t.second) || line[17] != ':')
        return false;
    std::size_t i = 18;
    std::int64_t frac = 0;
    std::size_t fe = read_number(line, i, &frac);
    if (fe == i || fe - i > 3 || fe >= line.size() || line[fe] != '|') return false;
    ms = int(frac);
    t.micros = ms * 1000;
    if (t.year == 0 || !t.valid()) return false;
    std::size_t c_end = line.find('|', fe + 1);
    if (c_end == std::string_view::npos) return false;
    std::size_t p_end = line.find('|', c_end + 1);
    if (p_end == std::string_view::npos) return false;
    set_civil(out, t, std::nullopt);
    out.component = span_of(fe + 1, c_end);
    out.pid = span_of(c_end + 1, p_end);
    out.message = span_of(p_end + 1, line.size());
    return true;
}

// "[10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS"
bool parse_proxifier(std::string_view line, line_fields& out, line_parser&) {
    civil_time t;
    if (line.size() < 17 || line[0] != '[' || !read_digits(line, 1, 2, &t.month) || line[3] != '.' ||
        !read_digits(line, 4, 2, &t.day) || line[6] != ' ' || !read_digits(line, 7, 2, &t.hour) || line[9] != ':' ||
        !read_digits(line, 10, 2, &t.minute) || line[12] != ':' || !read_digits(line, 13, 2, &t.second) ||
        line[15] != ']' || !t.valid())
        return false;
    set_civil(out, t, std::nullopt);
    std::size_t i = skip_spaces(line, 16);
    std::size_t dash = line.find(" - ", i);
    if (dash != std::string_view::npos) {
        out.service = span_of(i, dash);
        i = dash + 3;
    }
    out.message = span_of(i, line.size());
    std::string_view msg = out.message.in(line);
    if (msg.find("error") != std::string_view::npos || msg.find("Error") != std::string_view::npos) out.level = severity::error;
    return true;
}

// Any other line that opens with a timestamp: ISO ("2026-03-14T14:00:00Z",
// bracketed or not), Go's log package ("2024/01/02 15:04:05"), zap's console
// encoder; the level is a level word among the first tokens or "level=...".
bool parse_stamped(std::string_view line, line_fields& out, line_parser&) {
    std::size_t start = !line.empty() && line[0] == '[' ? 1 : 0;
    std::size_t i = read_iso(line, start, out);
    if (i == std::string_view::npos) {
        civil_time t;
        if (line.size() < start + 19 || !read_digits(line, start, 4, &t.year) || line[start + 4] != '/' ||
            !read_digits(line, start + 5, 2, &t.month) || line[start + 7] != '/' || !read_digits(line, start + 8, 2, &t.day) ||
            line[start + 10] != ' ' || !read_digits(line, start + 11, 2, &t.hour) || line[start + 13] != ':' ||
            !read_digits(line, start + 14, 2, &t.minute) || line[start + 16] != ':' ||
            !read_digits(line, start + 17, 2, &t.second))
            return false;
        i = start + 19;
        if (i + 1 < line.size() && line[i] == '.' && is_digit(line[i + 1])) i += 1 + read_fraction(line, i + 1, &t.micros);
        if (t.year == 0 || !t.valid()) return false;
        set_civil(out, t, std::nullopt);
    }
    if (start == 1 && i < line.size() && line[i] == ']') ++i;
    if (i < line.size() && !is_space(line[i]) && line[i] != ':' && line[i] != '|' && line[i] != ']') return false;
    std::size_t k = skip_spaces(line, i);
    if (std::size_t after = read_program(line, k, out); after != std::string_view::npos) k = after;
    std::size_t level_end = find_level_token(line, k, 3, out);
    if (level_end != std::string_view::npos) set_message_from(line, level_end, out);
    else {
        find_level_pair(line, out);
        set_message_from(line, k, out);
    }
    find_trace(line, out);
    return true;
}

}  // namespace

extern const log_format log4j_format{"log4j", parse_log4j};
extern const log_format zookeeper_format{"zookeeper", parse_zookeeper};
extern const log_format python_format{"python", parse_python};
extern const log_format openstack_format{"openstack", parse_openstack};
extern const log_format hdfs_format{"hdfs", parse_hdfs};
extern const log_format spark_format{"spark", parse_spark};
extern const log_format klog_format{"klog", parse_klog};
extern const log_format android_format{"android", parse_android};
extern const log_format android_brief_format{"android_brief", parse_android_brief};
extern const log_format windows_cbs_format{"windows_cbs", parse_windows_cbs};
extern const log_format windows_event_format{"windows_event", parse_windows_event};
extern const log_format health_format{"health", parse_health};
extern const log_format proxifier_format{"proxifier", parse_proxifier};
extern const log_format stamped_format{"stamped", parse_stamped};

}  // namespace tachyon::logformat
