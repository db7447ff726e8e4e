// Writing JSON text by hand, in a fixed key order and with the separators the
// prompt format uses (", " and ": "), so that the same object always renders
// to the same bytes.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace incident {

// Appends `s` as a JSON string literal (with quotes) to `out`.
void append_json_string(std::string& out, std::string_view s);
std::string json_string(std::string_view s);

// An object whose members keep the order they were added in. Values are
// JSON text already (use json_string for strings).
class json_object {
public:
    json_object& raw(std::string_view key, std::string value_json);
    json_object& str(std::string_view key, std::string_view value);
    json_object& num(std::string_view key, long long value);
    json_object& str_array(std::string_view key, const std::vector<std::string>& values);
    bool empty() const { return members_.empty(); }
    // {"a": 1, "b": "x"}  (pretty = false gives {"a":1,"b":"x"})
    std::string text(bool spaced = true) const;

private:
    std::vector<std::pair<std::string, std::string>> members_;
};

}  // namespace incident
