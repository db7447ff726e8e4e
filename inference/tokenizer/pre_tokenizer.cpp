#include "inference/tokenizer/pre_tokenizer.h"

#include "inference/tokenizer/unicode.h"

namespace tachyon {
namespace {

using namespace unicode;

// ---- character classes ------------------------------------------------------

char_class of_flags(uint8_t flags, bool negated = false) { return char_class{flags, {}, negated}; }

// A bracket expression written as literal characters and `a-b` ranges, as
// the patterns spell them: "A-Za-zµÀ-Ö". No escapes are needed by any set
// in use ('-' is written as part of a range such as "!-/").
char_class literal_set(std::string_view spec) {
    const std::vector<uint32_t> cps = to_code_points(spec);
    char_class c;
    for (size_t i = 0; i < cps.size(); ++i) {
        if (i + 2 < cps.size() && cps[i + 1] == '-') {
            c.ranges.emplace_back(cps[i], cps[i + 2]);
            i += 2;
        } else {
            c.ranges.emplace_back(cps[i], cps[i]);
        }
    }
    return c;
}

const char_class k_space = literal_set(" ");
const char_class k_newline = literal_set("\r\n");
const char_class k_ws = of_flags(cp_whitespace);
const char_class k_letter = of_flags(cp_letter);
const char_class k_number = of_flags(cp_number);
const char_class k_not_ws_letter_number = of_flags(cp_whitespace | cp_letter | cp_number, true);
// [^\r\n\p{L}\p{N}]
const char_class k_not_newline_letter_number = [] {
    char_class c = literal_set("\r\n");
    c.flags = cp_letter | cp_number;
    c.negated = true;
    return c;
}();

// ---- terms --------------------------------------------------------------------

split_term run(char_class body, uint32_t max_len = 0) {
    split_term t;
    t.kind = term_kind::run;
    t.body = std::move(body);
    t.max_len = max_len;
    return t;
}

split_term run_with_prefix(char_class prefix, char_class body) {
    split_term t = run(std::move(body));
    t.has_prefix = true;
    t.prefix = std::move(prefix);
    return t;
}

split_term with_suffix(split_term t, char_class suffix) {
    t.has_suffix = true;
    t.suffix = std::move(suffix);
    return t;
}

split_term exactly(char_class body, uint32_t n) {
    split_term t = run(std::move(body), n);
    t.min_len = n;
    return t;
}

split_term kind_term(term_kind kind, bool case_insensitive = false) {
    split_term t;
    t.kind = kind;
    t.case_insensitive = case_insensitive;
    return t;
}

// ---- the patterns models use ----------------------------------------------------

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
split_rule gpt2_rule() {
    return split_rule{{
        kind_term(term_kind::contraction),
        run_with_prefix(k_space, k_letter),
        run_with_prefix(k_space, k_number),
        run_with_prefix(k_space, k_not_ws_letter_number),
        kind_term(term_kind::space_not_before_word),
        run(k_ws),
    }};
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}
// | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
split_rule llama3_rule(uint32_t max_digits) {
    return split_rule{{
        kind_term(term_kind::contraction, true),
        run_with_prefix(k_not_newline_letter_number, k_letter),
        run(k_number, max_digits),
        with_suffix(run_with_prefix(k_space, k_not_ws_letter_number), k_newline),
        kind_term(term_kind::space_to_last_newline),
        kind_term(term_kind::space_not_before_word),
        run(k_ws),
    }};
}

split_rule single(split_term t) { return split_rule{{std::move(t)}}; }

// [\p{P}\$\+<=>\^~\|`]+ : Unicode punctuation and the ASCII symbols that
// HF's Punctuation pre-tokenizer also counts.
char_class punctuation_and_ascii_symbols() {
    char_class c = literal_set("$+<=>^~|`");
    c.flags = cp_punctuation;
    return c;
}

// Han, and the blocks from U+0800 up to it, and Hangul: [一-龥ࠀ-一가-퟿]
char_class cjk_set() { return literal_set("\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff"); }

// Cased letters as DeepSeek LLM's pattern lists them.
char_class deepseek_cased_letters() {
    return literal_set(
        "A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
        "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1"
        "\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5"
        "\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a"
        "\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d"
        "\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3"
        "\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115"
        "\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f"
        "\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3"
        "\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf"
        "\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f"
        "\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2"
        "\U000118a0-\U000118df\U0001e900-\U0001e943");
}

std::vector<split_rule> rules_gpt2() { return {gpt2_rule()}; }

std::vector<split_rule> rules_llama3() { return {llama3_rule(3)}; }

std::vector<split_rule> rules_qwen2() { return {llama3_rule(1)}; }

std::vector<split_rule> rules_starcoder() { return {single(run(k_number, 1)), gpt2_rule()}; }

std::vector<split_rule> rules_falcon() {
    return {single(run(punctuation_and_ascii_symbols())), gpt2_rule(), single(exactly(literal_set("0-9"), 3))};
}

// What a BPE vocabulary without tokenizer.ggml.pre has always been cut with.
std::vector<split_rule> rules_default() {
    return {single(run(punctuation_and_ascii_symbols())), gpt2_rule(), single(run(k_number)),
            single(exactly(literal_set("0-9"), 3))};
}

std::vector<split_rule> rules_deepseek_llm() {
    return {
        single(run(k_newline, 1)),
        single(run_with_prefix(k_ws, deepseek_cased_letters())),
        single(run_with_prefix(k_ws, literal_set("!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002"))),
        single(kind_term(term_kind::trailing_space)),
        single(run(cjk_set())),
        single(run(k_number, 1)),  // Digits(individual_digits) in the reference
    };
}

std::vector<split_rule> rules_deepseek_coder() {
    return {
        single(run(k_newline, 1)),
        single(run_with_prefix(k_ws, k_letter)),
        single(run_with_prefix(k_ws, of_flags(cp_punctuation))),
        single(run(cjk_set())),
        single(run(k_number, 1)),
    };
}

struct named_rules {
    const char* name;
    std::vector<split_rule> (*make)();
    bool ignore_merges = false;
};

constexpr named_rules k_pre_tokenizers[] = {
    {"default", rules_default, false},
    {"gpt-2", rules_gpt2, false}, {"gpt2", rules_gpt2, false}, {"mpt", rules_gpt2, false}, {"olmo", rules_gpt2, false},
    {"jais", rules_gpt2, false}, {"gpt-neox", rules_gpt2, false}, {"phi-2", rules_gpt2, false},
    {"llama3", rules_llama3, true}, {"llama-v3", rules_llama3, true}, {"llama-bpe", rules_llama3, true},
    {"dbrx", rules_llama3, true}, {"smaug-bpe", rules_llama3, true}, {"falcon3", rules_llama3, true},
    {"qwen2", rules_qwen2, false}, {"stablelm2", rules_qwen2, false}, {"deepseek-r1-qwen", rules_qwen2, false},
    {"deepseek-llm", rules_deepseek_llm, false},
    {"deepseek-coder", rules_deepseek_coder, false},
    {"falcon", rules_falcon, false},
    {"starcoder", rules_starcoder, false}, {"refact", rules_starcoder, false}, {"command-r", rules_starcoder, false},
    {"smollm", rules_starcoder, false}, {"codeshell", rules_starcoder, false},
};

// ---- matching -------------------------------------------------------------------

// A piece being split: code points with their class bits, bounded by `end`.
struct piece_view {
    const uint32_t* cps;
    const uint8_t* flags;
    size_t end;

