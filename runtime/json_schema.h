// A JSON Schema subset for tool arguments and final answers, compiled once
// and used twice: to validate a finished JSON text (validate) and to drive
// constrained decoding (runtime/json_grammar.h walks the compiled nodes).
//
// Keywords: type (object, array, string, integer, number, boolean, null, or
// an array of them), properties, required, additionalProperties (false, or
// true/absent), enum, const, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum (numbers), minLength, maxLength, pattern (the subset in
// runtime/schema_pattern.h), items, minItems, maxItems, and the extension
// "x-grounded": true: a string whose value must be one of the run's grounded
// values (ids, service names seen in the task or in tool results), and
// "x-grounded-with": "NAME" beside it: once the sibling property NAME (itself
// grounded) is written, the decoder offers only the values seen on a line
// that also names NAME's value (a timestamp or line id seen with the chosen
// service); when no line pairs them, every grounded value. Other
// keywords (description, title, default, ...) are ignored. A keyword with a
// value of the wrong kind is an error naming the keyword and its path.
//
// Errors are written for the model to read and name the tool and the
// argument: "search_logs: argument 'limit' must be an integer <= 50; got 80".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "runtime/schema_pattern.h"

namespace tachyon {

// Bits of schema_node::types.
namespace json_types {
inline constexpr uint8_t null = 1, boolean = 2, integer = 4, number = 8, string = 16, array = 32, object = 64;
inline constexpr uint8_t any = 127;
}  // namespace json_types

struct schema_node {
    uint8_t types = json_types::any;                     // allowed kinds; number includes integer
    std::vector<std::pair<std::string, int>> properties;  // [n_properties] name → node index, schema order
    std::vector<std::string> required;
    bool additional_properties = true;   // false: only the listed properties
    bool has_enum = false;               // enum or const given
    bool is_const = false;
    std::vector<std::string> enum_json;  // [n_values] allowed values as minified JSON
    std::optional<double> minimum, maximum;
    bool exclusive_minimum = false, exclusive_maximum = false;
    std::optional<uint64_t> min_length, max_length;  // in code points
    std::shared_ptr<const schema_pattern> pattern;
    int items = -1;                      // node index of the item schema, -1: any
    std::optional<uint64_t> min_items, max_items;
    bool unique_items = false;           // "uniqueItems": true
    bool grounded = false;               // "x-grounded": true
    std::string grounded_with;           // "x-grounded-with": sibling property that narrows the values

    int property(std::string_view name) const {
        for (const auto& [n, idx] : properties)
            if (n == name) return idx;
        return -1;
    }
};

// The values grounded fields may take, per path: "service", "filter.service",
// "evidence[]" (items of an array). A path without its own entry uses `all`.
struct grounded_values {
    std::map<std::string, std::vector<std::string>, std::less<>> by_path;
    std::vector<std::string> all;
    std::vector<std::string> texts;  // where the values were seen (task, tool results), for "x-grounded-with"

    const std::vector<std::string>& for_path(std::string_view path) const {
        auto it = by_path.find(path);
        return it != by_path.end() ? it->second : all;
    }
};

class json_schema {
public:
    // `label` starts every message ("search_logs", "final answer"); `noun`
    // names a member ("argument", "field").
    static result<json_schema> parse(std::string_view schema_json, std::string label = "arguments",
                                     std::string noun = "argument");
    // An object schema allowing anything (a tool that declared no schema).
    static json_schema any_object(std::string label = "arguments", std::string noun = "argument");

    // Validates a JSON text. With `grounding`, grounded strings must be one of
    // the values for their path; without, grounding is not checked.
    status validate(std::string_view instance_json, const grounded_values* grounding = nullptr) const;

    const schema_node& root() const { return nodes_[0]; }
    const schema_node& node(int index) const { return nodes_[static_cast<size_t>(index)]; }
    size_t n_nodes() const { return nodes_.size(); }
    const std::string& label() const { return label_; }

private:
    friend class schema_compiler;
    friend class schema_checker;
    std::vector<schema_node> nodes_;  // [n_nodes]; 0 is the root
    std::string label_;
    std::string noun_;
};

}  // namespace tachyon
