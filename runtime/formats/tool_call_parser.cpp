#include "runtime/formats/tool_call_parser.h"

#include <algorithm>
#include <span>

#include "base/assert.h"

namespace tachyon {

namespace {

constexpr std::string_view k_hermes_open = "<tool_call>";
constexpr std::string_view k_hermes_close = "</tool_call>";
constexpr std::string_view k_think_open = "<think>";
constexpr std::string_view k_think_close = "</think>";
constexpr std::string_view k_phi_open = "<|tool_call|>";  // Phi-4 and Granite
constexpr std::string_view k_phi_close = "<|/tool_call|>";
constexpr std::string_view k_mistral_open = "[TOOL_CALLS]";
constexpr std::string_view k_mistral_args = "[ARGS]";
constexpr std::string_view k_mistral_call_id = "[CALL_ID]";
constexpr std::string_view k_python_tag = "<|python_tag|>";

constexpr size_t k_max_name = 256;   // a mistral call name or id
constexpr size_t k_max_fence = 32;   // "```json\n"

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
    return s;
}

// A Markdown code fence around the JSON ("```json\n...\n```") removed.
std::string_view strip_fence(std::string_view s) {
    s = trim(s);
    if (!s.starts_with("```")) return s;
    const size_t nl = s.find('\n');
    s.remove_prefix(nl == std::string_view::npos ? 3 : nl + 1);
    s = trim(s);
    if (s.ends_with("```")) s.remove_suffix(3);
    return trim(s);
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

// The longest suffix of `s` that is a proper prefix of `marker`.
size_t partial_marker(std::string_view s, std::string_view marker) {
    for (size_t k = std::min(s.size(), marker.size() - 1); k > 0; --k)
        if (s.substr(s.size() - k) == marker.substr(0, k)) return k;
    return 0;
}

// A few bytes around `offset`, so the model sees where its JSON broke.
std::string excerpt_at(std::string_view s, size_t offset) {
    const size_t from = offset > 16 ? offset - 16 : 0;
    std::string e(s.substr(from, std::min<size_t>(32, s.size() - from)));
    for (char& c : e)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    return e;
}

// The items of a JSON list already checked to be valid, trimmed.
std::vector<std::string_view> list_items(std::string_view list) {
    std::vector<std::string_view> items;
    int depth = 0;
    bool in_string = false, escape = false;
    size_t start = 1;
    for (size_t i = 0; i < list.size(); ++i) {
        const char c = list[i];
        if (in_string) {
            if (escape) escape = false;
            else if (c == '\\') escape = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '[' || c == '{') ++depth;
        else if (c == ']' || c == '}') {
            if (--depth == 0) {
                const std::string_view item = trim(list.substr(start, i - start));
                if (!item.empty()) items.push_back(item);
                break;
            }
        } else if (c == ',' && depth == 1) {
            items.push_back(trim(list.substr(start, i - start)));
            start = i + 1;
        }
    }
    return items;
}

}  // namespace

// The Mistral families' named calls are read by the one Mistral reader
// (both of its forms).
tool_call_parser::tool_call_parser(tool_call_syntax syntax, size_t max_call_bytes)
    : syntax_(syntax == tool_call_syntax::mistral_named || syntax == tool_call_syntax::mistral_named_id
                  ? tool_call_syntax::mistral
                  : syntax),
      max_call_bytes_(std::max<size_t>(max_call_bytes, 16)),
      state_(syntax_ == tool_call_syntax::llama3 ? state::lead : state::text) {}

std::string_view tool_call_parser::call_shape() const {
    return syntax_ == tool_call_syntax::llama3 ? "{\"name\": <function-name>, \"parameters\": <args-json-object>}"
                                               : "{\"name\": <function-name>, \"arguments\": <args-json-object>}";
}

void tool_call_parser::emit(tool_call_event::kind k, std::string_view text, std::vector<tool_call_event>& out) {
    if (text.empty()) return;
    if (out.size() > feed_base_ && out.back().type == k) {
        out.back().text.append(text);
        return;
    }
    tool_call_event e;
    e.type = k;
    e.text = std::string(text);
    out.push_back(std::move(e));
}

void tool_call_parser::emit_text(std::string_view text, std::vector<tool_call_event>& out) {
    emit(in_think_ ? tool_call_event::kind::reasoning : tool_call_event::kind::text, text, out);
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
    const std::string_view body = strip_fence(raw);
    const std::string shape(call_shape());
    if (body.empty()) return call_error("empty; expected " + shape, out);
    std::vector<json_member> members;
    if (auto err = check_json(body, &members)) {
        return call_error("malformed JSON at offset " + std::to_string(err->offset) + " (near '" +
                              excerpt_at(body, err->offset) + "'): " + err->what,
                          out);
    }
    if (body.front() != '{')
        return call_error("expected a JSON object " + shape + "; got " + std::string(json_kind_name(body)), out);
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
        return call_error("missing \"name\"; expected " + shape, out);
    }
    std::string name;
    if (name_m->value.empty() || name_m->value.front() != '"' || !unescape_json_string(name_m->value, name))
        return call_error("\"name\" must be a string; got " + std::string(json_kind_name(name_m->value)), out);
    if (name.empty()) return call_error("\"name\" is empty", out);
    const json_member* args_m = find("arguments");
    if (args_m == nullptr) args_m = find("parameters");  // Llama 3's key; models mix them up
    std::string arguments = "{}";  // a call without arguments passes none
    if (args_m != nullptr) {
        std::string unquoted;
        if (args_m->value.front() == '{') {
            arguments = std::string(args_m->value);
        } else if (args_m->value.front() == '"' && unescape_json_string(args_m->value, unquoted) &&
                   trim(unquoted).starts_with('{') && !check_json(unquoted)) {
            // The arguments as a JSON string holding the object (the OpenAI wire form).
            arguments = std::string(trim(unquoted));
        } else {
            return call_error("(" + name + ") \"" + args_m->key + "\" must be a JSON object; got " +
                                  std::string(json_kind_name(args_m->value)),
                              out, name);
        }
    }
    tool_call_event e;
    e.type = tool_call_event::kind::call_complete;
    e.index = n_calls_++;
    e.name = std::move(name);
    e.arguments_json = std::move(arguments);
    if (const json_member* id_m = find("id"); id_m != nullptr && id_m->value.front() == '"')
        unescape_json_string(id_m->value, e.id);
    out.push_back(std::move(e));
}

