// Incremental tool-call parser over a model's output text, fed one token's
// text at a time (chunks split anywhere, even inside a UTF-8 character), so
// that the agent loop can dispatch a call the moment it is complete while
// decoding goes on (DESIGN.md "The agent loop", early_dispatch).
//
// One reader per tool_call_syntax of a chat family (runtime/formats/):
// - hermes: `<tool_call>\n{"name": "...", "arguments": {...}}\n</tool_call>`
//   blocks anywhere in the turn, any number of them. A block may hold a JSON
//   list of calls too.
// - qwen3: hermes blocks, and a `<think>...</think>` block whose text is
//   reasoning (events of kind reasoning), never calls: a <tool_call> inside
//   a think block that is not closed is part of the reasoning.
// - phi4: `<|tool_call|>[{"name": ..., "arguments": ...}, ...]<|/tool_call|>`
//   (one object instead of the list is read too).
// - granite: `<|tool_call|>[{...}, ...]` up to the end of the list; the
//   calls go out one by one as each object of the list completes.
// - mistral: `[TOOL_CALLS][{"name": ..., "arguments": ..., "id": ...}, ...]`,
//   or `[TOOL_CALLS]name[ARGS]{...}` (with an optional `[CALL_ID]id` before
//   [ARGS]), each call out as soon as its object completes.
// - llama3: a turn whose content is `{"name": ..., "parameters": {...}}`
//   (or "arguments"), possibly several separated by ';' or newlines, maybe
//   after `<|python_tag|>`. A turn that does not start with '{' is plain
//   text; so is a leading object with no "name" member (a final answer).
//   Text after the calls is plain text.
// Text outside calls is plain text; bytes that may still become a marker are
// held back until they are known not to. Messy output the model clearly
// meant as a call is read: code fences around the JSON, whitespace anywhere
// around it, a block whose closing marker is missing at the end of the turn
// when its JSON is complete, a list missing its closing ']'.
//
// Events: text and reasoning (only whole UTF-8 characters, except at
// finish()), call_complete with the raw "arguments" object text, call_error
// with a message written for the model. Every call, good or bad, takes the
// next index. Memory is bounded: a call past max_call_bytes is an error and
// the rest of it is skipped. Bad input never crashes, and the events do not
// depend on how the text was cut into chunks.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/json_scan.h"
#include "runtime/formats/chat_format.h"

namespace tachyon {

struct tool_call_event {
    enum class kind { text, reasoning, call_complete, call_error };
    kind type = kind::text;
    std::string text;            // kind::text, kind::reasoning
    int index = -1;              // call events: 0-based position of the call in the turn
    std::string name;            // call_complete; call_error when the name was readable
    std::string arguments_json;  // call_complete: the arguments object as written
    std::string id;              // call_complete: the call id the model wrote (Mistral), else empty
    std::string message;         // call_error: what was wrong, for the model to read
};

class tool_call_parser {
public:
    static constexpr size_t default_max_call_bytes = 64 * 1024;

    // tool_call_syntax::none reads the turn as plain text.
    explicit tool_call_parser(tool_call_syntax syntax = tool_call_syntax::hermes,
                              size_t max_call_bytes = default_max_call_bytes);

    // Feeds the next piece of output; appends the events it completes.
    void feed(std::string_view chunk, std::vector<tool_call_event>& out);
    // End of the turn: flushes held-back text; an unterminated call is an
    // error. The parser is then ready for the next turn (indices restart at 0).
    void finish(std::vector<tool_call_event>& out);

    // The reader's syntax: mistral for the Mistral families' named forms too.
    tool_call_syntax syntax() const { return syntax_; }
    int n_calls() const { return n_calls_; }
    // True while inside a call region (after its opening marker).
    bool in_call() const { return state_ == state::block || state_ == state::list || state_ == state::skip_call; }
    // True while inside a think block (qwen3).
    bool in_reasoning() const { return in_think_; }

private:
    enum class state {
        text,       // plain text (or reasoning); pending_ holds a possible marker start or a partial character
        block,      // hermes / phi4: a call region up to its closing marker; body_ collects it
        list,       // granite / mistral: calls read one by one, up to the end of the list
        skip_call,  // a call over the size limit or a broken list: skipping to its end
        lead,       // llama3: before the first non-blank byte of the turn (or after <|python_tag|> / a fence line)
        lead_mark,  // llama3: reading what may be <|python_tag|> or a code fence line; pending_ holds it
        call,       // llama3: inside a call object
        between,    // llama3: separators after a call
    };
    // Where the list reader (state::list) is.
    enum class list_step : unsigned char {
        start,      // before the first byte: '[' (a list), '{' (one call), a name (mistral), a fence
        fence,      // a code fence line: skipped to its newline
        items,      // inside the list, between items
        object,     // inside one call object; body_ collects it
        name,       // mistral: a call name before [ARGS] / [CALL_ID]
        tag,        // mistral: inside "[ARGS]" or "[CALL_ID]"
        call_id,    // mistral: the id after [CALL_ID]
        args_lead,  // mistral: blanks after [ARGS] before '{'
    };

    void feed_marked(std::string_view chunk, std::vector<tool_call_event>& out);
    void feed_llama3(std::string_view chunk, std::vector<tool_call_event>& out);
    void text_byte(char c, std::vector<tool_call_event>& out);
    void block_byte(char c, std::vector<tool_call_event>& out);
    void list_byte(char c, std::vector<tool_call_event>& out);
    void end_list(std::vector<tool_call_event>& out);
    void emit_text(std::string_view text, std::vector<tool_call_event>& out);
    void emit(tool_call_event::kind k, std::string_view text, std::vector<tool_call_event>& out);
    // Emits pending_ but a partial character and `hold` bytes at its end.
    void flush_safe_text(std::vector<tool_call_event>& out, size_t hold = 0);
    // A whole block body: one call object or a list of them, maybe fenced.
    void finish_block(std::string_view body, std::vector<tool_call_event>& out);
    // A whole call object. llama3_text_if_no_name: a leading llama3 object
    // without "name" is a final answer, not a call.
    void finish_call(std::string_view body, std::vector<tool_call_event>& out, bool llama3_text_if_no_name = false);
    // mistral: `name[ARGS]{...}`, the arguments object as written.
    void finish_named_call(std::string_view args, std::vector<tool_call_event>& out);
    void call_error(std::string message, std::vector<tool_call_event>& out, std::string name = {});
    std::string_view call_shape() const;

    tool_call_syntax syntax_;
    size_t max_call_bytes_;
    state state_;
    std::string pending_;  // text not yet emitted: a possible marker's start, or a partial character
    std::string body_;     // the call being read, at most max_call_bytes_ + a marker's length
    json_depth_tracker depth_;  // where the current object ends (llama3, lists)
    list_step list_ = list_step::start;
    bool in_list_ = false;      // list reader: inside '[' ... ']' (else one object)
    std::string name_, id_;     // mistral: the name and id of a `name[ARGS]` call
    bool in_think_ = false;     // qwen3: inside <think> ... </think>
    bool strip_lead_ = false;   // qwen3: blanks right after <think> / </think> are dropped
    int n_calls_ = 0;
    size_t feed_base_ = 0;  // out.size() when the current feed() began
};

}  // namespace tachyon
