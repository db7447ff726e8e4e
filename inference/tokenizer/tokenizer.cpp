#include "inference/tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <queue>

#include "inference/tokenizer/unicode.h"

namespace tachyon {
namespace {

struct string_hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using token_map = std::unordered_map<std::string, token_id, string_hash, std::equal_to<>>;

constexpr std::string_view k_spm_space = "\xE2\x96\x81";  // ▁ U+2581

struct merge_rule {
    uint32_t rank;
    token_id result;
};

uint64_t pair_key(token_id left, token_id right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// (left, right) → merge, open addressing with linear probing: the BPE inner
// loop looks a pair up for every adjacent symbol pair, and a node-based
// std::unordered_map costs a cache miss per probe.
class merge_table {
public:
    void reserve(size_t n) {
        size_t cap = 16;
        while (cap < 2 * n) cap *= 2;
        slots_.assign(cap, slot{k_empty, {0, no_token}});
        shift_ = 64 - static_cast<int>(std::countr_zero(cap));
    }
    // Keeps the first (lowest-ranked) rule for a pair.
    void insert(uint64_t key, merge_rule rule) {
        TACHYON_ASSERT(2 * (size_ + 1) <= slots_.size(), "merge_table: reserve() first");
        for (size_t i = index(key);; i = (i + 1) & (slots_.size() - 1)) {
            if (slots_[i].key == key) return;
            if (slots_[i].key == k_empty) {
                slots_[i] = {key, rule};
                ++size_;
                return;
            }
        }
    }
    const merge_rule* find(uint64_t key) const {
        if (slots_.empty() || key == k_empty) return nullptr;
        for (size_t i = index(key);; i = (i + 1) & (slots_.size() - 1)) {
            if (slots_[i].key == key) return &slots_[i].rule;
            if (slots_[i].key == k_empty) return nullptr;
        }
    }

private:
    static constexpr uint64_t k_empty = ~uint64_t{0};  // ids are < 2^24: never a real key
    struct slot {
        uint64_t key;
        merge_rule rule;
    };
    size_t index(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }

    std::vector<slot> slots_;  // [capacity], capacity a power of two ≥ 2 × rules
    int shift_ = 64;
    size_t size_ = 0;
};

// Control tokens that end a turn in the chat formats in use.
constexpr std::string_view k_end_of_turn_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                                     "<|eom_id|>", "<|endoftext|>"};
// Of these, the ones that may stand for the vocabulary's EOT when the
// metadata names none.
constexpr std::string_view k_eot_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>"};

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    while (true) {
        const size_t hit = s.find(from, pos);
        if (hit == std::string_view::npos) break;
        out.append(s.substr(pos, hit - pos));
        out.append(to);
        pos = hit + from.size();
    }
    out.append(s.substr(pos));
    return out;
}

// "<0x41>" → 0x41, or -1.
int parse_byte_token(std::string_view text) {
    if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
    int value = 0;
    for (size_t i = 3; i < 5; ++i) {
        const char c = text[i];
        int d = -1;
        if (c >= '0' && c <= '9') d = c - '0';
        if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        if (d < 0) return -1;
        value = value * 16 + d;
    }
    return value;
}

}  // namespace

struct tokenizer::tables {
    token_map token_to_id;
    pre_tokenizer pre;                              // BPE only
    merge_table merges;                             // (left, right) → rank, merged token
    std::array<token_id, 256> byte_token{};         // BPE: byte-level char; SPM: <0xNN>
    std::array<std::vector<token_id>, 256> specials_by_first_byte;  // longest first
    bool spm_cut_before_space = false;              // SPM: no token holds "x▁" (see encode_spm_text)
    std::vector<std::string> pieces;                // [n_tokens] decoded bytes of each token
    std::vector<uint8_t> eog;                       // [n_tokens] 1: ends generation
};

tokenizer::tokenizer(std::shared_ptr<const vocab> v, std::shared_ptr<const tables> t)
    : vocab_(std::move(v)), tables_(std::move(t)) {}

