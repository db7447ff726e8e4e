// The regular-expression subset JSON Schema "pattern" accepts here:
//   literals, '.', classes [a-z0-9_-] and [^...], escapes \d \w \s \D \W \S
//   and escaped punctuation (\. \- \\ ...), quantifiers * + ? {n} {n,} {n,m}
//   (bounds up to 64), anchors ^ (first) and $ (last).
// Not supported (a schema error naming the pattern): groups, alternation,
// back-references, lookaround. As JSON Schema says, a pattern matches
// anywhere in the string unless anchored.
// Matching simulates the automaton over a set of states: O(|text| * |pattern|),
// never exponential backtracking.
#pragma once

#include <bitset>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tachyon {

class schema_pattern {
public:
    static result<schema_pattern> compile(std::string_view source);

    bool search(std::string_view text) const;
    const std::string& source() const { return source_; }

    // What the schema's satisfiability check needs to know (json_schema::unsatisfiable):
    // an atom that must match accepts no byte, so no text matches;
    bool matches_nothing() const;
    // the bytes of the shortest match;
    size_t min_match_bytes() const;
    // anchored at both ends without an unbounded repeat: the bytes of the
    // longest matching text (a text is the match itself); otherwise none;
    std::optional<size_t> max_text_bytes() const;
    // every atom accepts ASCII bytes only (a byte is then a character).
    bool ascii_only() const;

private:
    struct atom {
        std::bitset<256> bytes;  // bytes the atom accepts
        enum class rep { one, optional, star } repeat = rep::one;
    };
    std::string source_;
    std::vector<atom> atoms_;  // [n_atoms] in order; {n,m} expanded into copies
    bool anchored_start_ = false;
    bool anchored_end_ = false;
};

}  // namespace tachyon
