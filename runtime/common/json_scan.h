// A small JSON syntax checker that reports where a text stops being JSON
// (byte offset and what was expected) and the raw text of an object's
// top-level members. simdjson parses faster but names no offset, and the
// tool-call parser must tell the model where its JSON went wrong and hand the
// "arguments" object on as the model wrote it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tachyon {

struct json_syntax_error {
    size_t offset = 0;  // bytes from the start of the checked text
    std::string what;   // "expected ':' after an object key"
};

struct json_member {
    std::string key;         // unescaped
    std::string_view value;  // raw text of the value, a view into the checked text
};

// Checks that `text` is exactly one JSON value (whitespace around allowed),
// nesting at most `max_depth` deep. When the value is an object and
// `members` is given, its top-level members are appended in order.
std::optional<json_syntax_error> check_json(std::string_view text, std::vector<json_member>* members = nullptr,
                                            int max_depth = 64);

// Unescapes a JSON string literal given with its quotes; false if it is not one.
bool unescape_json_string(std::string_view quoted, std::string& out);

// "an object", "a string", ... for the first byte of a raw JSON value.
std::string_view json_kind_name(std::string_view raw_value);

// Follows the nesting of a JSON text byte by byte, to find where a top-level
// object ends in a stream without parsing it. Malformed text still ends when
// brackets balance; the full check comes after.
class json_depth_tracker {
public:
    // Returns true when `c` closes the top-level value.
    bool push(char c) {
        if (in_string_) {
            if (escape_) escape_ = false;
            else if (c == '\\') escape_ = true;
            else if (c == '"') in_string_ = false;
            return false;
        }
        if (c == '"') in_string_ = true;
        else if (c == '{' || c == '[') ++depth_;
        else if ((c == '}' || c == ']') && depth_ > 0) return --depth_ == 0;
        return false;
    }
    void reset() { *this = json_depth_tracker{}; }

private:
    int64_t depth_ = 0;
    bool in_string_ = false;
    bool escape_ = false;
};

}  // namespace tachyon
