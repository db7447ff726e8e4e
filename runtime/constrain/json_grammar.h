// The grammar of a constrained region, compiled from JSON schemas, and the
// byte-level automaton that walks it (DESIGN.md: constrained tool calls,
// grounded arguments).
//
// Two regions:
// - a tool call, right after the family's trigger, in the family's syntax;
//   Hermes and Qwen3 after "<tool_call>":
//   `\n{"name": "<tool>", "arguments": <object valid for that tool>}\n</tool_call>`;
//   Llama 3 after `{"name"`: `: "<tool>", "parameters": <object>}`;
//   Mistral Nemo after "[TOOL_CALLS]":
//   `[{"name": "<tool>", "arguments": <object>, "id": "<9 alphanumerics>"}, ...]`;
//   Mistral Small 3.2 `<tool>[CALL_ID]<9 alphanumerics>[ARGS]<object>`,
//   Devstral and Ministral 3 `<tool>[ARGS]<object>` (one region per call,
//   each after its own "[TOOL_CALLS]"); Granite after "<|tool_call|>":
//   `[{"name": "<tool>", "arguments": <object>}, ...]`; Phi-4 the same list
//   then "<|/tool_call|>" (json_grammar_calls.cpp: one row per family);
// - a final answer: one JSON value valid for the answer schema.
// The text is fixed to the training data's style: ", " and ": " separators,
// no other whitespace. Objects with declared properties take only those keys
// (any order, no duplicates; '}' only once the required keys are written);
// enums and consts are their exact JSON texts; integers respect minimum and
// maximum; strings are escaped JSON, valid UTF-8, within
// minLength/maxLength, never holding "<tool_call>" or "</tool_call>" raw
// (the tool-call parser would cut there); a string marked "x-grounded" is one of the run's
// candidate values for its path (when there are none, any string), narrowed by
// "x-grounded-with" to those seen on a line with the value already chosen for
// the named sibling (one such anchor per object); numbers
// respect minimum/maximum digit by digit (bounded numbers take no exponent
// and at most 9 fraction digits); in a "uniqueItems" array, an item chosen
// from a list (enum, grounded values) cannot repeat an earlier item's choice
// among the list's first 64 candidates; once every candidate is taken, the
// array closes (also below minItems: only grounded lists can be that
// short; the validator reports it). Not enforced while decoding (the
// validator checks it after): "pattern", uniqueItems beyond that.
//
// Every state the automaton reaches keeps a way to complete the region, for
// a schema json_schema::unsatisfiable() accepts: a byte is accepted only
// where the value it starts or continues can still be finished (numbers
// within their bounds, keys and items with room on the stack, items with a
// candidate left). A schema that skipped that check (an empty enum, say) may
// leave no byte to accept, but never a read out of bounds.
//
// The automaton is a stack of small frames, copied by value: the mask walk
// copies it once per trie node it visits, so a frame is 32 bytes and only
// the live part of the stack is copied.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "runtime/constrain/json_schema.h"
#include "runtime/formats/chat_format.h"

namespace tachyon {

struct grammar_tool {
    std::string name;
    std::shared_ptr<const json_schema> schema;  // null: any object
};

// Quotes `s` as a JSON string literal (", \, control characters escaped).
std::string json_quote(std::string_view s);

class json_grammar {
public:
    // Compiles the tools (for the tool-call region) and an optional answer
    // schema, with the grounded candidates of this point of the run.
    // Errors: an object with more than 64 declared properties, more than 64 tools.
    // `syntax`: how the chat family writes a call (the region's literals and
    // the trigger that opens it, chat_format.h).
    static result<std::shared_ptr<const json_grammar>> build(std::vector<grammar_tool> tools,
                                                             std::shared_ptr<const json_schema> answer,
                                                             const grounded_values& grounding,
                                                             tool_call_syntax syntax = tool_call_syntax::hermes);

