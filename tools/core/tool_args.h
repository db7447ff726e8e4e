// Arguments of a tool call: a JSON object checked key by key, with errors
// written for the model to read ("search_logs: 'limit' must be an integer
// from 1 to 50; got 500"). The runtime validates against the schema first;
// the tools check again because they are also called directly.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tachyon::tools {

class tool_args {
public:
    // Fails on malformed JSON, a non-object, or a key outside `allowed`.
    static result<tool_args> parse(std::string_view tool, std::string_view json,
                                   const std::vector<std::string_view>& allowed);

    result<std::optional<std::string>> string(std::string_view key) const;
    result<std::string> required_string(std::string_view key) const;
    result<std::optional<std::int64_t>> integer(std::string_view key, std::int64_t min, std::int64_t max) const;
    result<std::optional<bool>> boolean(std::string_view key) const;
    result<std::vector<std::string>> string_list(std::string_view key, std::size_t max_items) const;

    error fail(std::string message) const;  // "<tool>: <message>", invalid_argument

private:
    struct value {
        enum class kind { string, integer, number, boolean, array, object, null } type = kind::null;
        std::string text;  // string value, or the raw JSON of other kinds
        std::int64_t integer = 0;
        bool boolean = false;
        std::vector<std::string> strings;  // array of strings
        bool all_strings = true;           // array: every item a string
    };
    static std::string_view kind_name(value::kind k);
    std::string tool_;
    std::map<std::string, value, std::less<>> values_;
};

}  // namespace tachyon::tools
