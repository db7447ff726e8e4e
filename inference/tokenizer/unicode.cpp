#include "inference/tokenizer/unicode.h"

#include <algorithm>
#include <array>

namespace tachyon::unicode {
namespace {

struct category_range {
    uint32_t first;
    uint32_t last;
    uint8_t flags;
};

#include "inference/tokenizer/unicode_tables.inc"

// White_Space (PropList.txt); stable since Unicode 6.
constexpr uint32_t white_space[] = {
    0x0009, 0x000A, 0x000B, 0x000C, 0x000D, 0x0020, 0x0085, 0x00A0, 0x1680,
    0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008,
    0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
};

uint8_t lookup_flags(uint32_t cp) {
    // Binary search over ~1.5k ranges: ~11 probes.
    const auto* end = std::end(category_ranges);
    const auto* it = std::upper_bound(std::begin(category_ranges), end, cp,
                                      [](uint32_t v, const category_range& r) { return v < r.first; });
    uint8_t flags = cp_other;
    if (it != std::begin(category_ranges)) {
        const auto& r = *(it - 1);
        if (cp <= r.last) flags = r.flags;
    }
    if (std::binary_search(std::begin(white_space), std::end(white_space), cp)) flags |= cp_whitespace;
    return flags;
}

// Latin-1 is most of what tokenizers see: answer it from a table.
const std::array<uint8_t, 256>& latin1_flags() {
    static const std::array<uint8_t, 256> table = [] {
        std::array<uint8_t, 256> t{};
        for (uint32_t cp = 0; cp < 256; ++cp) t[cp] = lookup_flags(cp);
        return t;
    }();
    return table;
}

}  // namespace

uint8_t flags_of(uint32_t cp) {
    if (cp < 256) return latin1_flags()[cp];
    return lookup_flags(cp);
}

uint32_t tables_version_major() { return unicode_version_major; }

size_t sequence_length(uint8_t lead) {
    if (lead < 0x80) return 1;
    if (lead < 0xC2) return 0;  // continuation byte, or overlong C0/C1
    if (lead < 0xE0) return 2;
    if (lead < 0xF0) return 3;
    if (lead < 0xF5) return 4;
    return 0;
}

decoded_char decode_utf8(std::string_view text, size_t pos) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
    const uint8_t lead = byte(pos);
    const decoded_char invalid{replacement_char, 1, false};
    const size_t n = sequence_length(lead);
    if (n == 0) return invalid;
    if (n == 1) return {lead, 1, true};
    if (pos + n > text.size()) return invalid;
    uint32_t cp = lead & (0x7F >> n);
    for (size_t i = 1; i < n; ++i) {
        const uint8_t b = byte(pos + i);
        if ((b & 0xC0) != 0x80) return invalid;
        cp = (cp << 6) | (b & 0x3F);
    }
    // Reject overlong forms, surrogates and values past U+10FFFF.
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > max_code_point ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
        return invalid;
    }
    return {cp, static_cast<uint32_t>(n), true};
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp > max_code_point || (cp >= 0xD800 && cp <= 0xDFFF)) cp = replacement_char;
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

std::string to_utf8(uint32_t cp) {
    std::string s;
    append_utf8(s, cp);
    return s;
}

std::vector<uint32_t> to_code_points(std::string_view text) {
    std::vector<uint32_t> cps;
    cps.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        const decoded_char d = decode_utf8(text, pos);
        cps.push_back(d.cp);
        pos += d.n_bytes;
    }
    return cps;
}

size_t complete_prefix_length(std::string_view text) {
    // Only the last 3 bytes can belong to an unfinished sequence.
    const size_t n = text.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const uint8_t b = static_cast<uint8_t>(text[n - back]);
        if ((b & 0xC0) == 0x80) continue;  // continuation: look further back
        const size_t need = sequence_length(b);
        // A lead byte whose sequence runs past the end: hold it back.
        if (need > back) return n - back;
        return n;
    }
    return n;
}

}  // namespace tachyon::unicode
