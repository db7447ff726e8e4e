// A JSON value with its object keys in document order, and the two ways a
// chat template writes one: `tojson` (Python's json.dumps with ", " and ": "
// separators, non-ASCII kept, optional indent) and Python's str() of a dict
// (single quotes, True/False/None), which templates print when they forget
// `tojson`. Tool schemas and call arguments reach the renderers as text and
// are parsed once here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace tachyon::formats {

class json_value {
public:
    enum class kind { null, boolean, integer, number, string, array, object };

    json_value() = default;
    static json_value of_string(std::string s);

    // Errors name `what` and where the text stops being JSON.
    static result<json_value> parse(std::string_view text, std::string_view what);

    kind type() const { return kind_; }
    bool is_object() const { return kind_ == kind::object; }
    bool is_string() const { return kind_ == kind::string; }
    const std::string& str() const { return string_; }  // kind::string
    const std::vector<json_value>& items() const { return items_; }  // kind::array
    const std::vector<std::pair<std::string, json_value>>& members() const { return members_; }  // kind::object
    // The member named `key`, or null when absent (or not an object).
    const json_value* find(std::string_view key) const;

    // json.dumps(v, ensure_ascii=False): indent < 0 is one line with ", "
    // and ": "; indent >= 0 puts each item on its own line (",", ": ").
    std::string dumps(int indent = -1) const;
    // Python's str() of the parsed value: {'k': 'v', 'n': 5, 'b': True}.
    std::string python_repr() const;

private:
    friend struct json_builder;
    void dump_to(std::string& out, int indent, int level) const;
    void repr_to(std::string& out) const;

    kind kind_ = kind::null;
    bool boolean_ = false;
    int64_t integer_ = 0;
    double number_ = 0;
    std::string string_;
    std::vector<json_value> items_;
    std::vector<std::pair<std::string, json_value>> members_;
};

// `s` as json.dumps(s, ensure_ascii=False) writes it: quotes, \" \\ \n \r \t
// \b \f, other control characters as \u00XX, everything else as is.
void append_python_json_string(std::string& out, std::string_view s);

}  // namespace tachyon::formats
