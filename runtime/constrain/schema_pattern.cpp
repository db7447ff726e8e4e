#include "runtime/constrain/schema_pattern.h"

namespace tachyon {

namespace {

std::bitset<256> class_of(char e) {
    std::bitset<256> b;
    auto range = [&](int lo, int hi) {
        for (int c = lo; c <= hi; ++c) b.set(static_cast<size_t>(c));
    };
    switch (e) {
        case 'd': range('0', '9'); break;
        case 'D': range('0', '9'); b.flip(); break;
        case 'w': range('0', '9'); range('a', 'z'); range('A', 'Z'); b.set('_'); break;
        case 'W': range('0', '9'); range('a', 'z'); range('A', 'Z'); b.set('_'); b.flip(); break;
        case 's': for (char c : std::string_view(" \t\n\r\f\v")) b.set(static_cast<unsigned char>(c)); break;
        case 'S': for (char c : std::string_view(" \t\n\r\f\v")) b.set(static_cast<unsigned char>(c)); b.flip(); break;
        case 'n': b.set('\n'); break;
        case 't': b.set('\t'); break;
        case 'r': b.set('\r'); break;
        default: b.set(static_cast<unsigned char>(e)); break;
    }
    return b;
}

}  // namespace

result<schema_pattern> schema_pattern::compile(std::string_view src) {
    auto bad = [&](const std::string& why) {
        return make_error(errc::invalid_argument, "pattern '" + std::string(src) + "': " + why);
    };
    schema_pattern p;
    p.source_ = std::string(src);
    std::string_view s = src;
    if (!s.empty() && s.front() == '^') {
        p.anchored_start_ = true;
        s.remove_prefix(1);
    }
    if (!s.empty() && s.back() == '$' && (s.size() < 2 || s[s.size() - 2] != '\\')) {
        p.anchored_end_ = true;
        s.remove_suffix(1);
    }
    size_t i = 0;
    while (i < s.size()) {
        std::bitset<256> b;
        const char c = s[i++];
        if (c == '(' || c == ')' || c == '|') return bad(std::string("'") + c + "' (groups and alternation) is not supported");
        if (c == '^' || c == '$') return bad("anchors are supported only at the start and the end");
        if (c == '*' || c == '+' || c == '?' || c == '{') return bad(std::string("'") + c + "' has nothing to repeat");
        if (c == '.') {
            b.set();
            b.reset('\n');
        } else if (c == '\\') {
            if (i >= s.size()) return bad("ends with '\\'");
            b = class_of(s[i++]);
        } else if (c == '[') {
            bool negate = false;
            if (i < s.size() && s[i] == '^') {
                negate = true;
                ++i;
            }
            bool closed = false;
            bool first = true;
            while (i < s.size()) {
                char lo = s[i++];
                if (lo == ']' && !first) {
                    closed = true;
                    break;
                }
                first = false;
                if (lo == '\\') {
                    if (i >= s.size()) break;
                    const char e = s[i++];
                    b |= class_of(e);
                    continue;
                }
                if (i + 1 < s.size() && s[i] == '-' && s[i + 1] != ']') {
                    char hi = s[i + 1];
                    i += 2;
                    if (hi == '\\' && i < s.size()) hi = s[i++];
                    if (static_cast<unsigned char>(hi) < static_cast<unsigned char>(lo)) return bad("reversed range in a class");
                    for (int k = static_cast<unsigned char>(lo); k <= static_cast<unsigned char>(hi); ++k)
                        b.set(static_cast<size_t>(k));
                } else {
                    b.set(static_cast<unsigned char>(lo));
                }
            }
            if (!closed) return bad("unterminated '['");
            if (negate) b.flip();
        } else {
            b.set(static_cast<unsigned char>(c));
        }
        // Quantifier.
        int lo = 1, hi = 1;  // hi < 0: unbounded
        if (i < s.size()) {
            const char q = s[i];
            if (q == '*') lo = 0, hi = -1, ++i;
            else if (q == '+') lo = 1, hi = -1, ++i;
            else if (q == '?') lo = 0, hi = 1, ++i;
            else if (q == '{') {
                const size_t close = s.find('}', i);
                if (close == std::string_view::npos) return bad("unterminated '{'");
                const std::string body(s.substr(i + 1, close - i - 1));
                const size_t comma = body.find(',');
                try {
                    lo = std::stoi(body.substr(0, comma));
                    if (comma == std::string::npos) hi = lo;
                    else if (comma + 1 == body.size()) hi = -1;
                    else hi = std::stoi(body.substr(comma + 1));
                } catch (...) {
                    return bad("bad repetition '{" + body + "}'");
                }
                if (lo < 0 || lo > 64 || hi > 64 || (hi >= 0 && hi < lo)) return bad("repetition '{" + body + "}' out of range (0..64)");
                i = close + 1;
            }
        }
        for (int k = 0; k < lo; ++k) p.atoms_.push_back({b, atom::rep::one});
        if (hi < 0) p.atoms_.push_back({b, atom::rep::star});
        else
            for (int k = lo; k < hi; ++k) p.atoms_.push_back({b, atom::rep::optional});
    }
    return p;
}

bool schema_pattern::matches_nothing() const {
    for (const auto& a : atoms_)
        if (a.repeat == atom::rep::one && a.bytes.none()) return true;
    return false;
}

size_t schema_pattern::min_match_bytes() const {
    size_t n = 0;
    for (const auto& a : atoms_) n += a.repeat == atom::rep::one;
    return n;
}

std::optional<size_t> schema_pattern::max_text_bytes() const {
    if (!anchored_start_ || !anchored_end_) return std::nullopt;
    size_t n = 0;
    for (const auto& a : atoms_) {
        if (a.repeat == atom::rep::star) return std::nullopt;
        if (a.bytes.any()) ++n;  // an optional atom that accepts nothing is always skipped
    }
    return n;
}

bool schema_pattern::ascii_only() const {
    for (const auto& a : atoms_)
        for (size_t c = 0x80; c < 256; ++c)
            if (a.bytes.test(c)) return false;
    return true;
}

bool schema_pattern::search(std::string_view text) const {
    const size_t n = atoms_.size();
    // states[k]: positions in the pattern reachable after the text so far; k == n is a match.
    std::vector<uint8_t> cur(n + 1, 0), next(n + 1, 0);
    auto close = [&](std::vector<uint8_t>& st) {  // optional/star atoms may be skipped
        for (size_t k = 0; k < n; ++k)
            if (st[k] && atoms_[k].repeat != atom::rep::one) st[k + 1] = 1;
    };
    cur[0] = 1;
    close(cur);
    if (cur[n] && !anchored_end_) return true;
    for (size_t pos = 0; pos < text.size(); ++pos) {
        std::fill(next.begin(), next.end(), 0);
        const auto c = static_cast<unsigned char>(text[pos]);
        for (size_t k = 0; k < n; ++k) {
            if (!cur[k] || !atoms_[k].bytes.test(c)) continue;
            if (atoms_[k].repeat == atom::rep::star) next[k] = 1;
            next[k + 1] = 1;
        }
        if (!anchored_start_) next[0] = 1;  // a match may start at any position
        close(next);
        if (next[n] && !anchored_end_) return true;
        cur.swap(next);
    }
    return cur[n] != 0;
}

}  // namespace tachyon