void tool_call_parser::finish_named_call(std::string_view args, std::vector<tool_call_event>& out) {
    std::string name = std::move(name_), id = std::move(id_);
    name_.clear();
    id_.clear();
    if (auto err = check_json(args)) {
        return call_error("(" + name + ") malformed JSON arguments at offset " + std::to_string(err->offset) +
                              " (near '" + excerpt_at(args, err->offset) + "'): " + err->what,
                          out, name);
    }
    tool_call_event e;
    e.type = tool_call_event::kind::call_complete;
    e.index = n_calls_++;
    e.name = std::move(name);
    e.arguments_json = std::string(args);
    e.id = std::move(id);
    out.push_back(std::move(e));
}

void tool_call_parser::finish_block(std::string_view raw, std::vector<tool_call_event>& out) {
    const std::string_view body = strip_fence(raw);
    if (body.empty() || body.front() != '[') return finish_call(body, out);
    if (auto err = check_json(body)) {
        return call_error("malformed JSON at offset " + std::to_string(err->offset) + " (near '" +
                              excerpt_at(body, err->offset) + "'): " + err->what,
                          out);
    }
    const auto items = list_items(body);
    if (items.empty()) return call_error("an empty list; expected [" + std::string(call_shape()) + ", ...]", out);
    for (std::string_view item : items) finish_call(item, out);
}