result<tokenizer> tokenizer::from_gguf(const gguf_file& file) {
    result<vocab> v = load_vocab(file);
    if (!v) return v.err();
    return create(std::move(*v));
}

result<tokenizer> tokenizer::create(vocab v) {
    const size_t n = v.tokens.size();
    if (n == 0) return make_error(errc::invalid_argument, "tokenizer: empty vocabulary");
    if (v.types.empty()) v.types.assign(n, token_type::normal);
    if (v.types.size() != n || (!v.scores.empty() && v.scores.size() != n)) {
        return make_error(errc::invalid_argument, "tokenizer: token types/scores do not match the " +
                                                      std::to_string(n) + " tokens");
    }
    for (token_id id : {v.bos_id, v.eos_id, v.eot_id, v.eom_id, v.unk_id, v.pad_id}) {
        if (id != no_token && (id < 0 || static_cast<size_t>(id) >= n)) {
            return make_error(errc::out_of_range, "tokenizer: special id " + std::to_string(id) +
                                                      " is not below the vocabulary size " + std::to_string(n));
        }
    }

    auto t = std::make_shared<tables>();
    t->token_to_id.reserve(n);
    for (size_t i = 0; i < n; ++i) t->token_to_id.emplace(v.tokens[i], static_cast<token_id>(i));
    const auto lookup = [&](std::string_view s) {
        const auto it = t->token_to_id.find(s);
        return it == t->token_to_id.end() ? no_token : it->second;
    };

    if (v.eot_id == no_token) {
        for (std::string_view text : k_eot_texts) {
            const token_id id = lookup(text);
            if (id != no_token && v.types[id] == token_type::control) {
                v.eot_id = id;
                break;
            }
        }
    }

    t->byte_token.fill(no_token);
    if (v.model == vocab_model::bpe) {
        result<pre_tokenizer> pre = make_pre_tokenizer(v.pre);
        if (!pre) return pre.err();
        t->pre = std::move(*pre);
        for (int b = 0; b < 256; ++b) {
            t->byte_token[b] = lookup(unicode::to_utf8(byte_to_code_point(static_cast<uint8_t>(b))));
        }
        t->merges.reserve(v.merges.size());
        for (size_t rank = 0; rank < v.merges.size(); ++rank) {
            const std::string& m = v.merges[rank];
            // Byte-level tokens never hold a space (it is written 'Ġ'), so the
            // first space separates the two sides.
            const size_t sp = m.find(' ', 1);
            if (sp == std::string::npos) {
                return make_error(errc::parse_error, "tokenizer.ggml.merges[" + std::to_string(rank) + "]: '" + m +
                                                         "' is not 'left right'");
            }
            const std::string_view left = std::string_view(m).substr(0, sp);
            const std::string_view right = std::string_view(m).substr(sp + 1);
            const token_id l = lookup(left);
            const token_id r = lookup(right);
            const token_id merged = lookup(std::string(left) + std::string(right));
            // A merge whose parts are not tokens can never apply: skip it.
            if (l == no_token || r == no_token || merged == no_token) continue;
            t->merges.insert(pair_key(l, r), merge_rule{static_cast<uint32_t>(rank), merged});
        }
    } else {
        t->spm_cut_before_space = true;
        for (const std::string& text : v.tokens) {
            for (size_t p = text.find(k_spm_space, 1); p != std::string::npos && t->spm_cut_before_space;
                 p = text.find(k_spm_space, p + 1)) {
                const bool after_space = p >= k_spm_space.size() &&
                                         text.compare(p - k_spm_space.size(), k_spm_space.size(), k_spm_space) == 0;
                if (!after_space) t->spm_cut_before_space = false;
            }
        }
        for (size_t i = 0; i < n; ++i) {
            if (v.types[i] != token_type::byte) continue;
            const int b = parse_byte_token(v.tokens[i]);
            if (b >= 0 && t->byte_token[b] == no_token) t->byte_token[b] = static_cast<token_id>(i);
        }
    }

    // Tokens matched in raw text: added (user-defined) and control tokens.
    for (size_t i = 0; i < n; ++i) {
        const token_type type = v.types[i];
        if (v.tokens[i].empty()) continue;
        if (type == token_type::control || type == token_type::user_defined || type == token_type::unknown) {
            t->specials_by_first_byte[static_cast<uint8_t>(v.tokens[i][0])].push_back(static_cast<token_id>(i));
        }
    }
    for (auto& ids : t->specials_by_first_byte) {
        std::stable_sort(ids.begin(), ids.end(),
                         [&](token_id a, token_id b) { return v.tokens[a].size() > v.tokens[b].size(); });
    }

    t->pieces.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const std::string& text = v.tokens[i];
        std::string& piece = t->pieces[i];
        switch (v.types[i]) {
            case token_type::byte: {
                const int b = parse_byte_token(text);
                piece = b >= 0 ? std::string(1, static_cast<char>(b)) : text;
                break;
            }
            case token_type::control:
            case token_type::unknown:
                piece = text;  // rendered only on request
                break;
            case token_type::user_defined:
                // Added tokens are matched on raw text, so they stand for
                // their text as written.
                piece = v.model == vocab_model::spm ? replace_all(text, k_spm_space, " ") : text;
                break;
            default:
                if (v.model == vocab_model::spm) {
                    piece = replace_all(text, k_spm_space, " ");
                } else {
                    for (size_t pos = 0; pos < text.size();) {
                        const unicode::decoded_char d = unicode::decode_utf8(text, pos);
                        const int b = code_point_to_byte(d.cp);
                        if (d.valid && b >= 0) {
                            piece.push_back(static_cast<char>(b));
                        } else {
                            piece.append(text, pos, d.n_bytes);
                        }
                        pos += d.n_bytes;
                    }
                }
        }
    }

    t->eog.assign(n, 0);
    for (token_id id : {v.eos_id, v.eot_id, v.eom_id}) {
        if (id != no_token) t->eog[id] = 1;
    }
    for (std::string_view text : k_end_of_turn_texts) {
        const token_id id = lookup(text);
        if (id != no_token && v.types[id] == token_type::control) t->eog[id] = 1;
    }

    return tokenizer(std::make_shared<const vocab>(std::move(v)), std::move(t));
}

