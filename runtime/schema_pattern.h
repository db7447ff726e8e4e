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
