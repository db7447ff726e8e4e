// Constrained decoding for one model turn: tool calls and final answers
// (DESIGN.md, quality features). Outside a constrained region every token is
// allowed; a region starts lazily, as llama.cpp's trigger-based grammars do:
// - after the chat family's call trigger ("<tool_call>", "[TOOL_CALLS]",
//   "<|tool_call|>", Llama 3's `{"name"`; a token of its own or several),
//   the region is a call in the family's syntax (json_grammar.h);
// - when the turn's first byte is '{' and the agent has an output schema,
//   the turn is the answer: one JSON value valid for that schema, then only
//   an end-of-generation token.
// Inside a region the allowed tokens are those whose bytes keep the text a
// valid prefix (runtime/constrain/json_grammar.h); end-of-generation tokens are
// allowed only where the region may end (answers), never inside a call.
//
// Cost per step: outside a region, a fill plus a check of the few tokens
// that could complete the trigger (those holding its last byte, and at the turn's
// start those starting with '{'); inside, one walk of the token trie
// (runtime/constrain/token_index.h) pruned at the first byte the grammar rejects.
//
// Not thread-safe: one object per running turn, used on the engine thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "inference/engine/engine.h"
#include "runtime/constrain/json_grammar.h"
#include "runtime/constrain/token_index.h"

namespace tachyon {

class turn_constraint {
public:
    enum class region : uint8_t { none, tool_call, answer, answer_done };

    turn_constraint(std::shared_ptr<const token_index> index, std::shared_ptr<const json_grammar> grammar);

    // Sets allowed[t] [n_vocab] to 1 for each permitted next token, 0 otherwise.
    void fill_mask(std::span<uint8_t> allowed);
    // The token that was appended (sampled or forced).
    void accept(token_id token);
    // Bytes appended without a token of their own (text forced by jump-forward).
    void accept_text(std::string_view bytes);

    // The bytes the grammar allows in exactly one way from here (punctuation,
    // keys, the rest of a name or grounded value once unique), up to where a
    // choice is left or the region ends. Empty outside a region.
    std::string forced_continuation() const;

    region current_region() const { return cur_.r; }
    bool in_region() const { return cur_.r == region::tool_call || cur_.r == region::answer; }
    // A token outside the mask was accepted (the caller did not apply it):
    // the constraint has stopped and allows everything.
    bool broken() const { return broken_; }

    // Accepts the tokens of `generated` not seen yet (through this or the mask callback).
    void sync(std::span<const int32_t> generated);

    // An adapter for request::constrain: accepts the tokens generated since
    // the last call, then fills the mask. `this` must outlive the request.
    mask_callback as_mask_callback();

private:
    // The whole state: where in the turn, how much of "<tool_call>" has been
    // seen, and the automaton inside a region.
    struct cursor {
        region r = region::none;
        uint8_t trigger = 0;     // bytes of the call trigger matched at the end of the text
        bool at_start = true;    // no byte of the turn yet
        bool answer_ok = true;   // region answer: `a` still holds a valid answer prefix
        json_automaton a;

        bool feed(uint8_t c, const json_grammar& g);
        void copy_from(const cursor& o) {
            r = o.r;
            trigger = o.trigger;
            at_start = o.at_start;
            answer_ok = o.answer_ok;
            a.copy_from(o.a);
        }
    };

    void walk(uint32_t node, size_t level, uint8_t* allowed);
    void allow_range(uint32_t begin, uint32_t end, uint8_t* allowed) const;
    bool piece_ok(const std::string& piece) const;  // from cur_, outside a region

    std::shared_ptr<const token_index> index_;
    std::shared_ptr<const json_grammar> grammar_;
    cursor cur_;
    std::vector<cursor> levels_;  // [max piece length + 1] the cursor after each byte of the walk
    size_t n_seen_ = 0;           // tokens of the request accepted through as_mask_callback
    bool broken_ = false;
};

// Jump-forward as a draft source for request::propose: where the grammar
// allows one continuation only, its text, tokenized by `encode`, is drafted
// and verified in one forward. Holds the constraint alive.
draft_callback forced_text_drafts(std::shared_ptr<turn_constraint> c,
                                  std::function<std::vector<int32_t>(std::string_view)> encode);

}  // namespace tachyon