const std::string& tokenizer::token_text(token_id id) const {
    TACHYON_ASSERT(id >= 0 && static_cast<size_t>(id) < n_tokens(), "token id out of range");
    return vocab_->tokens[id];
}

token_id tokenizer::find_token(std::string_view text) const {
    const auto it = tables_->token_to_id.find(text);
    return it == tables_->token_to_id.end() ? no_token : it->second;
}

bool tokenizer::is_control(token_id id) const {
    return id >= 0 && static_cast<size_t>(id) < n_tokens() && vocab_->types[id] == token_type::control;
}

bool tokenizer::is_eog(token_id id) const {
    return id >= 0 && static_cast<size_t>(id) < n_tokens() && tables_->eog[id] != 0;
}

// ---- encoding -------------------------------------------------------------------

std::vector<token_id> tokenizer::encode(std::string_view text, encode_options options) const {
    const vocab& v = *vocab_;
    std::vector<token_id> out;
    out.reserve(text.size() / 3 + 2);
    if (options.add_special && v.add_bos && v.bos_id != no_token) out.push_back(v.bos_id);

    // SPM's dummy prefix goes before the text at the start and after each
    // special token.
    bool after_special = true;
    const auto flush_text = [&](std::string_view fragment) {
        if (fragment.empty()) return;
        if (v.model == vocab_model::bpe) {
            encode_bpe_text(fragment, out);
        } else if (v.add_space_prefix && after_special) {
            std::string prefixed;
            prefixed.reserve(fragment.size() + 1);
            prefixed.push_back(' ');
            prefixed.append(fragment);
            encode_spm_text(prefixed, out);
        } else {
            encode_spm_text(fragment, out);
        }
        after_special = false;
    };

    // One left-to-right pass: at each byte, the longest special token that
    // starts there (leftmost-longest, as the reference added-token matcher).
    size_t text_start = 0;
    for (size_t pos = 0; pos < text.size();) {
        const auto& candidates = tables_->specials_by_first_byte[static_cast<uint8_t>(text[pos])];
        token_id hit = no_token;
        for (token_id id : candidates) {
            const token_type type = v.types[id];
            if (type != token_type::user_defined && !options.parse_special) continue;
            const std::string& s = v.tokens[id];
            if (text.compare(pos, s.size(), s) == 0) {
                hit = id;
                break;
            }
        }
        if (hit == no_token) {
            ++pos;
            continue;
        }
        flush_text(text.substr(text_start, pos - text_start));
        out.push_back(hit);
        after_special = true;
        pos += v.tokens[hit].size();
        text_start = pos;
    }
    flush_text(text.substr(text_start));

    if (options.add_special && v.add_eos && v.eos_id != no_token) out.push_back(v.eos_id);
    return out;
}

