#include "runtime/common/json_scan.h"

namespace tachyon {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Recursive descent; depth is bounded by max_depth, so the stack is too.
class scanner {
public:
    scanner(std::string_view text, int max_depth) : s_(text), max_depth_(max_depth) {}

    std::optional<json_syntax_error> run(std::vector<json_member>* members) {
        skip_ws();
        if (!value(0, members)) return err_;
        skip_ws();
        if (pos_ != s_.size()) fail("unexpected text after the JSON value");
        if (err_) return err_;
        return std::nullopt;
    }

private:
    bool fail(std::string what) {
        if (!err_) err_ = json_syntax_error{pos_, std::move(what)};
        return false;
    }
    void skip_ws() {
        while (pos_ < s_.size() && is_ws(s_[pos_])) ++pos_;
    }
    bool literal(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) return fail("expected a JSON value");
        pos_ += word.size();
        return true;
    }

    bool value(int depth, std::vector<json_member>* members) {
        if (pos_ >= s_.size()) return fail("unexpected end of text; expected a value");
        switch (s_[pos_]) {
            case '{': return object(depth + 1, members);
            case '[': return array(depth + 1);
            case '"': return string();
            case 't': return literal("true");
            case 'f': return literal("false");
            case 'n': return literal("null");
            default:
                if (s_[pos_] == '-' || is_digit(s_[pos_])) return number();
                return fail("expected a JSON value");
        }
    }

    bool object(int depth, std::vector<json_member>* members) {
        if (depth > max_depth_) return fail("nesting deeper than " + std::to_string(max_depth_));
        ++pos_;  // '{'
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == '}') {
            ++pos_;
            return true;
        }
        for (;;) {
            skip_ws();
            if (pos_ >= s_.size() || s_[pos_] != '"') return fail("expected '\"' to start an object key");
            const size_t key_begin = pos_;
            if (!string()) return false;
            const std::string_view key_raw = s_.substr(key_begin, pos_ - key_begin);
            skip_ws();
            if (pos_ >= s_.size() || s_[pos_] != ':') return fail("expected ':' after an object key");
            ++pos_;
            skip_ws();
            const size_t value_begin = pos_;
            if (!value(depth, nullptr)) return false;
            if (members != nullptr) {
                json_member m;
                unescape_json_string(key_raw, m.key);
                m.value = s_.substr(value_begin, pos_ - value_begin);
                members->push_back(std::move(m));
            }
            skip_ws();
            if (pos_ >= s_.size()) return fail("unexpected end of text; expected ',' or '}'");
            if (s_[pos_] == ',') {
                ++pos_;
                continue;
            }
            if (s_[pos_] == '}') {
                ++pos_;
                return true;
            }
            return fail("expected ',' or '}' after an object member");
        }
    }

    bool array(int depth) {
        if (depth > max_depth_) return fail("nesting deeper than " + std::to_string(max_depth_));
        ++pos_;  // '['
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == ']') {
            ++pos_;
            return true;
        }
        for (;;) {
            skip_ws();
            if (!value(depth, nullptr)) return false;
            skip_ws();
            if (pos_ >= s_.size()) return fail("unexpected end of text; expected ',' or ']'");
            if (s_[pos_] == ',') {
                ++pos_;
                continue;
            }
            if (s_[pos_] == ']') {
                ++pos_;
                return true;
            }
            return fail("expected ',' or ']' after an array element");
        }
    }

    bool string() {
        ++pos_;  // '"'
        while (pos_ < s_.size()) {
            const auto c = static_cast<unsigned char>(s_[pos_]);
            if (c == '"') {
                ++pos_;
                return true;
            }
            if (c < 0x20) return fail("control character inside a string (write it as an escape such as \\n)");
            if (c == '\\') {
                ++pos_;
                if (pos_ >= s_.size()) break;
                const char e = s_[pos_];
                if (e == 'u') {
                    for (int i = 1; i <= 4; ++i) {
                        if (pos_ + i >= s_.size() || hex_value(s_[pos_ + i]) < 0) {
                            pos_ += i;
                            return fail("expected 4 hex digits after \\u");
                        }
                    }
                    pos_ += 4;
                } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
                    return fail("invalid escape sequence in a string");
                }
            }
            ++pos_;
        }
        return fail("unterminated string");
    }

    bool number() {
        if (s_[pos_] == '-') ++pos_;
        if (pos_ >= s_.size() || !is_digit(s_[pos_])) return fail("expected a digit in a number");
        if (s_[pos_] == '0') ++pos_;
        else
            while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
        if (pos_ < s_.size() && s_[pos_] == '.') {
            ++pos_;
            if (pos_ >= s_.size() || !is_digit(s_[pos_])) return fail("expected a digit after '.' in a number");
            while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
        }
        if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
            ++pos_;
            if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
            if (pos_ >= s_.size() || !is_digit(s_[pos_])) return fail("expected a digit in a number's exponent");
            while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
        }
        return true;
    }

    std::string_view s_;
    int max_depth_;
    size_t pos_ = 0;
    std::optional<json_syntax_error> err_;
};

void append_utf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

}  // namespace

std::optional<json_syntax_error> check_json(std::string_view text, std::vector<json_member>* members, int max_depth) {
    return scanner(text, max_depth).run(members);
}

bool unescape_json_string(std::string_view q, std::string& out) {
    out.clear();
    if (q.size() < 2 || q.front() != '"' || q.back() != '"') return false;
    for (size_t i = 1; i + 1 < q.size(); ++i) {
        const char c = q[i];
        if (c != '\\') {
            out += c;
            continue;
        }
        if (++i + 1 >= q.size()) return false;
        switch (q[i]) {
            case '"': out += '"'; break;
            case '\\': out += '\\'; break;
            case '/': out += '/'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u': {
                auto read4 = [&](size_t at, uint32_t& v) {
                    if (at + 4 > q.size() - 1) return false;
                    v = 0;
                    for (size_t k = 0; k < 4; ++k) {
                        const int h = hex_value(q[at + k]);
                        if (h < 0) return false;
                        v = v * 16 + static_cast<uint32_t>(h);
                    }
                    return true;
                };
                uint32_t cp = 0;
                if (!read4(i + 1, cp)) return false;
                i += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && i + 2 < q.size() - 1 && q[i + 1] == '\\' && q[i + 2] == 'u') {
                    uint32_t lo = 0;
                    if (read4(i + 3, lo) && lo >= 0xDC00 && lo < 0xE000) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        i += 6;
                    }
                }
                append_utf8(cp, out);
                break;
            }
            default: return false;
        }
    }
    return true;
}

std::string_view json_kind_name(std::string_view raw) {
    if (raw.empty()) return "nothing";
    switch (raw.front()) {
        case '{': return "an object";
        case '[': return "an array";
        case '"': return "a string";
        case 't':
        case 'f': return "a boolean";
        case 'n': return "null";
        default: return "a number";
    }
}

}  // namespace tachyon