    bool in(const char_class& c, size_t i) const { return i < end && c.contains(cps[i], flags[i]); }
    size_t space_run(size_t i) const {
        size_t j = i;
        while (j < end && (flags[j] & cp_whitespace)) ++j;
        return j - i;
    }
};

uint32_t ascii_lower(uint32_t cp) { return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp; }

size_t match_contraction(const piece_view& v, size_t pos, bool case_insensitive) {
    if (v.cps[pos] != '\'') return 0;
    static constexpr std::string_view k_suffixes[] = {"s", "t", "re", "ve", "m", "ll", "d"};
    for (std::string_view s : k_suffixes) {
        if (pos + 1 + s.size() > v.end) continue;
        bool ok = true;
        for (size_t k = 0; k < s.size() && ok; ++k) {
            const uint32_t cp = v.cps[pos + 1 + k];
            ok = (case_insensitive ? ascii_lower(cp) : cp) == static_cast<uint32_t>(s[k]);
        }
        if (ok) return 1 + s.size();
    }
    return 0;
}

size_t match_run(const split_term& t, const piece_view& v, size_t pos) {
    const auto body_from = [&](size_t start) -> size_t {
        size_t j = start;
        while (j < v.end && (t.max_len == 0 || j - start < t.max_len) && v.in(t.body, j)) ++j;
        if (j - start < t.min_len) return 0;
        if (t.has_suffix) {
            while (v.in(t.suffix, j)) ++j;
        }
        return j;
    };
    // X?Y+ tries with the optional character first, then without it.
    if (t.has_prefix && v.in(t.prefix, pos)) {
        if (const size_t j = body_from(pos + 1)) return j - pos;
    }
    if (const size_t j = body_from(pos)) return j - pos;
    return 0;
}

size_t match_term(const split_term& t, const piece_view& v, size_t pos) {
    switch (t.kind) {
        case term_kind::run:
            return match_run(t, v, pos);
        case term_kind::contraction:
            return match_contraction(v, pos, t.case_insensitive);
        case term_kind::space_not_before_word: {
            const size_t n = v.space_run(pos);
            if (n == 0) return 0;
            return pos + n == v.end ? n : n - 1;
        }
        case term_kind::space_to_last_newline: {
            const size_t n = v.space_run(pos);
            size_t len = 0;
            for (size_t k = 0; k < n; ++k) {
                if (v.cps[pos + k] == '\r' || v.cps[pos + k] == '\n') len = k + 1;
            }
            return len;
        }
        case term_kind::trailing_space: {
            const size_t n = v.space_run(pos);
            return pos + n == v.end ? n : 0;
        }
    }
    return 0;
}

// Splits [begin, end) by one rule, appending the cut points' pieces.
void apply_rule(const split_rule& rule, const uint32_t* cps, const uint8_t* flags, size_t begin, size_t end,
                std::vector<std::pair<size_t, size_t>>& out) {
    const piece_view v{cps, flags, end};
    size_t gap = begin;
    size_t pos = begin;
    while (pos < end) {
        size_t len = 0;
        for (const split_term& t : rule.alternatives) {
            len = match_term(t, v, pos);
            if (len > 0) break;
        }
        if (len == 0) {
            ++pos;
            continue;
        }
        if (gap < pos) out.emplace_back(gap, pos);
        out.emplace_back(pos, pos + len);
        pos += len;
        gap = pos;
    }
    if (gap < end) out.emplace_back(gap, end);
}

}  // namespace

bool char_class::contains(uint32_t cp, uint8_t cp_flags) const {
    bool hit = (flags & cp_flags) != 0;
    for (size_t i = 0; !hit && i < ranges.size(); ++i) hit = cp >= ranges[i].first && cp <= ranges[i].second;
    return hit != negated;
}

std::vector<std::string_view> pre_tokenizer::split(std::string_view text) const {
    // Decode once: code points, their class bits and byte offsets.
    std::vector<uint32_t> cps;          // [n]
    std::vector<uint8_t> flags;         // [n]
    std::vector<size_t> offsets;        // [n + 1] byte offset of each code point
    cps.reserve(text.size());
    flags.reserve(text.size());
    offsets.reserve(text.size() + 1);
    for (size_t pos = 0; pos < text.size();) {
        const uint8_t byte = static_cast<uint8_t>(text[pos]);
        // ASCII, most of what is tokenized, skips the decoder.
        const unicode::decoded_char d = byte < 0x80 ? unicode::decoded_char{byte, 1, true} : unicode::decode_utf8(text, pos);
        cps.push_back(d.cp);
        flags.push_back(unicode::flags_of(d.cp));
        offsets.push_back(pos);
        pos += d.n_bytes;
    }
    offsets.push_back(text.size());

    std::vector<std::pair<size_t, size_t>> pieces;  // code point ranges
    if (!cps.empty()) pieces.emplace_back(0, cps.size());
    std::vector<std::pair<size_t, size_t>> next;
    for (const split_rule& rule : rules) {
        next.clear();
        for (const auto& [b, e] : pieces) apply_rule(rule, cps.data(), flags.data(), b, e, next);
        pieces.swap(next);
    }

    std::vector<std::string_view> words;
    words.reserve(pieces.size());
    for (const auto& [b, e] : pieces) words.push_back(text.substr(offsets[b], offsets[e] - offsets[b]));
    return words;
}

result<pre_tokenizer> make_pre_tokenizer(std::string_view name) {
    for (const named_rules& n : k_pre_tokenizers) {
        if (name == n.name) return pre_tokenizer{std::string(name), n.make(), n.ignore_merges};
    }
    std::string known;
    for (const named_rules& n : k_pre_tokenizers) known += std::string(known.empty() ? "" : ", ") + n.name;
    return make_error(errc::unsupported, "tokenizer.ggml.pre: unknown pre-tokenizer '" + std::string(name) +
                                             "' (known: " + known + ")");
}

}  // namespace tachyon