namespace {

// BPE of one word: symbols start as single bytes and the lowest-ranked
// adjacent pair is merged until none is left (leftmost first on ties). A heap
// with lazy invalidation keeps long words O(n log n).
void bpe_merge_word(std::string_view word, const std::array<token_id, 256>& byte_token,
                    const merge_table& merges, std::vector<token_id>& out) {
    struct symbol {
        token_id id;
        int prev;
        int next;
    };
    struct candidate {
        uint32_t rank;
        int left;
        token_id left_id;
        token_id right_id;
        token_id result;
        bool operator>(const candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
    };
    TACHYON_ASSERT(word.size() < (size_t{1} << 31), "bpe_merge_word: word longer than 2 GiB");
    const int n = static_cast<int>(word.size());
    if (n == 0) return;
    std::vector<symbol> symbols(n);  // [n] linked list over the word's bytes
    for (int i = 0; i < n; ++i) symbols[i] = {byte_token[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
    if (n == 1) {
        if (symbols[0].id != no_token) out.push_back(symbols[0].id);
        return;
    }

    std::priority_queue<candidate, std::vector<candidate>, std::greater<candidate>> heap;
    const auto consider = [&](int left) {
        if (left < 0) return;
        const int right = symbols[left].next;
        if (right < 0 || symbols[left].id == no_token || symbols[right].id == no_token) return;
        const merge_rule* rule = merges.find(pair_key(symbols[left].id, symbols[right].id));
        if (!rule) return;
        heap.push({rule->rank, left, symbols[left].id, symbols[right].id, rule->result});
    };
    for (int i = 0; i + 1 < n; ++i) consider(i);

    while (!heap.empty()) {
        const candidate c = heap.top();
        heap.pop();
        symbol& l = symbols[c.left];
        // Stale: the left symbol was merged away or changed, or its
        // neighbour is no longer the one this pair was made with.
        if (l.id != c.left_id || l.next < 0 || symbols[l.next].id != c.right_id) continue;
        const int right = l.next;
        l.id = c.result;
        l.next = symbols[right].next;
        if (l.next >= 0) symbols[l.next].prev = c.left;
        symbols[right].id = no_token;
        symbols[right].prev = symbols[right].next = -1;
        consider(l.prev);
        consider(c.left);
    }
    for (int i = 0; i >= 0; i = symbols[i].next) {
        if (symbols[i].id != no_token) out.push_back(symbols[i].id);
    }
}

}  // namespace

void tokenizer::encode_bpe_text(std::string_view text, std::vector<token_id>& out) const {
    const tables& t = *tables_;
    // Words repeat a lot in real text: remember each word's tokens for the
    // length of this call (no shared state, so no locking).
    struct span_ref {
        uint32_t begin;
        uint32_t count;
    };
    std::unordered_map<std::string_view, span_ref> cache;
    std::vector<token_id> store;
    std::string mapped;
    for (std::string_view word : t.pre.split(text)) {
        if (const auto it = cache.find(word); it != cache.end()) {
            out.insert(out.end(), store.begin() + it->second.begin,
                       store.begin() + it->second.begin + it->second.count);
            continue;
        }
        const size_t begin = store.size();
        token_id whole = no_token;
        if (t.pre.ignore_merges) {
            mapped = bytes_to_byte_level(word);
            whole = find_token(mapped);
        }
        if (whole != no_token) {
            store.push_back(whole);
        } else {
            bpe_merge_word(word, t.byte_token, t.merges, store);
        }
        const span_ref ref{static_cast<uint32_t>(begin), static_cast<uint32_t>(store.size() - begin)};
        out.insert(out.end(), store.begin() + ref.begin, store.begin() + ref.begin + ref.count);
        // Bound the cache on huge inputs: long texts of unique words would
        // otherwise keep every word twice.
        if (cache.size() < (1u << 16)) {
            cache.emplace(word, ref);
        } else {
            store.resize(begin);
        }
    }
}

namespace {

// SentencePiece BPE of one segment: symbols start as single UTF-8
// characters (an invalid byte alone); the adjacent pair whose concatenation
// is the highest-scored token is merged until no pair is a token (leftmost
// first on ties). Unmatched symbols fall back to <0xNN> byte tokens, else to
// the unknown token.
template <class find_fn>
void spm_merge_segment(std::string_view text, const vocab& v, const std::array<token_id, 256>& byte_token,
                       const find_fn& find_token, std::vector<token_id>& out) {
    struct symbol {
        uint32_t offset;
        uint32_t n_bytes;  // 0: merged into its left neighbour
        int prev;
        int next;
    };
    std::vector<symbol> symbols;  // [n_chars]
    symbols.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        const size_t len = unicode::decode_utf8(text, pos).n_bytes;
        const int i = static_cast<int>(symbols.size());
        symbols.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(len), i - 1, -1});
        if (i > 0) symbols[i - 1].next = i;
        pos += len;
    }

    struct bigram {
        float score;
        int left;
        int right;
        uint32_t n_bytes;
        bool operator<(const bigram& o) const { return score != o.score ? score < o.score : left > o.left; }
    };
    std::priority_queue<bigram> heap;  // highest score on top
    const auto consider = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const uint32_t len = symbols[left].n_bytes + symbols[right].n_bytes;
        const token_id id = find_token(text.substr(symbols[left].offset, len));
        if (id == no_token) return;
        heap.push({v.scores.empty() ? 0.0f : v.scores[id], left, right, len});
    };
    for (size_t i = 1; i < symbols.size(); ++i) consider(static_cast<int>(i) - 1, static_cast<int>(i));

