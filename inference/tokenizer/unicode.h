// Unicode support for the tokenizers: UTF-8 decoding that survives invalid
// bytes, UTF-8 encoding, and the general-category classes that pre-tokenizer
// patterns name (\p{L}, \p{N}, \p{P}, \s ...). Tables are generated from
// Unicode 14.0 (inference/tools_gen/gen_unicode_tables.py).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tachyon::unicode {

inline constexpr uint32_t replacement_char = 0xFFFD;
inline constexpr uint32_t max_code_point = 0x10FFFF;

// Category classes, one bit each so that a pattern's character class is a
// mask. `whitespace` is the White_Space property (what \s matches), which
// cuts across categories (TAB is Cc, SPACE is Zs).
enum cp_flags : uint8_t {
    cp_letter = 1 << 0,       // L*
    cp_number = 1 << 1,       // N*
    cp_punctuation = 1 << 2,  // P*
    cp_symbol = 1 << 3,       // S*
    cp_mark = 1 << 4,         // M*
    cp_separator = 1 << 5,    // Z*
    cp_other = 1 << 6,        // C* and unassigned
    cp_whitespace = 1 << 7,   // White_Space property
};

// Class bits of `cp` (one category bit, plus cp_whitespace where it applies).
uint8_t flags_of(uint32_t cp);

inline bool is_letter(uint32_t cp) { return flags_of(cp) & cp_letter; }
inline bool is_number(uint32_t cp) { return flags_of(cp) & cp_number; }
inline bool is_punctuation(uint32_t cp) { return flags_of(cp) & cp_punctuation; }
inline bool is_whitespace(uint32_t cp) { return flags_of(cp) & cp_whitespace; }

struct decoded_char {
    uint32_t cp = 0;       // replacement_char when the bytes were invalid
    uint32_t n_bytes = 0;  // bytes consumed: 1..4, never 0 for a non-empty input
    bool valid = false;
};

// Decodes the character starting at `pos` (pos < text.size()). An invalid
// or truncated sequence, an overlong form or a surrogate consumes exactly one
// byte and yields replacement_char, so that every byte is visited once and
// byte-level tokenizers keep the original bytes.
decoded_char decode_utf8(std::string_view text, size_t pos);

// Appends the UTF-8 encoding of `cp` (replacement_char if out of range or a
// surrogate).
void append_utf8(std::string& out, uint32_t cp);
std::string to_utf8(uint32_t cp);

// All code points of `text` (invalid bytes become replacement_char).
std::vector<uint32_t> to_code_points(std::string_view text);

// Length of the sequence a lead byte announces (1..4), or 0 for a
// continuation or invalid byte.
size_t sequence_length(uint8_t lead);

// Length of the longest prefix of `text` that does not end inside an
// incomplete (but so far valid) multi-byte sequence: what a streaming
// decoder can emit now; the rest waits for more bytes.
size_t complete_prefix_length(std::string_view text);

// The Unicode version the category tables were generated from.
uint32_t tables_version_major();

}  // namespace tachyon::unicode
