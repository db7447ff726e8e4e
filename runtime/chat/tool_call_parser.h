// Incremental tool-call parser over a model's output text, fed one token's
// text at a time (chunks split anywhere, even inside a UTF-8 character), so
// that the agent loop can dispatch a call the moment it is complete while
// decoding goes on (DESIGN.md "The agent loop", early_dispatch).
//
// Two syntaxes:
// - hermes: `<tool_call>\n{"name": "...", "arguments": {...}}\n</tool_call>`
//   blocks anywhere in the turn, any number of them, whitespace around the
//   JSON tolerated. Text outside blocks is plain text; a "<tool_" that may
//   still become "<tool_call>" is held back until it is known not to.
// - llama3: a turn whose content is `{"name": ..., "parameters": {...}}`
//   (or "arguments"), possibly several separated by ';' or newlines. A turn
//   that does not start with '{' is plain text; so is a leading object with
//   no "name" member (a final answer). Text after the calls is plain text.
//
// Events: text (only whole UTF-8 characters, except at finish()),
// call_complete with the raw "arguments" object text, call_error with a
// message written for the model. Every call, good or bad, takes the next
// index. Memory is bounded: a call past max_call_bytes is an error and the
// rest of it is skipped. Bad input never crashes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/json_scan.h"

namespace tachyon {

enum class tool_call_syntax { hermes, llama3 };

struct tool_call_event {
    enum class kind { text, call_complete, call_error };
    kind type = kind::text;
    std::string text;            // kind::text
    int index = -1;              // call events: 0-based position of the call in the turn
    std::string name;            // call_complete; call_error when the name was readable
    std::string arguments_json;  // call_complete: the arguments object as written
    std::string message;         // call_error: what was wrong, for the model to read
};

class tool_call_parser {
public:
    static constexpr size_t default_max_call_bytes = 64 * 1024;

    explicit tool_call_parser(tool_call_syntax syntax = tool_call_syntax::hermes,
                              size_t max_call_bytes = default_max_call_bytes);

    // Feeds the next piece of output; appends the events it completes.
    void feed(std::string_view chunk, std::vector<tool_call_event>& out);
    // End of the turn: flushes held-back text; an unterminated call is an
    // error. The parser is then ready for the next turn (indices restart at 0).
    void finish(std::vector<tool_call_event>& out);

    int n_calls() const { return n_calls_; }
    // True while inside a call (between <tool_call> and </tool_call>).
    bool in_call() const { return state_ == state::call || state_ == state::skip_call; }

private:
    enum class state {
        text,         // plain text; pending_ holds a possible tag start or partial character
        call,         // inside a call; body_ collects it
        skip_call,    // a call over the size limit: skipping to its end (hermes) or the turn's end (llama3)
        lead,         // llama3: whitespace before the first non-blank byte of the turn
        between,      // llama3: separators after a call
    };

    void feed_hermes(std::string_view chunk, std::vector<tool_call_event>& out);
    void feed_llama3(std::string_view chunk, std::vector<tool_call_event>& out);
    void emit_text(std::string_view text, std::vector<tool_call_event>& out);
    // Emits pending_ but a partial character at its end.
    void flush_safe_text(std::vector<tool_call_event>& out);
    // A whole call body (between the tags, or a whole llama3 object).
    void finish_call(std::string_view body, std::vector<tool_call_event>& out, bool llama3_text_if_no_name);
    void call_error(std::string message, std::vector<tool_call_event>& out, std::string name = {});

    tool_call_syntax syntax_;
    size_t max_call_bytes_;
    state state_;
    std::string pending_;  // text not yet emitted: [0, 11) bytes of a possible tag, or a partial character
    std::string body_;     // the call being read, at most max_call_bytes_ + a tag's length
    size_t tag_len_ = 0;        // hermes: bytes at the end of pending_ that match the start of "<tool_call>"
    json_depth_tracker depth_;  // llama3: where the current object ends
    int n_calls_ = 0;
    size_t feed_base_ = 0;  // out.size() when the current feed() began
};

}  // namespace tachyon