    while (!heap.empty()) {
        const bigram b = heap.top();
        heap.pop();
        symbol& l = symbols[b.left];
        symbol& r = symbols[b.right];
        // Stale: one side was merged since the pair was queued.
        if (l.n_bytes == 0 || r.n_bytes == 0 || l.n_bytes + r.n_bytes != b.n_bytes || l.next != b.right) continue;
        l.n_bytes += r.n_bytes;
        r.n_bytes = 0;
        l.next = r.next;
        if (r.next >= 0) symbols[r.next].prev = b.left;
        consider(l.prev, b.left);
        consider(b.left, l.next);
    }

    for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
        const std::string_view piece = text.substr(symbols[i].offset, symbols[i].n_bytes);
        const token_id id = find_token(piece);
        if (id != no_token) {
            out.push_back(id);
            continue;
        }
        for (char c : piece) {
            const token_id b = byte_token[static_cast<uint8_t>(c)];
            if (b != no_token) {
                out.push_back(b);
            } else if (v.unk_id != no_token) {
                out.push_back(v.unk_id);
                break;
            }
        }
    }
}

}  // namespace

void tokenizer::encode_spm_text(std::string_view raw, std::vector<token_id>& out) const {
    const tables& t = *tables_;
    const std::string text = replace_all(raw, " ", k_spm_space);
    const auto find = [this](std::string_view s) { return find_token(s); };
    if (!t.spm_cut_before_space) {
        spm_merge_segment(text, *vocab_, t.byte_token, find, out);
        return;
    }
    // No token holds a ▁ after another character, so no merge can cross
    // the point before a ▁ that follows a non-▁: the segments between such
    // points are merged alone (same result, small heaps) and, as words
    // repeat, remembered for this call.
    struct span_ref {
        uint32_t begin;
        uint32_t count;
    };
    std::unordered_map<std::string_view, span_ref> cache;
    std::vector<token_id> store;
    const std::string_view all(text);
    const auto emit = [&](std::string_view seg) {
        if (seg.empty()) return;
        if (const auto it = cache.find(seg); it != cache.end()) {
            out.insert(out.end(), store.begin() + it->second.begin,
                       store.begin() + it->second.begin + it->second.count);
            return;
        }
        const size_t begin = store.size();
        spm_merge_segment(seg, *vocab_, t.byte_token, find, store);
        out.insert(out.end(), store.begin() + begin, store.end());
        if (cache.size() < (1u << 16)) {
            cache.emplace(seg, span_ref{static_cast<uint32_t>(begin), static_cast<uint32_t>(store.size() - begin)});
        } else {
            store.resize(begin);
        }
    };
    size_t seg_start = 0;
    for (size_t pos = all.find(k_spm_space, 1); pos != std::string_view::npos;
         pos = all.find(k_spm_space, pos + k_spm_space.size())) {
        const bool after_space = pos >= k_spm_space.size() &&
                                 all.substr(pos - k_spm_space.size(), k_spm_space.size()) == k_spm_space;
        if (after_space) continue;
        emit(all.substr(seg_start, pos - seg_start));
        seg_start = pos;
    }
    emit(all.substr(seg_start));
}

