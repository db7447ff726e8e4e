#include "runtime/constrain/token_index.h"

#include <algorithm>

#include "runtime/formats/chat_format.h"

namespace tachyon {

namespace {

// The markers of the families' calls, seen by the constraint as text even
// where the vocabulary has them as control tokens.
bool is_call_marker(std::string_view text) {
    if (text == "</tool_call>" || text == "<|/tool_call|>") return true;
    for (const auto& f : chat_families())
        if (!f.call_trigger.empty() && text == f.call_trigger) return true;
    return false;
}

}  // namespace

const std::vector<token_id>& token_index::tokens_containing(uint8_t last) const {
    for (const auto& [b, tokens] : with_byte_)
        if (b == last) return tokens;
    return all_;
}

token_index::token_index(const tokenizer& tok) {
    for (const auto& f : chat_families()) {
        if (f.call_trigger.empty()) continue;
        const auto b = static_cast<uint8_t>(f.call_trigger.back());
        if (std::none_of(with_byte_.begin(), with_byte_.end(), [&](const auto& w) { return w.first == b; }))
            with_byte_.emplace_back(b, std::vector<token_id>{});
    }
    const size_t n = tok.n_tokens();
    pieces_.resize(n);
    std::vector<std::pair<std::string, token_id>> sorted;
    sorted.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        const auto id = static_cast<token_id>(i);
        if (tok.is_eog(id)) eog_.push_back(id);
        if (tok.is_control(id)) {
            // Control tokens render empty and take no part in constrained
            // text, except the tool-call markers themselves: models such as
            // Qwen2.5 and the shipped one have them as single control tokens,
            // and the constraint must see the trigger and emit the end marker.
            const std::string& text = tok.token_text(id);
            if (!is_call_marker(text)) continue;
            pieces_[i] = text;
        } else {
            pieces_[i] = tok.token_to_piece(id);
        }
        const std::string& p = pieces_[i];
        if (p.empty()) continue;
        max_piece_ = std::max(max_piece_, p.size());
        all_.push_back(id);
        for (auto& [b, tokens] : with_byte_)
            if (p.find(static_cast<char>(b)) != std::string::npos) tokens.push_back(id);
        if (p.front() == '{') brace_.push_back(id);
        sorted.emplace_back(p, id);
    }
    std::sort(sorted.begin(), sorted.end());  // char_traits<char> compares bytes as unsigned
    order_.reserve(sorted.size());
    for (const auto& [p, id] : sorted) order_.push_back(id);
    nodes_.reserve(sorted.size() * 2);
    nodes_.emplace_back();
    fill(0, 0, static_cast<uint32_t>(sorted.size()), 0, sorted);
}

// Fills node `self` for the pieces [lo, hi) sharing their first `depth`
// bytes. Its children are allocated together, then filled, so that they are
// contiguous. Recursion depth is bounded by the longest piece.
void token_index::fill(uint32_t self, uint32_t lo, uint32_t hi, size_t depth,
                       const std::vector<std::pair<std::string, token_id>>& sorted) {
    uint32_t i = lo;
    while (i < hi && sorted[i].first.size() == depth) ++i;  // pieces ending here sort first
    nodes_[self].tok_begin = lo;
    nodes_[self].tok_end = i;
    nodes_[self].sub_end = hi;
    std::vector<std::pair<uint32_t, uint32_t>> groups;  // the rest, grouped by their byte at `depth`
    for (uint32_t j = i; j < hi;) {
        const char b = sorted[j].first[depth];
        uint32_t k = j;
        while (k < hi && sorted[k].first[depth] == b) ++k;
        groups.emplace_back(j, k);
        j = k;
    }
    const auto first = static_cast<uint32_t>(nodes_.size());
    nodes_[self].first_child = first;
    nodes_[self].n_children = static_cast<uint32_t>(groups.size());
    for (const auto& g : groups) {
        node c;
        c.byte = static_cast<uint8_t>(sorted[g.first].first[depth]);
        nodes_.push_back(c);
    }
    bool all_plain = true;
    for (size_t g = 0; g < groups.size(); ++g) {
        const uint32_t child = first + static_cast<uint32_t>(g);
        fill(child, groups[g].first, groups[g].second, depth + 1, sorted);
        all_plain = all_plain && nodes_[child].plain_below;
    }
    nodes_[self].plain_below = all_plain && (depth == 0 || is_plain_byte(nodes_[self].byte));
}

}  // namespace tachyon