void tool_call_parser::flush_safe_text(std::vector<tool_call_event>& out, size_t hold) {
    const size_t n = complete_utf8_prefix(std::string_view(pending_).substr(0, pending_.size() - hold));
    emit_text(std::string_view(pending_).substr(0, n), out);
    pending_.erase(0, n);
}

void tool_call_parser::feed(std::string_view chunk, std::vector<tool_call_event>& out) {
    feed_base_ = out.size();  // text merges only into events of this call
    if (syntax_ == tool_call_syntax::llama3) feed_llama3(chunk, out);
    else feed_marked(chunk, out);
}

namespace {

// The markers that change state from plain text, by syntax.
std::span<const std::string_view> text_markers(tool_call_syntax syntax, bool in_think) {
    static constexpr std::string_view hermes[] = {k_hermes_open};
    static constexpr std::string_view qwen3[] = {k_hermes_open, k_think_open};
    static constexpr std::string_view thinking[] = {k_think_close};
    static constexpr std::string_view phi[] = {k_phi_open};
    static constexpr std::string_view mistral[] = {k_mistral_open};
    switch (syntax) {
        case tool_call_syntax::hermes: return hermes;
        case tool_call_syntax::qwen3: return in_think ? std::span<const std::string_view>(thinking) : qwen3;
        case tool_call_syntax::phi4:
        case tool_call_syntax::granite: return phi;
        case tool_call_syntax::mistral:
        case tool_call_syntax::mistral_named:
        case tool_call_syntax::mistral_named_id: return mistral;
        case tool_call_syntax::llama3:
        case tool_call_syntax::none: break;
    }
    return {};
}

}  // namespace

void tool_call_parser::text_byte(char c, std::vector<tool_call_event>& out) {
    if (strip_lead_) {
        if (is_ws(c)) return;
        strip_lead_ = false;
    }
    pending_ += c;
    for (std::string_view m : text_markers(syntax_, in_think_)) {
        if (c != m.back() || !std::string_view(pending_).ends_with(m)) continue;
        pending_.resize(pending_.size() - m.size());
        emit_text(pending_, out);  // text before a marker goes out whole
        pending_.clear();
        if (m == k_think_open || m == k_think_close) {
            in_think_ = m == k_think_open;
            strip_lead_ = true;
        } else if (m == k_hermes_open || (m == k_phi_open && syntax_ == tool_call_syntax::phi4)) {
            state_ = state::block;
            body_.clear();
        } else {
            state_ = state::list;
            list_ = list_step::start;
            in_list_ = false;
            body_.clear();
        }
        return;
    }
}

void tool_call_parser::block_byte(char c, std::vector<tool_call_event>& out) {
    const std::string_view close = syntax_ == tool_call_syntax::phi4 ? k_phi_close : k_hermes_close;
    body_ += c;
    if (c == '>' && std::string_view(body_).ends_with(close)) {
        body_.resize(body_.size() - close.size());
        finish_block(body_, out);
        body_.clear();
        state_ = state::text;
    } else if (body_.size() >= max_call_bytes_ + close.size()) {
        call_error("longer than " + std::to_string(max_call_bytes_) + " bytes without a closing " + std::string(close), out);
        body_.erase(0, body_.size() - (close.size() - 1));
        state_ = state::skip_call;
    }
}

void tool_call_parser::end_list(std::vector<tool_call_event>&) {
    state_ = state::text;
    list_ = list_step::start;
    in_list_ = false;
    body_.clear();
}

