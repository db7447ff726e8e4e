// Every token's bytes, grouped in a byte trie, built once per model: the
// constraint walks the trie once per decode step, pruning a subtree as soon
// as its first bytes leave the grammar, instead of testing n_vocab pieces
// byte by byte. Tokens are numbered in trie order, so a subtree's tokens are
// one contiguous range (allowed at once when the grammar accepts any bytes
// of that kind, e.g. plain text inside a string).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inference/tokenizer/tokenizer.h"

namespace tachyon {

class token_index {
public:
    struct node {
        uint32_t first_child = 0;  // children are nodes [first_child, first_child + n_children)
        uint32_t n_children = 0;
        uint32_t tok_begin = 0;    // tokens whose piece ends here: order()[tok_begin, tok_end)
        uint32_t tok_end = 0;
        uint32_t sub_end = 0;      // tokens of the whole subtree: order()[tok_begin, sub_end)
        uint8_t byte = 0;          // the edge from the parent
        bool plain_below = false;  // every byte below, this edge included, is_plain_byte
    };

    explicit token_index(const tokenizer& tok);

    // Bytes a free JSON string takes without a state change that matters to
    // the mask: printable ASCII but '"', '\' and '<' (which may start a tag
    // a string must not hold).
    static bool is_plain_byte(uint8_t c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<'; }

    const std::vector<node>& nodes() const { return nodes_; }  // [n_nodes]; 0 is the root
    const std::vector<token_id>& order() const { return order_; }
    const std::string& piece(token_id id) const { return pieces_[static_cast<size_t>(id)]; }
    size_t n_vocab() const { return pieces_.size(); }
    size_t max_piece_length() const { return max_piece_; }

    // End-of-generation tokens (EOS, <|im_end|>, ...).
    const std::vector<token_id>& eog_tokens() const { return eog_; }
    // Tokens whose piece contains `last`, the last byte of a chat family's
    // call trigger (only they can complete the trigger): '>' for
    // "<tool_call>", ']' for "[TOOL_CALLS]", ... Every token for other bytes.
    const std::vector<token_id>& tokens_containing(uint8_t last) const;
    // Tokens whose piece starts with '{' (only they can open a JSON answer).
    const std::vector<token_id>& brace_tokens() const { return brace_; }

private:
    void fill(uint32_t self, uint32_t lo, uint32_t hi, size_t depth,
              const std::vector<std::pair<std::string, token_id>>& sorted);

    std::vector<std::string> pieces_;  // [n_vocab] bytes of each token; empty for control tokens
    std::vector<node> nodes_;
    std::vector<token_id> order_;      // [n_tokens with a piece] in trie (sorted piece) order
    std::vector<token_id> eog_, brace_, all_;
    std::vector<std::pair<uint8_t, std::vector<token_id>>> with_byte_;  // per trigger's last byte
    size_t max_piece_ = 0;
};

}  // namespace tachyon
