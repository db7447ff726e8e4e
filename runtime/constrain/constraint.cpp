#include "runtime/constrain/constraint.h"

#include <algorithm>
#include <cstring>

#include "base/log.h"

namespace tachyon {

bool turn_constraint::cursor::feed(uint8_t c, const json_grammar& g) {
    const bool first = at_start;
    at_start = false;
    const std::string_view trig = g.call_trigger();
    switch (r) {
        case region::none:
            if (first && c == '{' && g.has_answer()) {
                r = region::answer;
                a.start_answer();
                answer_ok = a.advance(c);
                // Llama 3 opens a call with `{"name"` too: until that trigger
                // is complete or broken, the turn may be either.
                if (g.has_tools() && !trig.empty() && trig[0] == '{') {
                    trigger = 1;
                    return true;
                }
                return answer_ok;
            }
            if (trig.empty()) return true;
            // The trigger's first byte occurs only first in it, so this is its full matcher.
            if (trig[trigger] == static_cast<char>(c)) ++trigger;
            else trigger = static_cast<char>(c) == trig[0] ? 1 : 0;
            if (trigger == trig.size()) {
                trigger = 0;
                if (g.has_tools()) {
                    r = region::tool_call;
                    a.start_tool_call();
                }
            }
            return true;
        case region::answer:
            if (trigger > 0) {
                // Still either the answer or the call trigger.
                const bool call_ok = trig[trigger] == static_cast<char>(c);
                answer_ok = answer_ok && a.advance(c);
                if (call_ok) {
                    if (++trigger == trig.size()) {
                        trigger = 0;
                        r = region::tool_call;
                        a.start_tool_call();
                    }
                    return true;
                }
                trigger = 0;
                if (!answer_ok) return false;
                if (a.done()) r = region::answer_done;
                return true;
            }
            [[fallthrough]];
        case region::tool_call:
            if (!a.advance(c)) return false;
            if (a.done()) r = r == region::tool_call ? region::none : region::answer_done;
            return true;
        case region::answer_done: return false;
    }
    return false;
}

turn_constraint::turn_constraint(std::shared_ptr<const token_index> index, std::shared_ptr<const json_grammar> grammar)
    : index_(std::move(index)), grammar_(std::move(grammar)) {
    TACHYON_ASSERT(index_ && grammar_, "turn_constraint needs an index and a grammar");
    cur_.a = json_automaton(grammar_.get());
    levels_.resize(index_->max_piece_length() + 2);
    for (auto& l : levels_) l.a = json_automaton(grammar_.get());
}

void turn_constraint::accept_text(std::string_view bytes) {
    for (char c : bytes) {
        if (broken_) return;
        if (!cur_.feed(static_cast<uint8_t>(c), *grammar_)) {
            broken_ = true;
            TACHYON_LOG(debug, "constraint: text outside the grammar was appended; the turn continues unconstrained");
        }
    }
}

void turn_constraint::accept(token_id token) {
    if (broken_ || token < 0 || static_cast<size_t>(token) >= index_->n_vocab()) return;
    const std::string& piece = index_->piece(token);
    if (piece.empty()) {
        // A control token: inside a region only an answer's end may be one.
        if (in_region() && !(cur_.r == region::answer && cur_.answer_ok && cur_.a.can_end())) broken_ = true;
        return;
    }
    accept_text(piece);
}

bool turn_constraint::piece_ok(const std::string& piece) const {
    cursor c;
    c.copy_from(cur_);
    for (char b : piece)
        if (!c.feed(static_cast<uint8_t>(b), *grammar_)) return false;
    return true;
}

void turn_constraint::allow_range(uint32_t begin, uint32_t end, uint8_t* allowed) const {
    const token_id* order = index_->order().data();
    for (uint32_t i = begin; i < end; ++i) allowed[order[i]] = 1;
}

void turn_constraint::walk(uint32_t node, size_t level, uint8_t* allowed) {
    const auto& nodes = index_->nodes();
    const token_index::node& nd = nodes[node];
    const uint32_t end = nd.first_child + nd.n_children;
    for (uint32_t ci = nd.first_child; ci < end; ++ci) {
        const token_index::node& c = nodes[ci];
        const cursor& cur = levels_[level];
        if (token_index::is_plain_byte(c.byte) && cur.r != region::none && cur.trigger == 0 && cur.a.in_plain_string()) {
            // Plain text inside a free string changes nothing the mask depends
            // on: allow a plain subtree at once, or go down with the same state.
            if (c.plain_below) {
                allow_range(c.tok_begin, c.sub_end, allowed);
                continue;
            }
            allow_range(c.tok_begin, c.tok_end, allowed);
            if (c.n_children > 0) walk(ci, level, allowed);
            continue;
        }
        cursor& next = levels_[level + 1];
        next.copy_from(cur);
        if (!next.feed(c.byte, *grammar_)) continue;  // prune the subtree
        allow_range(c.tok_begin, c.tok_end, allowed);
        if (c.n_children > 0) walk(ci, level + 1, allowed);
    }
}

void turn_constraint::fill_mask(std::span<uint8_t> allowed) {
    TACHYON_ASSERT(allowed.size() >= index_->n_vocab(), "mask smaller than the vocabulary");
    if (broken_) {
        std::fill(allowed.begin(), allowed.end(), uint8_t{1});
        return;
    }
    switch (cur_.r) {
        case region::none:
            std::fill(allowed.begin(), allowed.end(), uint8_t{1});
            // Only these tokens can start a region within their own bytes.
            if (grammar_->has_tools() && !grammar_->call_trigger().empty())
                for (token_id t : index_->tokens_containing(static_cast<uint8_t>(grammar_->call_trigger().back())))
                    if (!piece_ok(index_->piece(t))) allowed[static_cast<size_t>(t)] = 0;
            if (cur_.at_start && grammar_->has_answer())
                for (token_id t : index_->brace_tokens())
                    if (!piece_ok(index_->piece(t))) allowed[static_cast<size_t>(t)] = 0;
            return;
        case region::tool_call:
        case region::answer:
            std::fill(allowed.begin(), allowed.end(), uint8_t{0});
            levels_[0].copy_from(cur_);
            walk(0, 0, allowed.data());
            if (cur_.r == region::answer && cur_.answer_ok && cur_.a.can_end())
                for (token_id t : index_->eog_tokens()) allowed[static_cast<size_t>(t)] = 1;
            return;
        case region::answer_done:
            std::fill(allowed.begin(), allowed.end(), uint8_t{0});
            for (token_id t : index_->eog_tokens()) allowed[static_cast<size_t>(t)] = 1;
            return;
    }
}

std::string turn_constraint::forced_continuation() const {
    std::string out;
    if (broken_) return out;
    cursor c, t;
    c.copy_from(cur_);
    while (out.size() < 512 && (c.r == region::tool_call || c.r == region::answer)) {
        if (c.r == region::answer && (c.trigger > 0 || c.a.can_end())) break;  // ending (or the call) is the other way
        int only = -1;
        for (int b = 0; b < 256; ++b) {
            t.copy_from(c);
            if (!t.feed(static_cast<uint8_t>(b), *grammar_)) continue;
            if (only >= 0) {
                only = -2;
                break;
            }
            only = b;
        }
        if (only < 0) break;
        c.feed(static_cast<uint8_t>(only), *grammar_);
        out += static_cast<char>(only);
    }
    return out;
}

void turn_constraint::sync(std::span<const int32_t> generated) {
    while (n_seen_ < generated.size()) accept(generated[n_seen_++]);
}

mask_callback turn_constraint::as_mask_callback() {
    return [this](std::span<const int32_t> generated, std::span<uint8_t> allowed) {
        sync(generated);
        fill_mask(allowed);
    };
}

draft_callback forced_text_drafts(std::shared_ptr<turn_constraint> c,
                                  std::function<std::vector<int32_t>(std::string_view)> encode) {
    return [c = std::move(c), encode = std::move(encode)](std::span<const int32_t> generated, std::vector<int32_t>& draft) {
        c->sync(generated);
        if (!c->in_region()) return;
        const std::string forced = c->forced_continuation();
        if (!forced.empty()) draft = encode(forced);
    };
}

}  // namespace tachyon