void tool_call_parser::list_byte(char c, std::vector<tool_call_event>& out) {
    const std::string opening(syntax_ == tool_call_syntax::mistral ? k_mistral_open : k_phi_open);
    auto fail = [&](std::string message) {
        call_error(std::move(message), out, name_);
        name_.clear();
        id_.clear();
        body_.clear();
        state_ = state::skip_call;  // the rest of the turn is the broken call list
    };
    auto begin_object = [&] {
        body_.assign(1, '{');
        depth_.reset();
        depth_.push('{');
        list_ = list_step::object;
    };
    switch (list_) {
        case list_step::start:
            if (is_ws(c)) return;
            if (c == '`') {
                body_.assign(1, c);
                list_ = list_step::fence;
            } else if (c == '[') {
                in_list_ = true;
                list_ = list_step::items;
            } else if (c == '{') {
                begin_object();
            } else if (syntax_ == tool_call_syntax::mistral && is_name_char(c)) {
                name_.assign(1, c);
                list_ = list_step::name;
            } else {
                fail("expected a JSON list of calls [" + std::string(call_shape()) + ", ...] after " + opening +
                     "; got '" + std::string(1, c) + "'");
            }
            return;
        case list_step::fence:
            body_ += c;
            if (c == '\n') {
                list_ = list_step::start;
                body_.clear();
            } else if (body_.size() > k_max_fence) {
                fail("expected a JSON list of calls after " + opening + "; got a code fence line that does not end");
            }
            return;
        case list_step::items:
            if (is_ws(c) || c == ',') return;
            if (c == '{') return begin_object();
            if (c == ']') return end_list(out);
            return fail("expected a call object " + std::string(call_shape()) + " in the list after " + opening +
                        "; got '" + std::string(1, c) + "'");
        case list_step::object:
            body_ += c;
            if (depth_.push(c)) {
                if (name_.empty()) finish_call(body_, out);
                else finish_named_call(body_, out);
                body_.clear();
                if (in_list_) list_ = list_step::items;
                else end_list(out);
            } else if (body_.size() > max_call_bytes_) {
                fail("longer than " + std::to_string(max_call_bytes_) + " bytes");
            }
            return;
        case list_step::name:
            if (c == '[') {
                body_.assign(1, c);
                list_ = list_step::tag;
            } else if (is_name_char(c) && name_.size() < k_max_name) {
                name_ += c;
            } else {
                fail("(" + name_ + ") expected [ARGS] and the arguments object after the tool name");
            }
            return;
        case list_step::tag:
            body_ += c;
            if (body_ == k_mistral_args) {
                body_.clear();
                list_ = list_step::args_lead;
            } else if (body_ == k_mistral_call_id && id_.empty()) {
                body_.clear();
                list_ = list_step::call_id;
            } else if (!k_mistral_args.starts_with(body_) && !k_mistral_call_id.starts_with(body_)) {
                fail("(" + name_ + ") expected [ARGS] and the arguments object after the tool name");
            }
            return;
        case list_step::call_id:
            if (c == '[' && !id_.empty()) {
                body_.assign(1, c);
                list_ = list_step::tag;
            } else if (is_name_char(c) && id_.size() < k_max_name) {
                id_ += c;
            } else {
                fail("(" + name_ + ") expected a call id of letters and digits after [CALL_ID]");
            }
            return;
        case list_step::args_lead:
            if (is_ws(c)) return;
            if (c == '{') return begin_object();
            return fail("(" + name_ + ") expected the arguments object after [ARGS]; got '" + std::string(1, c) + "'");
    }
}

