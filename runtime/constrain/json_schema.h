// A JSON Schema subset for tool arguments and final answers, compiled once
// and used twice: to validate a finished JSON text (validate) and to drive
// constrained decoding (runtime/constrain/json_grammar.h walks the compiled nodes).
//
// Keywords: type (object, array, string, integer, number, boolean, null, or
// an array of them), properties, required, additionalProperties (false, or
// true/absent), enum, const, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum (numbers), minLength, maxLength, pattern (the subset in
// runtime/constrain/schema_pattern.h), items, minItems, maxItems, and the extension
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
//
// parse() reads the keywords; unsatisfiable() then tells whether every
// subschema admits a value that constrained decoding can write (no empty
// enum, minLength <= maxLength, ...). Each entry point of a schema (HTTP
// requests, agent files, SDK tools) refuses one that does not, naming the
// keyword's path, so the decoder never starts on a grammar it cannot finish.
//
// When both "enum" and "const" are given, the node takes the const if the
// enum lists it, and nothing otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "runtime/constrain/schema_pattern.h"

namespace tachyon {

// Bits of schema_node::types.
namespace json_types {
inline constexpr uint8_t null = 1, boolean = 2, integer = 4, number = 8, string = 16, array = 32, object = 64;
inline constexpr uint8_t any = 127;
}  // namespace json_types

// Bounded numbers (a minimum or maximum given) as constrained decoding
// writes them: no exponent, at most 18 integer digits and 9 fraction digits
// (integers: no fraction). A magnitude is a grid index: w * 10^9 + f, the
// integer part w and the nine fraction digits f.
__extension__ typedef unsigned __int128 number_grid_index;
inline constexpr uint64_t k_grid_fraction = 1000000000;                  // 10^9 grid steps per unit
inline constexpr uint64_t k_grid_integer_limit = 1000000000000000000ull;  // 10^18: integer parts stay below

struct schema_node;

// Whether a number of sign `negative` whose magnitude is a grid index in
// [g0, g1] (integers: a multiple of 10^9) lies within the node's bounds, as
// the validator compares them: the text's double against the bounds.
bool bounded_number_in(const schema_node& s, bool negative, number_grid_index g0, number_grid_index g1);

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
    // Whether the JSON text `value_json` is valid for node `index` (grounding not checked).
    bool node_accepts(int index, std::string_view value_json) const;

    // Why no value satisfies the schema, if so: the first subschema that
    // admits no value (or none constrained decoding can write: bounded
    // numbers, see number_grid_index). `path` is the keyword's path inside
    // the schema ("properties.a.enum", "items.minLength"), `what` says why
    // and what was expected ("empty enum (expected at least one value)").
    struct conflict {
        std::string path;
        std::string what;
    };
    std::optional<conflict> unsatisfiable() const;

    // Deepest nesting of subschemas (properties, items) parse accepts.
    static constexpr int max_depth = 32;

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
