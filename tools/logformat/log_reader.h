// A log file's text into entries: recognises the file's format from its
// first lines (each format scored by the lines it explains; a line the
// file's format does not explain goes to the first format that does), groups
// multi-line entries (stack traces, indented continuations) and settles every
// entry's time in UTC: the year and zone a line leaves out come from the
// file's other lines, the hints, the directory's other files or the file's
// modification time; an entry without a time takes its neighbour's.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tools/logformat/log_format.h"

namespace tachyon::logformat {

// One entry: a first line plus its continuation lines.
struct log_record {
    std::uint64_t offset = 0;     // byte offset of the first line in the text
    std::uint32_t first_line = 0;  // 1-based
    std::uint32_t last_line = 0;
    std::uint32_t first_len = 0;   // bytes of the first line, without "\r\n"
    std::int64_t time_us = no_time;  // UTC once resolve_times ran
    time_kind time = time_kind::none;  // as the line wrote it
    bool time_inferred = false;        // the time came from a neighbour
    std::int16_t zone_minutes = line_fields::no_zone;
    severity level = severity::unknown;
    std::int16_t format = -1;  // index in log_formats(), -1: plain text
    bool escaped = false;      // as line_fields::escaped
    text_span service, component, host, pid, thread, message, trace;  // in the first line
};

struct time_hints {
    std::optional<int> year;          // for stamps without one (the `year` setting)
    std::optional<int> zone_minutes;  // for stamps without a zone (the `tz` setting)
    std::optional<int> context_year;  // the one year the directory's other files share
    std::int64_t mtime_us = no_time;  // the file's modification time
};

// The format most of the first `max_lines` lines have; -1: plain text.
int detect_format(std::string_view text, line_parser& scratch, std::size_t max_lines = 200);

// Entries of text[begin, end), which must start at a line start; line
// numbers count from 1 at `begin`. Returns the number of lines read.
std::uint32_t scan_records(std::string_view text, std::size_t begin, std::size_t end, int format,
                           line_parser& scratch, std::vector<log_record>& out);

// The first line start at or after `target` that opens an entry, so that a
// chunk never starts inside a stack trace; text.size() when none.
std::size_t next_entry_start(std::string_view text, std::size_t target, int format, line_parser& scratch);

// Settles time_us of every record (in file order) to UTC.
void resolve_times(std::vector<log_record>& records, const time_hints& hints);

struct parsed_log {
    int format = -1;
    std::uint32_t n_lines = 0;
    std::vector<log_record> records;
};
// detect_format + scan_records + resolve_times over a whole text.
parsed_log read_log(std::string_view text, const time_hints& hints);

}  // namespace tachyon::logformat