// ---- decoding ---------------------------------------------------------------------

std::string_view tokenizer::piece_view(token_id id, bool render_special) const {
    if (id < 0 || static_cast<size_t>(id) >= n_tokens()) return {};
    const token_type type = vocab_->types[id];
    if ((type == token_type::control || type == token_type::unknown) && !render_special) return {};
    return tables_->pieces[id];
}

std::string tokenizer::token_to_piece(token_id id, bool render_special) const {
    return std::string(piece_view(id, render_special));
}

namespace {

// The SPM dummy prefix shows as a leading space on the first text token.
bool strips_leading_space(const vocab& v, token_id id, const decode_options& options) {
    return options.strip_leading_space && v.model == vocab_model::spm && v.add_space_prefix &&
           (v.types[id] == token_type::normal || v.types[id] == token_type::user_defined);
}

}  // namespace

std::string tokenizer::decode(std::span<const token_id> ids, decode_options options) const {
    std::string out;
    out.reserve(ids.size() * 4);
    bool at_start = true;
    for (token_id id : ids) {
        std::string_view piece = piece_view(id, options.render_special);
        if (piece.empty()) continue;
        if (at_start && strips_leading_space(*vocab_, id, options) && piece[0] == ' ') piece.remove_prefix(1);
        at_start = false;
        out += piece;
    }
    return out;
}

incremental_detokenizer::incremental_detokenizer(const tokenizer& tok, decode_options options)
    : tok_(&tok), options_(options) {}

std::string incremental_detokenizer::push(token_id id) {
    std::string piece = tok_->token_to_piece(id, options_.render_special);
    if (piece.empty()) return {};
    if (at_start_ && strips_leading_space(tok_->get_vocab(), id, options_) && piece[0] == ' ') piece.erase(0, 1);
    at_start_ = false;
    pending_ += piece;
    const size_t n = unicode::complete_prefix_length(pending_);
    std::string ready = pending_.substr(0, n);
    pending_.erase(0, n);
    return ready;
}

std::string incremental_detokenizer::flush() {
    std::string rest;
    rest.swap(pending_);
    return rest;
}

}  // namespace tachyon
