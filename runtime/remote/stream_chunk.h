// The pieces of a streamed chat completion (object chat.completion.chunk):
// content text, tool-call fragments, the finish reason and the usage, read
// from one SSE event's JSON; and the assembly of tool calls from their
// fragments. Servers differ in how they key fragments: OpenAI, vLLM and
// SGLang send "index" on every fragment and "id" on the first; some send
// "id" on every fragment and no index. A fragment is keyed by its index,
// else by its id, else it continues the last call. A call is complete the
// moment its arguments text closes its top-level JSON object, so the agent
// loop can dispatch it while the stream goes on.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "runtime/common/json_scan.h"

namespace tachyon::remote {

struct tool_fragment {
    int index = -1;          // -1: not given
    std::string id;          // empty: not given
    std::string name;        // empty: not given (later fragments)
    std::string arguments;   // a piece of the arguments text
};

struct stream_usage {
    int prompt_tokens = 0;
    int completion_tokens = 0;
    int cached_tokens = 0;  // prompt_tokens_details.cached_tokens where the server reports it
};

struct stream_chunk {
    std::string content;
    std::vector<tool_fragment> tools;
    std::string finish_reason;  // empty: not the last chunk
    std::optional<stream_usage> usage;
    bool done = false;  // the "[DONE]" sentinel
};

// One event's data. Errors: JSON that does not parse, a chunk of the wrong
// shape, an error object the server streams instead of a chunk (its
// message quoted); each names what was expected and quotes the first bytes.
result<stream_chunk> parse_chunk(std::string_view data);

struct assembled_call {
    int index = 0;  // the call's position in the turn, in order of first fragment
    std::string id;
    std::string name;
    std::string arguments_json;
};

class tool_call_assembler {
public:
    static constexpr size_t max_arguments_bytes = 64 * 1024;

    // Adds a fragment; appends the call it completes (arguments form one
    // whole JSON object) to `complete`. A call over max_arguments_bytes is
    // reported by finish() as an error and its later fragments dropped.
    void add(const tool_fragment& f, std::vector<assembled_call>& complete);
    // End of the stream: calls whose arguments never closed, in order:
    // complete ones are returned through `complete` when their text is an
    // empty object (no arguments sent), the rest as (index, name, message).
    struct broken_call {
        int index = 0;
        std::string name;
        std::string message;
    };
    void finish(std::vector<assembled_call>& complete, std::vector<broken_call>& broken);

    // Every call seen, in index order (the assistant message's tool_calls).
    const std::vector<assembled_call>& calls() const { return calls_; }
    int n_calls() const { return static_cast<int>(calls_.size()); }

private:
    struct open_call {
        int key_index = -1;
        std::string key_id;
        json_depth_tracker depth;
        bool started = false;  // a non-blank byte of the arguments seen
        bool done = false;
        bool too_long = false;
    };
    size_t find_or_open(const tool_fragment& f);

    std::vector<assembled_call> calls_;
    std::vector<open_call> open_;  // parallel to calls_
};

}  // namespace tachyon::remote
