// libFuzzer target for the log-format layer: any bytes as a log file, read
// whole (format detection, every format's parser, entry grouping, time
// resolution) and line by line with each format preferred in turn. Every
// span a parser returns must lie inside its line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tools/logformat/log_reader.h"

using namespace tachyon::logformat;

namespace {
void check_span(text_span s, std::size_t size) {
    if (s.len > 0 && (s.begin > size || s.len > size - s.begin)) std::abort();
}
void check_fields(const line_fields& f, std::size_t size) {
    for (text_span s : {f.service, f.component, f.host, f.pid, f.thread, f.message, f.trace}) check_span(s, size);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    time_hints hints;
    if (size > 0 && data[0] % 3 == 0) hints.year = 2017;
    if (size > 1 && data[1] % 5 == 0) hints.zone_minutes = -420;
    hints.mtime_us = 1563000000LL * 1000000;
    parsed_log log = read_log(text, hints);
    for (const auto& r : log.records) {
        if (r.offset > size || r.first_len > size - r.offset || r.first_line > r.last_line || r.last_line > log.n_lines)
            std::abort();
        check_fields(line_fields{.service = r.service, .component = r.component, .host = r.host, .pid = r.pid,
                                 .thread = r.thread, .message = r.message, .trace = r.trace},
                     r.first_len);
    }
    // the first line under every format by itself (parse_line with a
    // preferred format would retry all the others: the same code, 26x the time)
    std::string_view line = text.substr(0, text.find('\n'));
    static line_parser scratch;  // as a loading thread keeps its own across lines
    const auto formats = log_formats();
    for (const log_format* format : formats) {
        line_fields f;
        if (format->parse(line, f, scratch)) check_fields(f, line.size());
    }
    line_fields f;
    const int used = parse_line(line, -1, f, scratch);
    if (used < -1 || used >= int(formats.size())) std::abort();
    check_fields(f, line.size());
    (void)is_continuation(line, f, used, true);
    if (f.escaped) (void)unescape(f.message.in(line));
    if (size > 0) (void)next_entry_start(text, size / 2, log.format, scratch);
    return 0;
}
