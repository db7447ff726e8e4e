#include "runtime/remote/sse_parser.h"

namespace tachyon::remote {

status sse_parser::feed(std::string_view chunk, std::vector<std::string>& events) {
    for (char c : chunk) {
        if (after_cr_) {
            after_cr_ = false;
            if (c == '\n') continue;
        }
        if (c == '\r' || c == '\n') {
            after_cr_ = c == '\r';
            line(line_, events);
            line_.clear();
            continue;
        }
        if (line_.size() + data_.size() >= max_event_bytes_)
            return make_error(errc::out_of_range, "event stream: an event longer than " + std::to_string(max_event_bytes_) +
                                                      " bytes (expected one chat completion chunk per event)");
        line_ += c;
    }
    return {};
}

void sse_parser::line(std::string_view text, std::vector<std::string>& events) {
    if (text.empty()) {
        if (has_data_) {
            events.push_back(std::move(data_));
            ++n_events_;
        }
        data_.clear();
        has_data_ = false;
        return;
    }
    if (text.front() == ':') return;  // a comment: keep-alive
    const size_t colon = text.find(':');
    const std::string_view field = text.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field != "data") return;  // event, id, retry: not used by the chat stream
    if (has_data_) data_ += '\n';
    data_ += value;
    has_data_ = true;
}

bool sse_parser::finish(std::vector<std::string>& events) {
    if (!line_.empty()) {
        line(line_, events);
        line_.clear();
    }
    if (!has_data_) return false;
    events.push_back(std::move(data_));
    ++n_events_;
    data_.clear();
    has_data_ = false;
    return true;
}

}  // namespace tachyon::remote
