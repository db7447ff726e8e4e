// The log formats tachyon reads without configuration, and the parts one
// line of each yields. A format is a name and a function that says whether a
// line has the format's shape and, if so, where its time, level, source and
// message are. Formats live in formats_*.cpp, one registration line each in
// log_format.cpp; log_reader.h recognises a file's format and groups lines
// into entries.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "tools/logformat/log_level.h"
#include "tools/logformat/log_time.h"

namespace tachyon::logformat {

// Bytes [begin, begin + len) of a line; len 0: absent.
struct text_span {
    std::uint32_t begin = 0, len = 0;
    bool empty() const { return len == 0; }
    std::string_view in(std::string_view line) const { return len ? line.substr(begin, len) : std::string_view(); }
};

enum class time_kind : std::uint8_t {
    none,      // the line gives no time
    absolute,  // UTC (a zone or an epoch was written)
    local,     // date and clock without a zone: the file's zone applies
    yearless,  // month, day and clock only (syslog, logcat, klog): year and zone inferred
};

struct line_fields {
    // absolute: UTC; local: the civil time as if UTC; yearless: the same in year 2000
    std::int64_t time_us = no_time;
    time_kind time = time_kind::none;
    std::int16_t zone_minutes = no_zone;  // the zone the line wrote, when it wrote one
    severity level = severity::unknown;
    // the message (in JSON lines every string field) is the inside of a
    // quoted string and keeps its backslash escapes; unescape() gives the text
    bool escaped = false;
    text_span service, component, host, pid, thread, message, trace;

    static constexpr std::int16_t no_zone = INT16_MIN;
};

// Per-thread scratch of the parsers (a JSON parser and its padded buffer).
class line_parser {
public:
    simdjson::ondemand::parser json;
    std::string buffer;
    int depth = 0;  // nesting of formats that wrap another line (CRI), bounded
};

struct log_format {
    std::string_view name;
    // true when `line` has this format's shape; then fills `out` (cleared
    // by the caller). Never reads outside `line`.
    bool (*parse)(std::string_view line, line_fields& out, line_parser& scratch);
};

// Every format, the most specific first: a line goes to the first that
// takes it when its file's own format does not.
std::span<const log_format* const> log_formats();
int find_format(std::string_view name);  // index in log_formats(), -1 when unknown
std::string_view format_name(int index);  // "text" for -1

// Parses one line: with format `preferred` first (-1: none), then with every
// format in order. Returns the index of the format that took it, or -1 when
// none did; then `out` holds what plain text gives (the whole line as the
// message, a level word that opens it).
int parse_line(std::string_view line, int preferred, line_fields& out, line_parser& scratch);

// The text an escaped span stands for: JSON escapes (\" \\ \/ \b \f \n \r \t,
// \uXXXX with surrogate pairs, as UTF-8); an unknown or cut escape stays as
// written.
std::string unescape(std::string_view escaped);

// Whether a line that no format took (`format` -1) continues the entry above:
// stack frames, "Caused by:", tracebacks, indented or empty lines. A line
// with a time or a level never does. `in_trace`: the line above was itself a
// continuation or opened an entry with a time or level.
bool is_continuation(std::string_view line, const line_fields& fields, int format, bool in_trace);

}  // namespace tachyon::logformat
