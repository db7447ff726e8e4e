// Pre-tokenizers of byte-level BPE vocabularies: the text is cut into words
// before BPE runs on each word alone, so that merges never cross a word
// boundary. Each model family cuts with its own regular expressions (chosen
// by tokenizer.ggml.pre); they are written here as data: a pre-tokenizer is a
// list of split rules applied one after the other (each rule refines the
// pieces the previous one produced), and a rule is an ordered alternation of
// a few term shapes that cover every pattern these models use. Matching is
// leftmost, first alternative wins, as a backtracking regex engine does;
// text between matches is kept as a piece of its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace tachyon {

// A set of code points: any of the class bits in `flags` (unicode.h
// cp_flags) or any of the inclusive `ranges`, complemented if `negated`.
struct char_class {
    uint8_t flags = 0;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    bool negated = false;

    bool contains(uint32_t cp, uint8_t cp_flags) const;
};

enum class term_kind {
    // prefix? body{min_len, max_len} suffix*  — e.g. ` ?\p{L}+`,
    // `[^\r\n\p{L}\p{N}]?\p{L}+`, `\p{N}{1,3}`, ` ?[^\s\p{L}\p{N}]+[\r\n]*`.
    // Body repetition is greedy; prefix and suffix must be disjoint from the
    // body (true of every pattern in use), which makes greedy matching exact.
    run,
    // 's|'t|'re|'ve|'m|'ll|'d, optionally ASCII case-insensitive.
    contraction,
    // \s+(?!\S): a whitespace run, less its last character when a
    // non-space follows (that character goes with the next word).
    space_not_before_word,
    // \s*[\r\n]+: a whitespace run up to and including its last CR/LF.
    space_to_last_newline,
    // \s+$: a whitespace run that reaches the end of the piece.
    trailing_space,
};

struct split_term {
    term_kind kind = term_kind::run;
    bool has_prefix = false;
    char_class prefix;     // optional single character before the body
    char_class body;
    uint32_t min_len = 1;
    uint32_t max_len = 0;  // 0: unbounded
    bool has_suffix = false;
    char_class suffix;     // any number of these after the body
    bool case_insensitive = false;  // contraction
};

// One regular expression: alternatives tried in order at each position.
struct split_rule {
    std::vector<split_term> alternatives;
};

struct pre_tokenizer {
    std::string name;
    std::vector<split_rule> rules;
    // The model's BPE keeps a word that is itself a token whole instead of
    // merging it up (Llama 3's tokenizer does; the result can differ).
    bool ignore_merges = false;

    // Cuts `text` into words (byte ranges of `text`, in order, covering it
    // exactly). Invalid UTF-8 bytes are single symbol characters.
    std::vector<std::string_view> split(std::string_view text) const;
};

// The pre-tokenizer named by tokenizer.ggml.pre: default, gpt-2, gpt2,
// llama3 / llama-bpe, qwen2, deepseek-llm, deepseek-coder, falcon,
// starcoder, refact, mpt, gpt-neox, olmo, dbrx, smollm, ... An unknown name
// is an error that names it.
result<pre_tokenizer> make_pre_tokenizer(std::string_view name);

}  // namespace tachyon
