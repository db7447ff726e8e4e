#include "runtime/chat/tool_call_parser.h"

#include <algorithm>

#include "base/assert.h"

namespace tachyon {

namespace {

constexpr std::string_view k_open = "<tool_call>";
constexpr std::string_view k_close = "</tool_call>";

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
    return s;
}

// Length of the longest prefix of `s` that ends on a UTF-8 character
// boundary: a lead byte whose continuation bytes have not all arrived is cut
// off. Invalid bytes pass through (they never complete).
size_t complete_utf8_prefix(std::string_view s) {
    const size_t n = s.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const auto c = static_cast<unsigned char>(s[n - back]);
        if ((c & 0xC0) == 0x80) continue;  // continuation: look further back
        size_t need = 1;
        if ((c & 0xE0) == 0xC0) need = 2;
        else if ((c & 0xF0) == 0xE0) need = 3;
        else if ((c & 0xF8) == 0xF0) need = 4;
        return need > back ? n - back : n;
    }
    return n;
}

// A few bytes around `offset`, so the model sees where its JSON broke.
std::string excerpt_at(std::string_view s, size_t offset) {
    const size_t from = offset > 16 ? offset - 16 : 0;
    std::string e(s.substr(from, std::min<size_t>(32, s.size() - from)));
    for (char& c : e)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    return e;
}

}  // namespace

tool_call_parser::tool_call_parser(tool_call_syntax syntax, size_t max_call_bytes)
    : syntax_(syntax),
      max_call_bytes_(std::max<size_t>(max_call_bytes, 16)),
      state_(syntax == tool_call_syntax::llama3 ? state::lead : state::text) {}

void tool_call_parser::emit_text(std::string_view text, std::vector<tool_call_event>& out) {
    if (text.empty()) return;
    if (out.size() > feed_base_ && out.back().type == tool_call_event::kind::text) {
        out.back().text.append(text);
        return;
    }
    tool_call_event e;
    e.type = tool_call_event::kind::text;
    e.text = std::string(text);
    out.push_back(std::move(e));
}

void tool_call_parser::call_error(std::string message, std::vector<tool_call_event>& out, std::string name) {
    tool_call_event e;
    e.type = tool_call_event::kind::call_error;
    e.index = n_calls_++;
    e.name = std::move(name);
    e.message = "tool call " + std::to_string(e.index) + ": " + std::move(message);
    out.push_back(std::move(e));
}

void tool_call_parser::finish_call(std::string_view raw, std::vector<tool_call_event>& out, bool llama3_text_if_no_name) {
    const std::string_view body = trim(raw);
    const char* shape = syntax_ == tool_call_syntax::hermes
                            ? "{\"name\": <function-name>, \"arguments\": <args-json-object>}"
                            : "{\"name\": <function-name>, \"parameters\": <args-json-object>}";
    if (body.empty()) return call_error(std::string("empty; expected ") + shape, out);
    std::vector<json_member> members;
    if (auto err = check_json(body, &members)) {
        return call_error("malformed JSON at offset " + std::to_string(err->offset) + " (near '" +
                              excerpt_at(body, err->offset) + "'): " + err->what,
                          out);
    }
    if (body.front() != '{')
        return call_error(std::string("expected a JSON object ") + shape + "; got " + std::string(json_kind_name(body)),
                          out);
    auto find = [&](std::string_view key) -> const json_member* {
        for (const auto& m : members)
            if (m.key == key) return &m;
        return nullptr;
    };
    const json_member* name_m = find("name");
    if (name_m == nullptr) {
        if (llama3_text_if_no_name) {
            // Not a call: a JSON final answer. It and the rest of the turn are text.
            emit_text(raw, out);
            state_ = state::text;
            return;
        }
        return call_error(std::string("missing \"name\"; expected ") + shape, out);
    }
    std::string name;
    if (name_m->value.empty() || name_m->value.front() != '"' || !unescape_json_string(name_m->value, name))
        return call_error("\"name\" must be a string; got " + std::string(json_kind_name(name_m->value)), out);
    if (name.empty()) return call_error("\"name\" is empty", out);
    const json_member* args_m = find("arguments");
    if (args_m == nullptr && syntax_ == tool_call_syntax::llama3) args_m = find("parameters");
    std::string arguments = "{}";  // a call without arguments passes none
    if (args_m != nullptr) {
        if (args_m->value.front() != '{') {
            return call_error("(" + name + ") \"" + args_m->key + "\" must be a JSON object; got " +
                                  std::string(json_kind_name(args_m->value)),
                              out, name);
        }
        arguments = std::string(args_m->value);
    }
    tool_call_event e;
    e.type = tool_call_event::kind::call_complete;
    e.index = n_calls_++;
    e.name = std::move(name);
    e.arguments_json = std::move(arguments);
    out.push_back(std::move(e));
}