    bool has_tools() const { return !tools_.empty(); }
    bool has_answer() const { return answer_root_ >= 0; }
    tool_call_syntax syntax() const { return syntax_; }
    // The text after which a tool-call region starts ("<tool_call>", "[TOOL_CALLS]", ...).
    std::string_view call_trigger() const { return trigger_; }

private:
    friend class json_automaton;

    // A sorted list of alternatives (enum texts, grounded values, keys, tool
    // names); candidates sharing a prefix are contiguous.
    struct choice_list {
        std::vector<std::string> texts;   // [n] sorted, distinct
        std::vector<uint8_t> payload;     // [n] property or tool index of each text
    };
    struct gnode {
        const schema_node* s = nullptr;
        int32_t first_child = 0;       // global index of the schema's node 0 (children are offset by it)
        int32_t keys = -1;             // choice list of quoted declared keys
        int32_t values = -1;           // choice list of whole JSON values (enum, const, grounded)
        uint64_t required_mask = 0;    // bits of properties that must appear
        uint64_t key_mask = 0;         // bits of the properties the key list offers (a repeated name once)
        int32_t anchor = -1;           // object: property whose chosen value narrows its siblings' values
        int32_t anchored = -1;         // grounded string: row of anchored_ narrowing `values` by the anchor's choice
        int32_t child(int local) const { return first_child + local; }
    };

    result<int32_t> add_schema(const json_schema& schema, const grounded_values& grounding);
    int32_t add_list(std::vector<std::pair<std::string, uint8_t>> items);
    status add_anchors(int32_t base, size_t n_nodes, const grounded_values& grounding);
    int32_t add_literal(std::string text);
    // The literals of the family's call region (json_grammar_calls.cpp).
    void add_call_region(tool_call_syntax syntax);

    std::vector<gnode> nodes_;          // [n_nodes] every schema's nodes, then the "any" node
    std::vector<choice_list> lists_;
    // [n_rows][candidates of the anchor's list] the choice list of values seen
    // with that anchor candidate, -1 where the full list applies
    std::vector<std::vector<int32_t>> anchored_;
    std::vector<std::string> literals_;
    std::vector<int32_t> tools_;        // [n_tools] root node of each tool's arguments
    int32_t tool_names_ = -1;           // choice list of quoted tool names
    int32_t answer_root_ = -1;
    int32_t any_node_ = -1;
    schema_node any_schema_;            // types any: values of untyped members and items
    std::vector<std::shared_ptr<const json_schema>> owned_;  // the schemas nodes_ points into
    int32_t lit_call_open_ = -1, lit_call_args_ = -1, lit_call_close_ = -1, lit_colon_ = -1;
    // A list of calls (Mistral Nemo, Phi-4, Granite): after an item's
    // closing, ", " and the next item's opening (lit_call_next_), or ']' and
    // lit_call_end_.
    bool call_list_ = false;
    int32_t lit_call_next_ = -1, lit_call_end_ = -1;
    // The call's id (Mistral): lit_call_id_ then 9 alphanumerics, before the
    // arguments' literal (call_id_first_) or after the arguments; -1: none.
    int32_t lit_call_id_ = -1;
    bool call_id_first_ = false;
    // Tool names written bare (`name[ARGS]`), not as JSON strings.
    bool bare_names_ = false;
    tool_call_syntax syntax_ = tool_call_syntax::hermes;
    std::string trigger_;
    int32_t lit_true_ = -1, lit_false_ = -1, lit_null_ = -1;
};

// Where the automaton is inside a region. Cheap to copy (copy_from copies
// only the live frames).
class json_automaton {
public:
    // Room for the deepest schema json_schema accepts, with the call frame
    // and a pending literal above it: a declared structure always fits, and
    // only free values (untyped items, additional properties) nest until
    // the stack is full, where they close instead of nesting further.
    static constexpr int max_depth = json_schema::max_depth + 8;

    json_automaton() = default;
    explicit json_automaton(const json_grammar* g) : g_(g) {}

    void start_tool_call();  // right after "<tool_call>"
    void start_answer();     // at the turn's first byte

