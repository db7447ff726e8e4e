#include "runtime/constrain/json_schema.h"

#include <algorithm>
#include <cmath>
#include <simdjson.h>

#include "runtime/common/json_util.h"

namespace tachyon {

namespace dom = simdjson::dom;

namespace {

constexpr size_t k_max_errors = 8;

std::string format_number(double v) {
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
    std::string s = std::to_string(v);
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

std::string excerpt(const std::string& json) {
    if (json.size() <= 60) return json;
    return json.substr(0, 57) + "...";
}


std::string types_phrase(uint8_t t) {
    if (t == json_types::any) return "any value";
    std::vector<std::string> words;
    if (t & json_types::object) words.emplace_back("an object");
    if (t & json_types::array) words.emplace_back("an array");
    if (t & json_types::string) words.emplace_back("a string");
    if (t & json_types::number) words.emplace_back("a number");
    else if (t & json_types::integer) words.emplace_back("an integer");
    if (t & json_types::boolean) words.emplace_back("a boolean");
    if (t & json_types::null) words.emplace_back("null");
    std::string s;
    for (size_t i = 0; i < words.size(); ++i) s += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
    return s;
}

size_t utf8_length(std::string_view s) {
    size_t n = 0;
    for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

}  // namespace

// Turns a schema document into nodes; errors name the keyword's path.
class schema_compiler {
public:
    explicit schema_compiler(json_schema& out) : out_(out) {}

    result<int> compile(dom::element el, const std::string& path, int depth) {
        auto bad = [&](std::string_view key, const std::string& what) {
            return make_error(errc::invalid_argument, "schema of " + out_.label_ + ": '" + path +
                                                          (path.empty() ? "" : ".") + std::string(key) + "' " + what);
        };
        if (depth > json_schema::max_depth)
            return make_error(errc::invalid_argument, "schema of " + out_.label_ + ": nested deeper than " +
                                                          std::to_string(json_schema::max_depth) + " at '" + path + "'");
        dom::object obj;
        if (el.get_object().get(obj) != simdjson::SUCCESS)
            return make_error(errc::invalid_argument,
                              "schema of " + out_.label_ + ": '" + (path.empty() ? "(root)" : path) + "' must be a schema object");
        const int index = static_cast<int>(out_.nodes_.size());
        out_.nodes_.emplace_back();
        auto node = [&]() -> schema_node& { return out_.nodes_[static_cast<size_t>(index)]; };
        for (auto field : obj) {
            const std::string_view key = field.key;
            const dom::element v = field.value;
            if (key == "type") {
                uint8_t bits = 0;
                auto add = [&](std::string_view name) -> bool {
                    if (name == "object") bits |= json_types::object;
                    else if (name == "array") bits |= json_types::array;
                    else if (name == "string") bits |= json_types::string;
                    else if (name == "integer") bits |= json_types::integer;
                    else if (name == "number") bits |= json_types::number | json_types::integer;
                    else if (name == "boolean") bits |= json_types::boolean;
                    else if (name == "null") bits |= json_types::null;
                    else return false;
                    return true;
                };
                if (v.is_string()) {
                    if (!add(std::string_view(v.get_string().value())))
                        return bad(key, "names an unknown type '" + std::string(v.get_string().value()) + "'");
                } else if (v.is_array()) {
                    const dom::array types = v.get_array().value();
                    for (dom::element t : types) {
                        if (!t.is_string() || !add(std::string_view(t.get_string().value())))
                            return bad(key, "must list type names (object, array, string, integer, number, boolean, null)");
                    }
                } else {
                    return bad(key, "must be a type name or an array of them");
                }
                node().types = bits;
            } else if (key == "properties") {
                dom::object props;
                if (v.get_object().get(props) != simdjson::SUCCESS) return bad(key, "must be an object of schemas");
                for (auto p : props) {
                    auto child = compile(p.value, path + (path.empty() ? "" : ".") + "properties." + std::string(p.key), depth + 1);
                    if (!child.ok()) return child.err();
                    node().properties.emplace_back(std::string(p.key), *child);
                }
            } else if (key == "required") {
                if (!v.is_array()) return bad(key, "must be an array of property names");
                const dom::array names = v.get_array().value();
                for (dom::element r : names) {
                    if (!r.is_string()) return bad(key, "must be an array of property names");
                    node().required.emplace_back(r.get_string().value());
                }
            } else if (key == "additionalProperties") {
                if (v.is_bool()) node().additional_properties = v.get_bool().value();
                else if (!v.is_object()) return bad(key, "must be a boolean or a schema");
            } else if (key == "enum") {
                if (!v.is_array()) return bad(key, "must be an array of values");
                std::vector<std::string> values;
                const dom::array list = v.get_array().value();
                for (dom::element e : list) values.push_back(simdjson::minify(e));
                restrict_values(node(), std::move(values));
            } else if (key == "const") {
                restrict_values(node(), {simdjson::minify(v)});
                node().is_const = true;
            } else if (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" || key == "exclusiveMaximum") {
                const bool is_min = key == "minimum" || key == "exclusiveMinimum";
                const bool exclusive = key.starts_with("exclusive");
                if (exclusive && v.is_bool()) {  // draft 4: a flag on minimum/maximum
                    (is_min ? node().exclusive_minimum : node().exclusive_maximum) = v.get_bool().value();
                    continue;
                }
                if (!v.is_number()) return bad(key, "must be a number");
                const double d = v.get_double().value();
                (is_min ? node().minimum : node().maximum) = d;
                if (exclusive) (is_min ? node().exclusive_minimum : node().exclusive_maximum) = true;
            } else if (key == "minLength" || key == "maxLength" || key == "minItems" || key == "maxItems") {
                uint64_t n = 0;
                if (v.is_int64() && v.get_int64().value() >= 0) n = static_cast<uint64_t>(v.get_int64().value());
                else if (v.is_uint64()) n = v.get_uint64().value();
                else return bad(key, "must be a non-negative integer");
                if (key == "minLength") node().min_length = n;
                else if (key == "maxLength") node().max_length = n;
                else if (key == "minItems") node().min_items = n;
                else node().max_items = n;
            } else if (key == "pattern") {
                if (!v.is_string()) return bad(key, "must be a string");
                auto p = schema_pattern::compile(std::string_view(v.get_string().value()));
                if (!p.ok()) return bad(key, p.err().message);
                node().pattern = std::make_shared<const schema_pattern>(std::move(*p));
            } else if (key == "items") {
                if (!v.is_object()) return bad(key, "must be a schema object (tuple items are not supported)");
                auto child = compile(v, path + (path.empty() ? "" : ".") + "items", depth + 1);
                if (!child.ok()) return child.err();
                node().items = *child;
            } else if (key == "uniqueItems") {
                if (!v.is_bool()) return bad(key, "must be a boolean");
                node().unique_items = v.get_bool().value();
            } else if (key == "x-grounded") {
                if (!v.is_bool()) return bad(key, "must be a boolean");
                node().grounded = v.get_bool().value();
            } else if (key == "x-grounded-with") {
                if (!v.is_string() || v.get_string().value().empty()) return bad(key, "must be a property name");
                node().grounded_with = std::string(v.get_string().value());
            }
            // Any other keyword (description, title, default, format, ...) is ignored.
        }
        return index;
    }

private:
    // "enum" and "const" both hold: a node given both keeps the values in both.
    static void restrict_values(schema_node& n, std::vector<std::string> values) {
        if (n.has_enum)
            std::erase_if(n.enum_json, [&](const std::string& e) { return std::find(values.begin(), values.end(), e) == values.end(); });
        else
            n.enum_json = std::move(values);
        n.has_enum = true;
    }

    json_schema& out_;
};

// Checks an instance against the nodes, collecting messages.
class schema_checker {
public:
    schema_checker(const json_schema& s, const grounded_values* g) : s_(s), g_(g) {}

    void check(dom::element el, int index, const std::string& path, const std::string& gpath) {
        if (errors_.size() >= k_max_errors) return;
        const schema_node& n = s_.node(index);
        const auto type = el.type();
        bool integral = type == dom::element_type::INT64 || type == dom::element_type::UINT64;
        if (type == dom::element_type::DOUBLE) {
            const double d = el.get_double().value();
            integral = std::isfinite(d) && d == std::floor(d);
        }
        uint8_t kind = 0;
        switch (type) {
            case dom::element_type::ARRAY: kind = json_types::array; break;
            case dom::element_type::OBJECT: kind = json_types::object; break;
            case dom::element_type::INT64:
            case dom::element_type::UINT64:
            case dom::element_type::DOUBLE: kind = integral ? json_types::integer : json_types::number; break;
            case dom::element_type::STRING: kind = json_types::string; break;
            case dom::element_type::BOOL: kind = json_types::boolean; break;
            case dom::element_type::NULL_VALUE: kind = json_types::null; break;
        }
        if ((n.types & kind) == 0) {
            return fail(path, "must be " + types_phrase(n.types) + "; got " + json::kind_name(el.type()) + " " + excerpt(simdjson::minify(el)));
        }
        if (n.has_enum) {
            const std::string v = simdjson::minify(el);
            bool found = false;
            for (const auto& e : n.enum_json) found = found || e == v;
            if (!found) {
                std::string list;
                for (size_t i = 0; i < n.enum_json.size(); ++i) list += (i ? ", " : "") + n.enum_json[i];
                return fail(path, (n.is_const ? "must be " : "must be one of ") + list + "; got " + excerpt(v));
            }
        }
        if (kind == json_types::integer || kind == json_types::number) {
            const double d = el.get_double().value();
            const bool low = n.minimum && (n.exclusive_minimum ? d <= *n.minimum : d < *n.minimum);
            const bool high = n.maximum && (n.exclusive_maximum ? d >= *n.maximum : d > *n.maximum);
            if (low || high) {
                std::string what = (n.types & json_types::number) ? "a number" : "an integer";
                if (n.minimum) what += std::string(n.exclusive_minimum ? " > " : " >= ") + format_number(*n.minimum);
                if (n.minimum && n.maximum) what += " and";
                if (n.maximum) what += std::string(n.exclusive_maximum ? " < " : " <= ") + format_number(*n.maximum);
                return fail(path, "must be " + what + "; got " + simdjson::minify(el));
            }
        } else if (kind == json_types::string) {
            const std::string_view s = el.get_string().value();
            const size_t len = utf8_length(s);
            if ((n.min_length && len < *n.min_length) || (n.max_length && len > *n.max_length)) {
                std::string what = "a string of";
                if (n.min_length) what += " at least " + std::to_string(*n.min_length);
                if (n.min_length && n.max_length) what += " and";
                if (n.max_length) what += " at most " + std::to_string(*n.max_length);
                return fail(path, "must be " + what + " characters; got " + std::to_string(len));
            }
            if (n.pattern && !n.pattern->search(s))
                return fail(path, "must match the pattern " + n.pattern->source() + "; got " + excerpt(simdjson::minify(el)));
            if (n.grounded && g_ != nullptr) {
                const auto& allowed = g_->for_path(gpath);
                bool found = false;
                for (const auto& a : allowed) found = found || a == s;
                if (!found)
                    return fail(path, "must be a value seen in the task or in a tool result; got " + excerpt(simdjson::minify(el)) +
                                          " which was not seen");
            }
        } else if (kind == json_types::array) {
            const dom::array arr = el.get_array().value();
            const size_t count = arr.size();
            if ((n.min_items && count < *n.min_items) || (n.max_items && count > *n.max_items)) {
                std::string what = "an array of";
                if (n.min_items) what += " at least " + std::to_string(*n.min_items);
                if (n.min_items && n.max_items) what += " and";
                if (n.max_items) what += " at most " + std::to_string(*n.max_items);
                return fail(path, "must be " + what + " items; got " + std::to_string(count));
            }
            if (n.unique_items) {
                // Items compare as their minified JSON (object keys in the order written).
                std::vector<std::string> seen;
                size_t i = 0;
                for (dom::element item : arr) {
                    std::string text = simdjson::minify(item);
                    for (const auto& s : seen)
                        if (s == text)
                            return fail(path + "[" + std::to_string(i) + "]", "must differ from the earlier items (uniqueItems); got " +
                                                                                 excerpt(text) + " again");
                    seen.push_back(std::move(text));
                    ++i;
                }
            }
            if (n.items >= 0) {
                size_t i = 0;
                for (dom::element item : arr) {
                    check(item, n.items, path + "[" + std::to_string(i) + "]", gpath + "[]");
                    ++i;
                }
            }
        } else if (kind == json_types::object) {
            const dom::object obj = el.get_object().value();
            for (const auto& r : n.required) {
                if (obj.at_key(r).error() != simdjson::SUCCESS) {
                    if (path.empty()) fail_text("missing required " + s_.noun_ + " '" + r + "'");
                    else fail(path, "is missing required '" + r + "'");
                }
            }
            for (auto field : obj) {
                const std::string key(field.key);
                const std::string child_path = path.empty() ? key : path + "." + key;
                const std::string child_gpath = gpath.empty() ? key : gpath + "." + key;
                const int child = n.property(key);
                if (child >= 0) {
                    check(field.value, child, child_path, child_gpath);
                } else if (!n.additional_properties) {
                    std::string list;
                    for (size_t i = 0; i < n.properties.size(); ++i) list += (i ? ", " : "") + n.properties[i].first;
                    fail_text("unknown " + s_.noun_ + " '" + child_path + "'; expected " +
                              (list.empty() ? std::string("none") : "one of: " + list));
                }
            }
        }
    }

    void fail(const std::string& path, const std::string& what) {
        if (path.empty()) fail_text((s_.noun_ == "argument" ? "arguments " : "the value ") + what);
        else fail_text(s_.noun_ + " '" + path + "' " + what);
    }
    void fail_text(std::string msg) {
        if (errors_.size() < k_max_errors) errors_.push_back(std::move(msg));
    }

    std::vector<std::string> errors_;

private:
    const json_schema& s_;
    const grounded_values* g_;
};

result<json_schema> json_schema::parse(std::string_view schema_json, std::string label, std::string noun) {
    json_schema s;
    s.label_ = std::move(label);
    s.noun_ = std::move(noun);
    dom::parser parser;
    dom::element root;
    if (auto err = parser.parse(schema_json.data(), schema_json.size(), true).get(root); err != simdjson::SUCCESS)
        return make_error(errc::parse_error, "schema of " + s.label_ + ": not valid JSON (" + simdjson::error_message(err) + ")");
    schema_compiler c(s);
    auto r = c.compile(root, "", 0);
    if (!r.ok()) return r.err();
    // "x-grounded-with" names a grounded string property of the same object.
    for (const auto& obj : s.nodes_) {
        for (const auto& [name, child] : obj.properties) {
            const schema_node& n = s.nodes_[static_cast<size_t>(child)];
            const std::string& with = !n.grounded_with.empty() || n.items < 0
                                          ? n.grounded_with
                                          : s.nodes_[static_cast<size_t>(n.items)].grounded_with;
            if (with.empty()) continue;
            const int a = obj.property(with);
            if (a < 0 || with == name || !s.nodes_[static_cast<size_t>(a)].grounded ||
                !(s.nodes_[static_cast<size_t>(a)].types & json_types::string))
                return make_error(errc::invalid_argument, "schema of " + s.label_ + ": 'x-grounded-with' of '" + name +
                                                              "' names '" + with +
                                                              "', which is not another x-grounded string property of the same object");
        }
    }
    return s;
}

json_schema json_schema::any_object(std::string label, std::string noun) {
    json_schema s;
    s.label_ = std::move(label);
    s.noun_ = std::move(noun);
    s.nodes_.emplace_back();
    s.nodes_[0].types = json_types::object;
    return s;
}

status json_schema::validate(std::string_view instance_json, const grounded_values* grounding) const {
    dom::parser parser;
    dom::element root;
    if (auto err = parser.parse(instance_json.data(), instance_json.size(), true).get(root); err != simdjson::SUCCESS)
        return make_error(errc::invalid_argument, label_ + ": not valid JSON (" + simdjson::error_message(err) + ")");
    schema_checker c(*this, grounding);
    c.check(root, 0, "", "");
    if (c.errors_.empty()) return {};
    std::string msg = label_ + ": ";
    for (size_t i = 0; i < c.errors_.size(); ++i) msg += (i ? "; " : "") + c.errors_[i];
    return make_error(errc::invalid_argument, std::move(msg));
}

bool json_schema::node_accepts(int index, std::string_view value_json) const {
    dom::parser parser;
    dom::element el;
    if (parser.parse(value_json.data(), value_json.size(), true).get(el) != simdjson::SUCCESS) return false;
    schema_checker c(*this, nullptr);
    c.check(el, index, "", "");
    return c.errors_.empty();
}

bool bounded_number_in(const schema_node& s, bool negative, number_grid_index g0, number_grid_index g1) {
    const bool integer_only = (s.types & json_types::number) == 0;
    number_grid_index step = 1;
    if (integer_only) {  // only the whole units of the range
        step = k_grid_fraction;
        g0 = (g0 + step - 1) / step * step;
        g1 = g1 / step * step;
    }
    if (g0 > g1) return false;
    // The double the validator reads from the text of grid index g: monotone in g.
    auto value = [&](number_grid_index g) {
        const long double m = static_cast<long double>(static_cast<uint64_t>(g / k_grid_fraction)) +
                              static_cast<long double>(static_cast<uint64_t>(g % k_grid_fraction)) / 1e9L;
        return static_cast<double>(negative ? -m : m);
    };
    auto above_min = [&](double d) { return !s.minimum || (s.exclusive_minimum ? d > *s.minimum : d >= *s.minimum); };
    auto below_max = [&](double d) { return !s.maximum || (s.exclusive_maximum ? d < *s.maximum : d <= *s.maximum); };
    auto within = [&](double d) { return above_min(d) && below_max(d); };
    // Values rise with g for a positive sign, fall for a negative one: the
    // bound they move towards holds from some index on, the other up to
    // some index. Most ranges settle at their ends; only one that straddles
    // the bounds needs the search for the first index past the one bound.
    auto entering = [&](double d) { return negative ? below_max(d) : above_min(d); };
    auto other = [&](double d) { return negative ? above_min(d) : below_max(d); };
    const double first = value(g0), last = value(g1);
    if (within(first) || within(last)) return true;
    if (!entering(last) || !other(first)) return false;  // the whole range before, or past, the bounds
    number_grid_index lo = 0, hi = (g1 - g0) / step + 1;  // steps: the first entering one in [lo, hi)
    while (lo < hi) {
        const number_grid_index mid = lo + (hi - lo) / 2;
        if (entering(value(g0 + mid * step))) hi = mid;
        else lo = mid + 1;
    }
    return g0 + lo * step <= g1 && other(value(g0 + lo * step));
}

namespace {

// The satisfiability walk of json_schema::unsatisfiable.
class satisfiability {
public:
    explicit satisfiability(const json_schema& s) : s_(s) {}

    std::optional<json_schema::conflict> node(int index, const std::string& prefix) {
        const schema_node& n = s_.node(index);
        auto at = [&](std::string_view keyword, std::string what) {
            return json_schema::conflict{prefix + std::string(keyword), std::move(what)};
        };
        if (n.types == 0) return at("type", "lists no type (expected at least one type name)");
        if (auto c = structure(n, at)) return c;
        if (n.has_enum) {
            // The value set is the enum's: the other keywords only filter it.
            const char* keyword = n.is_const ? "const" : "enum";
            if (n.enum_json.empty())
                return n.is_const ? at("const", "the const value is not one of the enum values (expected a value both allow)")
                                  : at("enum", "empty enum (expected at least one value)");
            // Its subschemas are checked all the same: a schema that names
            // them is refused for any of them, wherever they sit.
            for (const auto& e : n.enum_json)
                if (s_.node_accepts(index, e)) return children(n, prefix);
            return at(keyword, std::string(n.is_const ? "the const value " + excerpt(n.enum_json[0]) : "no enum value") +
                                   " is valid for the rest of this schema (" + first_error(index, n.enum_json[0]) + ")");
        }
        // The node admits a value when one of its kinds does; the first kind
        // that does not says why, should none.
        std::optional<json_schema::conflict> why;
        bool some = (n.types & (json_types::null | json_types::boolean)) != 0;
        auto kind = [&](uint8_t bits, std::optional<json_schema::conflict> c) {
            if ((n.types & bits) == 0) return;
            if (!c) some = true;
            else if (!why) why = std::move(c);
        };
        kind(json_types::integer | json_types::number, number(n, at));
        kind(json_types::string, string(n, at));
        kind(json_types::array, array(n, at));
        kind(json_types::object, object(n, at));
        if (!some) return why;
        return children(n, prefix);
    }

private:
    std::optional<json_schema::conflict> children(const schema_node& n, const std::string& prefix) {
        for (const auto& [name, child] : n.properties)
            if (auto c = node(child, prefix + "properties." + name + ".")) return c;
        if (n.items >= 0)
            if (auto c = node(n.items, prefix + "items.")) return c;
        return std::nullopt;
    }

    template <class At>
    static std::optional<json_schema::conflict> number(const schema_node& n, At at) {
        if (!n.minimum && !n.maximum) return std::nullopt;  // unbounded numbers are written freely
        const number_grid_index top = number_grid_index{k_grid_integer_limit} * k_grid_fraction - 1;
        if (bounded_number_in(n, false, 0, top) || bounded_number_in(n, true, 1, top)) return std::nullopt;
        const std::string low = n.minimum ? (n.exclusive_minimum ? "exclusiveMinimum " : "minimum ") + format_number(*n.minimum) : "";
        const std::string high = n.maximum ? (n.exclusive_maximum ? "exclusiveMaximum " : "maximum ") + format_number(*n.maximum) : "";
        const std::string bounds = low + (low.empty() || high.empty() ? "" : ", ") + high;
        const std::string_view keyword = n.minimum ? (n.exclusive_minimum ? "exclusiveMinimum" : "minimum")
                                                   : (n.exclusive_maximum ? "exclusiveMaximum" : "maximum");
        if (n.minimum && n.maximum &&
            (*n.minimum > *n.maximum || (*n.minimum == *n.maximum && (n.exclusive_minimum || n.exclusive_maximum))))
            return at(keyword, "no number lies within the bounds (" + bounds + "; expected the minimum below the maximum)");
        if ((n.types & json_types::number) == 0 && n.minimum && n.maximum && *n.maximum - *n.minimum <= 1 && std::fabs(*n.minimum) < 1e17)
            return at(keyword, "no integer lies within the bounds (" + bounds + ")");
        return at(keyword, "no number that constrained decoding writes lies within the bounds (" + bounds +
                               "; it writes bounded numbers of at most 18 integer and 9 fraction digits)");
    }

    template <class At>
    static std::optional<json_schema::conflict> string(const schema_node& n, At at) {
        if (n.min_length && n.max_length && *n.min_length > *n.max_length)
            return at("minLength", "minLength " + std::to_string(*n.min_length) + " is above maxLength " +
                                       std::to_string(*n.max_length) + " (expected minLength <= maxLength)");
        if (!n.pattern) return std::nullopt;
        const schema_pattern& p = *n.pattern;
        if (p.matches_nothing()) return at("pattern", "the pattern " + p.source() + " matches no string");
        // A character is one to four bytes; ASCII-only patterns match one byte per character.
        const size_t min_chars = p.ascii_only() ? p.min_match_bytes() : (p.min_match_bytes() + 3) / 4;
        if (n.max_length && min_chars > *n.max_length)
            return at("pattern", "the pattern " + p.source() + " needs at least " + std::to_string(min_chars) +
                                     " characters, above maxLength " + std::to_string(*n.max_length));
        if (const auto max_bytes = p.max_text_bytes(); max_bytes && n.min_length && *max_bytes < *n.min_length)
            return at("pattern", "the pattern " + p.source() + " matches at most " + std::to_string(*max_bytes) +
                                     " characters, below minLength " + std::to_string(*n.min_length));
        return std::nullopt;
    }

    template <class At>
    std::optional<json_schema::conflict> array(const schema_node& n, At at) const {
        if (n.min_items && n.max_items && *n.min_items > *n.max_items)
            return at("minItems", "minItems " + std::to_string(*n.min_items) + " is above maxItems " + std::to_string(*n.max_items) +
                                      " (expected minItems <= maxItems)");
        if (n.unique_items && n.min_items && n.items >= 0 && s_.node(n.items).has_enum) {
            size_t distinct = 0;
            for (const auto& e : s_.node(n.items).enum_json) distinct += s_.node_accepts(n.items, e);
            if (distinct < *n.min_items)
                return at("minItems", "minItems " + std::to_string(*n.min_items) + " with uniqueItems, but the items allow only " +
                                          std::to_string(distinct) + " distinct values");
        }
        return std::nullopt;
    }

    // What constrained decoding compiles for every node with properties,
    // whatever its type: at most 64 keys, one anchor for the values.
    template <class At>
    std::optional<json_schema::conflict> structure(const schema_node& n, At at) const {
        if (n.properties.size() > 64)
            return at("properties", "more than 64 properties (constrained decoding takes at most 64 per object)");
        // Constrained decoding narrows the values of an object by one anchor.
        std::string anchor;
        for (const auto& [name, child] : n.properties) {
            const schema_node* c = &s_.node(child);
            std::string where = "properties." + name + ".";
            if (c->grounded_with.empty() && c->items >= 0) c = &s_.node(c->items), where += "items.";
            if (c->grounded_with.empty()) continue;
            if (anchor.empty()) anchor = c->grounded_with;
            else if (c->grounded_with != anchor)
                return at(where + "x-grounded-with", "names '" + c->grounded_with + "', but another property is narrowed by '" +
                                                         anchor + "' (expected one x-grounded-with property per object)");
        }
        return std::nullopt;
    }

    template <class At>
    static std::optional<json_schema::conflict> object(const schema_node& n, At at) {
        if (n.additional_properties)
            return std::nullopt;
        for (const auto& r : n.required)
            if (n.property(r) < 0)
                return at("required", "'" + r + "' is not one of the properties, and additionalProperties is false");
        return std::nullopt;
    }

    std::string first_error(int index, const std::string& value) const {
        dom::parser parser;
        dom::element el;
        if (parser.parse(value.data(), value.size(), true).get(el) != simdjson::SUCCESS) return "not valid JSON";
        schema_checker c(s_, nullptr);
        c.check(el, index, "", "");
        return c.errors_.empty() ? std::string() : c.errors_.front();
    }

    const json_schema& s_;
};

}  // namespace

std::optional<json_schema::conflict> json_schema::unsatisfiable() const {
    if (nodes_.empty()) return std::nullopt;
    return satisfiability(*this).node(0, "");
}

}  // namespace tachyon
