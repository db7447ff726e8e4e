// tachyon C++ SDK: what happens during an agent run, as it happens. Pass an
// event_callback in run_options to see each model turn start, its text
// stream, its end, each tool call start and end, and each verification of
// the final answer. Times are milliseconds since the run started.
//
// Contract: the callback is called on the runtime's event loop, one event at
// a time and in order for a run; it must return quickly and must not block
// on the runtime (no runtime::run() or run_handle::wait() inside it).
#pragma once

#include <functional>
#include <string>
#include <variant>

namespace tachyon::sdk {

// One model turn, as timed by the runtime.
struct turn_info {
    int step = 0;              // 1, 2, ...
    int prefill_tokens = 0;    // prompt tokens the turn appended
    int reused_tokens = 0;     // of those, tokens whose KV was already there
    int generated_tokens = 0;
    double start_ms = 0, first_token_ms = 0, end_ms = 0;
    std::string text;          // what the model wrote (tool calls included)
};

// One tool call, as the model wrote it and as it ended.
struct tool_call_info {
    int step = 0;            // the turn that wrote the call (verify calls: the answer's turn)
    std::string call_id;
    std::string name;
    std::string arguments;   // JSON object
    double start_ms = 0, end_ms = 0;
    bool ok = false;         // tool_end: the tool succeeded
    bool early = false;      // started while the model was still decoding
    std::string result;      // tool_end: what the model reads (the error text when !ok)
};

// A model turn begins.
struct turn_start_event {
    int step = 0;
};

// Text the model generated, streamed piece by piece (complete UTF-8).
struct text_event {
    std::string text;
};

// A model turn ended.
struct turn_end_event {
    turn_info turn;
};

// A tool call started (possibly while the model is still decoding).
struct tool_start_event {
    tool_call_info call;
};

// A tool call ended.
struct tool_end_event {
    tool_call_info call;
};

// The final answer went through the agent's checks.
struct verify_event {
    int attempt = 0;      // 0 for the first answer, 1 for the next ... (as the journal numbers them)
    bool ok = false;
    std::string message;  // why it failed, for the model (empty when ok)
};

// Any run event; use std::get_if or std::visit.
using event = std::variant<turn_start_event, text_event, turn_end_event, tool_start_event, tool_end_event, verify_event>;

// Receives a run's events (see the contract above).
using event_callback = std::function<void(const event&)>;

}  // namespace tachyon::sdk
