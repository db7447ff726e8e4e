// Server-sent events (the WHATWG event-stream format) as OpenAI-compatible
// servers stream a chat completion: "data: {...}" lines, events ended by a
// blank line, ':' comment lines (keep-alives), CR, LF or CRLF line ends.
// Fed the body as it arrives, in pieces split anywhere; only the data of
// each event is handed on (event names and ids are not used by the chat
// stream). Memory is bounded: an event past max_event_bytes is an error.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tachyon::remote {

class sse_parser {
public:
    static constexpr size_t default_max_event_bytes = size_t{4} << 20;

    explicit sse_parser(size_t max_event_bytes = default_max_event_bytes) : max_event_bytes_(max_event_bytes) {}

    // Appends the data of every event `chunk` completes (lines of one event
    // joined by '\n'). Error: an event or line over the limit.
    status feed(std::string_view chunk, std::vector<std::string>& events);
    // End of the body: an event still open (no blank line after it) is
    // delivered, as the format's dispatch-at-EOF does not; true when one was.
    bool finish(std::vector<std::string>& events);

    size_t n_events() const { return n_events_; }

private:
    void line(std::string_view text, std::vector<std::string>& events);

    size_t max_event_bytes_;
    std::string line_;     // the line being read
    std::string data_;     // the event being read
    bool has_data_ = false;
    bool after_cr_ = false;  // the last byte was CR: a following LF belongs to the same line end
    size_t n_events_ = 0;
};

}  // namespace tachyon::remote