void tool_call_parser::feed_marked(std::string_view chunk, std::vector<tool_call_event>& out) {
    for (const char c : chunk) {
        switch (state_) {
            case state::text: text_byte(c, out); break;
            case state::block: block_byte(c, out); break;
            case state::list: list_byte(c, out); break;
            case state::skip_call: {
                if (syntax_ != tool_call_syntax::hermes && syntax_ != tool_call_syntax::qwen3 &&
                    syntax_ != tool_call_syntax::phi4)
                    break;  // a list: skipped to the end of the turn
                const std::string_view close = syntax_ == tool_call_syntax::phi4 ? k_phi_close : k_hermes_close;
                body_ += c;
                if (c == '>' && std::string_view(body_).ends_with(close)) {
                    body_.clear();
                    state_ = state::text;
                } else if (body_.size() >= close.size()) {
                    body_.erase(0, 1);
                }
                break;
            }
            default: TACHYON_ASSERT(false, "marker parser in a llama3 state");
        }
    }
    if (state_ == state::text) {
        // Hold back a partial marker and a partial character.
        size_t hold = 0;
        for (std::string_view m : text_markers(syntax_, in_think_)) hold = std::max(hold, partial_marker(pending_, m));
        flush_safe_text(out, hold);
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
    auto to_text = [&] {
        pending_ += body_;
        body_.clear();
        state_ = state::text;
    };
    for (const char c : chunk) {
        switch (state_) {
            case state::lead:
            case state::between:
                if (c == '{') {
                    start_call();
                } else if (is_ws(c) || ((c == ';' || c == '`') && state_ == state::between)) {
                    pending_ += c;  // held: separators are dropped, leading blanks kept if text follows
                } else if (state_ == state::lead && (c == '<' || c == '`')) {
                    body_.assign(1, c);  // maybe <|python_tag|> or a code fence line
                    state_ = state::lead_mark;
                } else {
                    if (state_ == state::between) pending_.clear();
                    pending_ += c;
                    state_ = state::text;
                }
                break;
            case state::lead_mark:
                body_ += c;
                if (body_.front() == '<') {
                    if (body_ == k_python_tag) {
                        body_.clear();
                        pending_.clear();  // the marker says a call follows; it is not text
                        state_ = state::lead;
                    } else if (!k_python_tag.starts_with(body_)) {
                        to_text();
                    }
                } else if (c == '\n' && body_.size() > 3 && body_.starts_with("```")) {
                    pending_ += body_;  // the fence goes out as text unless a call follows
                    body_.clear();
                    state_ = state::lead;
                } else if ((body_.size() <= 3 && c != '`') ||
                           (body_.size() > 3 && !is_name_char(c)) || body_.size() > k_max_fence) {
                    to_text();
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
            default: TACHYON_ASSERT(false, "llama3 parser in a marker state");
        }
    }
    if (state_ == state::text) flush_safe_text(out);
}

void tool_call_parser::finish(std::vector<tool_call_event>& out) {
    feed_base_ = out.size();
    switch (state_) {
        case state::text:
        case state::lead: emit_text(pending_, out); break;
        case state::lead_mark:
            emit_text(pending_ + body_, out);
            break;
        case state::block: {
            // The closing marker missing at the end of the turn: a complete
            // call is still the call the model meant.
            const std::string_view close = syntax_ == tool_call_syntax::phi4 ? k_phi_close : k_hermes_close;
            std::string_view body = body_;
            body.remove_suffix(partial_marker(body, close));
            const std::string_view json = strip_fence(body);
            if (!json.empty() && !check_json(json)) {
                finish_block(json, out);
            } else {
                call_error("unterminated: the turn ended before " + std::string(close), out);
            }
            break;
        }
        case state::list:
            if (list_ == list_step::object || list_ == list_step::name || list_ == list_step::tag ||
                list_ == list_step::call_id || list_ == list_step::args_lead) {
                call_error("unterminated: the turn ended inside the call", out, name_);
            } else if (!in_list_) {
                call_error("empty: the turn ended right after " +
                               std::string(syntax_ == tool_call_syntax::mistral ? k_mistral_open : k_phi_open),
                           out);
            }
            break;  // a list missing only its ']' is complete
        case state::call: call_error("unterminated: the turn ended inside the JSON object", out); break;
        case state::skip_call:
        case state::between: break;
    }
    pending_.clear();
    body_.clear();
    name_.clear();
    id_.clear();
    depth_.reset();
    list_ = list_step::start;
    in_list_ = false;
    in_think_ = false;
    strip_lead_ = false;
    state_ = syntax_ == tool_call_syntax::llama3 ? state::lead : state::text;
    n_calls_ = 0;
}

}  // namespace tachyon
