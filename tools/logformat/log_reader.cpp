#include "tools/logformat/log_reader.h"

#include <cstring>

namespace tachyon::logformat {
namespace {

std::string_view line_at(std::string_view text, std::size_t pos, std::size_t end, std::size_t* line_end) {
    const void* nl = std::memchr(text.data() + pos, '\n', end - pos);
    *line_end = nl ? std::size_t(static_cast<const char*>(nl) - text.data()) : end;
    std::string_view line = text.substr(pos, *line_end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
}

void fill(log_record& r, const line_fields& f) {
    r.time_us = f.time_us;
    r.time = f.time;
    r.zone_minutes = f.zone_minutes;
    r.level = f.level;
    r.escaped = f.escaped;
    r.service = f.service, r.component = f.component, r.host = f.host, r.pid = f.pid, r.thread = f.thread;
    r.message = f.message, r.trace = f.trace;
}

}  // namespace

int detect_format(std::string_view text, line_parser& scratch, std::size_t max_lines) {
    const auto formats = log_formats();
    std::vector<std::uint32_t> score(formats.size(), 0);
    std::size_t pos = 0, n = 0;
    line_fields f;
    while (pos < text.size() && n < max_lines) {
        std::size_t line_end = 0;
        std::string_view line = line_at(text, pos, text.size(), &line_end);
        pos = line_end + 1;
        if (line.empty() || line[0] == ' ' || line[0] == '\t') continue;
        ++n;
        // a line counts for the first format that takes it, as parse_line
        // gives it out: a catch-all (any stamped line) that takes every line
        // of a file never outvotes the specific format of most of them
        for (std::size_t i = 0; i < formats.size(); ++i) {
            f = line_fields{};
            if (formats[i]->parse(line, f, scratch)) {
                ++score[i];
                break;
            }
        }
    }
    int best = -1;
    std::uint32_t best_score = 0;
    for (std::size_t i = 0; i < formats.size(); ++i)
        if (score[i] > best_score) best = int(i), best_score = score[i];
    return best;
}

std::uint32_t scan_records(std::string_view text, std::size_t begin, std::size_t end, int format,
                           line_parser& scratch, std::vector<log_record>& out) {
    const std::size_t first_record = out.size();
    std::uint32_t n_lines = 0;
    bool in_trace = false;
    line_fields f;
    std::size_t pos = begin;
    while (pos < end) {
        std::size_t line_end = 0;
        std::string_view line = line_at(text, pos, end, &line_end);
        ++n_lines;
        int used = parse_line(line, format, f, scratch);
        const bool have_entry = out.size() > first_record;
        if (have_entry && is_continuation(line, f, used, in_trace)) {
            out.back().last_line = n_lines;
            in_trace = true;
        } else {
            log_record r;
            r.offset = pos;
            r.first_line = r.last_line = n_lines;
            r.first_len = std::uint32_t(std::min<std::size_t>(line.size(), UINT32_MAX));
            r.format = std::int16_t(used);
            fill(r, f);
            in_trace = f.time != time_kind::none || f.level != severity::unknown;
            out.push_back(r);
        }
        pos = line_end + 1;
    }
    return n_lines;
}

std::size_t next_entry_start(std::string_view text, std::size_t target, int format, line_parser& scratch) {
    std::size_t pos = target == 0 ? 0 : text.find('\n', target - 1);
    if (pos == std::string_view::npos) return text.size();
    if (target != 0) ++pos;
    line_fields f;
    while (pos < text.size()) {
        std::size_t line_end = 0;
        std::string_view line = line_at(text, pos, text.size(), &line_end);
        int used = parse_line(line, format, f, scratch);
        // an entry that carries a time: a cut there never splits a trace
        if (f.time != time_kind::none && !is_continuation(line, f, used, true)) return pos;
        pos = line_end + 1;
    }
    return text.size();
}

namespace {
std::int64_t in_year(std::int64_t civil_2000_us, int year) {
    civil_time t = civil_from_us(civil_2000_us);
    t.year = year;
    return t.to_us();
}
}  // namespace

void resolve_times(std::vector<log_record>& records, const time_hints& hints) {
    // the zone of stamps without one: the hint, else one the file writes elsewhere
    int zone = 0;
    if (hints.zone_minutes) zone = *hints.zone_minutes;
    else
        for (const auto& r : records)
            if (r.zone_minutes != line_fields::no_zone) {
                zone = r.zone_minutes;
                break;
            }
    const std::int64_t zone_us = std::int64_t(zone) * 60 * us_per_second;
    int first_dated_year = 0;
    for (auto& r : records) {
        if (r.time == time_kind::local) r.time_us -= zone_us;
        if (first_dated_year == 0 && (r.time == time_kind::local || r.time == time_kind::absolute))
            first_dated_year = year_of(r.time_us);
    }

    // yearless stamps: count the new years they pass (a month that goes back
    // by more than half a year), then anchor the first
    std::vector<int> rollover;  // per yearless record, in order
    std::int64_t previous = no_time;
    int n_roll = 0;
    std::int64_t last_yearless = no_time;
    for (const auto& r : records) {
        if (r.time != time_kind::yearless) continue;
        if (previous != no_time && r.time_us < previous - 183 * us_per_day) ++n_roll;
        previous = r.time_us;
        rollover.push_back(n_roll);
        last_yearless = r.time_us;
    }
    if (!rollover.empty()) {
        int base = 0;
        if (hints.year) base = *hints.year;
        else if (first_dated_year != 0) base = first_dated_year;
        else if (hints.context_year) base = *hints.context_year;
        else if (hints.mtime_us != no_time) {
            // the file was last written after its last line
            const int y = year_of(hints.mtime_us);
            base = y - n_roll;
            if (in_year(last_yearless, y) - zone_us > hints.mtime_us + us_per_day) base -= 1;
        } else {
            base = 1970;
        }
        std::size_t k = 0;
        for (auto& r : records) {
            if (r.time != time_kind::yearless) continue;
            r.time_us = in_year(r.time_us, base + rollover[k++]) - zone_us;
        }
    }

    // entries without a time take the previous entry's, the first ones the next's
    std::int64_t last = no_time;
    for (auto& r : records) {
        if (r.time == time_kind::none) {
            r.time_us = last;
            r.time_inferred = last != no_time;
        } else {
            last = r.time_us;
        }
    }
    std::int64_t next = no_time;
    for (auto it = records.rbegin(); it != records.rend(); ++it) {
        if (it->time != time_kind::none) next = it->time_us;
        else if (it->time_us == no_time && next != no_time) {
            it->time_us = next;
            it->time_inferred = true;
        }
    }
}

parsed_log read_log(std::string_view text, const time_hints& hints) {
    parsed_log out;
    line_parser scratch;
    out.format = detect_format(text, scratch);
    out.n_lines = scan_records(text, 0, text.size(), out.format, scratch, out.records);
    resolve_times(out.records, hints);
    return out;
}

}  // namespace tachyon::logformat