    // Feeds one byte; false if it cannot continue the region (the state is
    // then unspecified: callers advance a copy).
    bool advance(uint8_t byte);
    bool advance(std::string_view bytes) {
        for (char c : bytes)
            if (!advance(static_cast<uint8_t>(c))) return false;
        return true;
    }
    // The region is complete (its last byte was consumed).
    bool done() const { return depth_ == 0; }
    // The region may end here, without another byte (e.g. after a number).
    bool can_end() const;
    // Inside a string with no maximum length, past its minimum, where a
    // plain byte (token_index::is_plain_byte) is accepted and changes
    // nothing that matters to the mask: the mask walk allows whole subtrees
    // of such bytes at once and goes down others without copying the state.
    bool in_plain_string() const;

    void copy_from(const json_automaton& other) {
        g_ = other.g_;
        depth_ = other.depth_;
        for (int i = 0; i < depth_; ++i) stack_[static_cast<size_t>(i)] = other.stack_[static_cast<size_t>(i)];
    }

private:
    enum class kind : uint8_t { literal, choice, value, object, array, string, number, call, call_id };
    // The stage of a frame that is complete (popped at once).
    static constexpr uint8_t k_done = 255;
    // A Mistral call id: exactly this many ASCII letters and digits.
    static constexpr uint32_t call_id_length = 9;
    enum class step { consumed, retry, reject };
    struct frame {
        kind k = kind::literal;
        uint8_t stage = 0;
        uint8_t aux = 0;     // string: lead byte of a partial character; number: flags
        uint8_t aux2 = 0;    // string: continuation bytes still due / hex digits due
        int32_t id = 0;      // node (value, object, array, string, number), list (choice), literal
        uint32_t a = 0;      // choice: lo; string: length so far; array: items; number: digits;
                             // object: 1 + the anchor property's chosen candidate (0: not yet);
                             // call: the chosen tool
        uint32_t b = 0;      // choice: hi; object: property being written; value, array: 1 + the
                             // choice list narrowed by an anchor (0: the node's own)
        uint32_t pos = 0;    // choice, literal, call_id: bytes matched
        uint64_t bits = 0;   // object: properties seen; choice: excluded candidates; number: magnitude;
                             // array (uniqueItems), value: candidates the items took
    };
    static_assert(sizeof(frame) == 32);

    frame& top() { return stack_[static_cast<size_t>(depth_ - 1)]; }
    const frame& top() const { return stack_[static_cast<size_t>(depth_ - 1)]; }
    bool push(const frame& f);
    bool push_literal(int32_t lit);
    bool push_value(int32_t node);
    bool push_choice(int32_t list, uint64_t excluded);
    void pop_finished();        // pops eagerly finished frames, resuming their parents
    bool frame_finished(const frame& f) const;
    bool frame_can_end(const frame& f) const;
    void resume_parent(const frame& child);
    // 1 + the choice list for `value_node` narrowed by the object's anchor, 0 for its own.
    uint32_t narrowed_list(const frame& object, int32_t value_node) const;
    step consume(frame& f, uint8_t c);
    step consume_choice(frame& f, uint8_t c);
    step consume_string(frame& f, uint8_t c);
    step consume_number(frame& f, uint8_t c);
    step consume_value(frame& f, uint8_t c);
    // The call frame (json_grammar_calls.cpp): its next part once `child`
    // is complete, and the bytes between the calls of a list.
    void resume_call(frame& f, const frame& child);
    step consume_call(frame& f, uint8_t c);
    bool push_call_id();
    bool number_feasible(const schema_node& s, const frame& f, bool final_only) const;
    // An array frame may take another item: below maxItems and, under
    // uniqueItems, a candidate no earlier item took is left for it.
    bool item_left(const frame& array) const;

    const json_grammar* g_ = nullptr;
    int depth_ = 0;
    std::array<frame, max_depth> stack_{};
};

}  // namespace tachyon