void tool_call_parser::flush_safe_text(std::vector<tool_call_event>& out) {
    const size_t n = complete_utf8_prefix(pending_);
    emit_text(std::string_view(pending_).substr(0, n), out);
    pending_.erase(0, n);
}

void tool_call_parser::feed(std::string_view chunk, std::vector<tool_call_event>& out) {
    feed_base_ = out.size();  // text merges only into events of this call
    if (syntax_ == tool_call_syntax::hermes) feed_hermes(chunk, out);
    else feed_llama3(chunk, out);
}

// Hermes. In state text, pending_ is [text not yet emitted][a partial "<tool_call>"]:
// tag_len_ bytes at its end are a proper prefix of the tag.
void tool_call_parser::feed_hermes(std::string_view chunk, std::vector<tool_call_event>& out) {
    for (const char c : chunk) {
        switch (state_) {
            case state::text: {
                pending_ += c;
                if (tag_len_ > 0 || c == '<') {
                    if (tag_len_ < k_open.size() && k_open[tag_len_] == c) {
                        ++tag_len_;
                    } else {
                        tag_len_ = c == '<' ? 1 : 0;  // '<' occurs only first in the tag
                    }
                    if (tag_len_ == k_open.size()) {
                        pending_.resize(pending_.size() - k_open.size());
                        emit_text(pending_, out);  // text before a call goes out whole
                        pending_.clear();
                        tag_len_ = 0;
                        state_ = state::call;
                        body_.clear();
                    }
                }
                break;
            }
            case state::call:
                body_ += c;
                if (c == '>' && body_.ends_with(k_close)) {
                    body_.resize(body_.size() - k_close.size());
                    finish_call(body_, out, false);
                    body_.clear();
                    state_ = state::text;
                } else if (body_.size() >= max_call_bytes_ + k_close.size()) {
                    call_error("longer than " + std::to_string(max_call_bytes_) + " bytes without a closing </tool_call>",
                               out);
                    body_.erase(0, body_.size() - (k_close.size() - 1));
                    state_ = state::skip_call;
                }
                break;
            case state::skip_call:
                body_ += c;
                if (c == '>' && body_.ends_with(k_close)) {
                    body_.clear();
                    state_ = state::text;
                } else if (body_.size() >= k_close.size()) {
                    body_.erase(0, 1);
                }
                break;
            default: TACHYON_ASSERT(false, "hermes parser in a llama3 state");
        }
    }
    if (state_ == state::text) {
        // Hold back a partial tag and a partial character.
        const size_t keep_from = pending_.size() - tag_len_;
        const size_t n = complete_utf8_prefix(std::string_view(pending_).substr(0, keep_from));
        emit_text(std::string_view(pending_).substr(0, n), out);
        pending_.erase(0, n);
    }
}

void tool_call_parser::feed_llama3(std::string_view chunk, std::vector<tool_call_event>& out) {
    auto start_call = [&] {
        pending_.clear();
        body_.assign(1, '{');
        depth_.reset();
        depth_.push('{');
        state_ = state::call;
    };
    for (const char c : chunk) {
        switch (state_) {
            case state::lead:
            case state::between:
                if (c == '{') {
                    start_call();
                } else if (is_ws(c) || (c == ';' && state_ == state::between)) {
                    pending_ += c;  // held: separators are dropped, leading blanks kept if text follows
                } else {
                    if (state_ == state::between) pending_.clear();
                    pending_ += c;
                    state_ = state::text;
                }
                break;
            case state::text: pending_ += c; break;
            case state::call:
                body_ += c;
                if (depth_.push(c)) {
                    state_ = state::between;
                    finish_call(body_, out, n_calls_ == 0);
                    body_.clear();
                } else if (body_.size() > max_call_bytes_) {
                    call_error("longer than " + std::to_string(max_call_bytes_) + " bytes", out);
                    body_.clear();
                    body_.shrink_to_fit();
                    state_ = state::skip_call;  // the rest of the turn is the overlong call
                }
                break;
            case state::skip_call: break;
        }
    }
    if (state_ == state::text) flush_safe_text(out);
}

void tool_call_parser::finish(std::vector<tool_call_event>& out) {
    feed_base_ = out.size();
    switch (state_) {
        case state::text:
        case state::lead: emit_text(pending_, out); break;
        case state::call:
            call_error(syntax_ == tool_call_syntax::hermes ? "unterminated: the turn ended before </tool_call>"
                                                           : "unterminated: the turn ended inside the JSON object",
                       out);
            break;
        case state::skip_call:
        case state::between: break;
    }
    pending_.clear();
    body_.clear();
    tag_len_ = 0;
    depth_.reset();
    state_ = syntax_ == tool_call_syntax::llama3 ? state::lead : state::text;
    n_calls_ = 0;
}

}  // namespace tachyon
