#include "tools/mcp/mcp_schema.h"

#include <simdjson.h>

#include "tools/mcp/json_rpc.h"

namespace tachyon::tools::mcp {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr int max_ref_depth = 32;
constexpr std::string_view k_mark = "\"x-grounded\":true";

class inliner {
public:
    inliner(element root, std::string where) : root_(root), where_(std::move(where)) {}

    // Writes `e` with references replaced by what they point at.
    // `inject` goes first into the object written (a mark); `inject_items` into its "items".
    status write(element e, std::string& out, int depth, const std::set<std::string>* grounded = nullptr,
                 std::string_view inject = "", std::string_view inject_items = "") {
        if (depth > max_ref_depth)
            return make_error(errc::unsupported, where_ + ": inputSchema nests deeper than " + std::to_string(max_ref_depth) +
                                                     " levels, or its $ref is recursive (expected a finite schema)");
        if (e.type() == element_type::ARRAY) {
            out += '[';
            bool first = true;
            for (element item : e.get_array()) {
                if (!first) out += ',';
                first = false;
                TACHYON_TRY(write(item, out, depth + 1));
            }
            out += ']';
            return {};
        }
        if (e.type() != element_type::OBJECT) {
            out += simdjson::minify(e);
            return {};
        }
        std::string_view ref;
        if (!e["$ref"].get_string().get(ref)) {
            auto target = resolve(ref);
            if (!target) return target.err();
            // Siblings of $ref (a description) are dropped: the target says what the value is.
            return write(*target, out, depth + 1, grounded, inject, inject_items);
        }
        out += '{';
        out += inject;
        bool first = inject.empty();
        for (auto field : e.get_object()) {
            const std::string_view key = field.key;
            if (key == "$defs" || key == "definitions" || key == "$schema" || key == "$id" || key == "$comment") continue;
            if (!first) out += ',';
            first = false;
            out += json::quote(key);
            out += ':';
            if (key == "properties" && field.value.type() == element_type::OBJECT) {
                // Property names are not schemas: write each value as one.
                out += '{';
                bool first_p = true;
                for (auto p : field.value.get_object()) {
                    if (!first_p) out += ',';
                    first_p = false;
                    out += json::quote(p.key);
                    out += ':';
                    const bool mark = grounded && grounded->count(std::string(p.key));
                    std::string_view type;
                    const bool is_array = !p.value["type"].get_string().get(type) && type == "array";
                    // An array's items are what is grounded, not the array.
                    TACHYON_TRY(write(p.value, out, depth + 1, nullptr, mark && !is_array ? k_mark : "", mark && is_array ? k_mark : ""));
                }
                out += '}';
            } else if (key == "additionalProperties" && field.value.type() == element_type::OBJECT) {
                out += "true";  // a schema for the other properties: open, as far as the runtime checks
            } else if (key == "items") {
                TACHYON_TRY(write(field.value, out, depth + 1, nullptr, inject_items));
            } else {
                TACHYON_TRY(write(field.value, out, depth + 1));
            }
        }
        out += '}';
        return {};
    }

private:
    result<element> resolve(std::string_view ref) {
        if (ref == "#") return root_;
        if (ref.rfind("#/", 0) != 0)
            return make_error(errc::unsupported, where_ + ": inputSchema has $ref '" + std::string(ref) +
                                                     "' (expected a reference inside the schema, such as #/$defs/Name)");
        element node = root_;
        std::string_view rest = ref.substr(2);
        while (true) {
            const size_t slash = rest.find('/');
            std::string token(rest.substr(0, slash));
            // JSON Pointer escapes: ~1 is '/', ~0 is '~'.
            for (size_t i; (i = token.find("~1")) != std::string::npos;) token.replace(i, 2, "/");
            for (size_t i; (i = token.find("~0")) != std::string::npos;) token.replace(i, 2, "~");
            element next;
            if (node.type() != element_type::OBJECT || node[token].get(next))
                return make_error(errc::not_found, where_ + ": inputSchema has $ref '" + std::string(ref) + "', which points at nothing");
            node = next;
            if (slash == std::string_view::npos) break;
            rest = rest.substr(slash + 1);
        }
        return node;
    }

    element root_;
    std::string where_;
};

}  // namespace

result<std::string> normalize_input_schema(std::string_view schema_json, std::string_view server, std::string_view tool,
                                           const std::set<std::string>& grounded) {
    const std::string where = "mcp server " + std::string(server) + ": tool " + std::string(tool);
    simdjson::dom::parser parser;
    element root;
    if (auto err = parser.parse(simdjson::padded_string(schema_json)).get(root))
        return make_error(errc::parse_error, where + ": inputSchema is not JSON (" + simdjson::error_message(err) + ")");
    if (root.type() != element_type::OBJECT)
        return make_error(errc::unsupported, where + ": inputSchema is not a JSON object (expected a JSON Schema of type object)");
    inliner in(root, where);
    element top = root;
    std::string_view ref;
    if (!root["$ref"].get_string().get(ref)) {
        std::string resolved;
        TACHYON_TRY(in.write(root, resolved, 0));
        simdjson::dom::parser p2;
        element again;
        if (p2.parse(simdjson::padded_string(resolved)).get(again)) return make_error(errc::internal, where + ": inputSchema did not inline");
        std::string out;
        inliner second(again, where);
        TACHYON_TRY(second.write(again, out, 0, &grounded));
        return normalize_input_schema(out, server, tool, {});
    }
    std::string_view type;
    if (top["type"].get_string().get(type) || type != "object") {
        std::string got = "no type";
        element t;
        if (!top["type"].get(t)) got = "type " + simdjson::minify(t);
        return make_error(errc::unsupported, where + ": inputSchema has " + got +
                                                 " at its root (expected \"type\": \"object\": tool arguments are a JSON object)");
    }
    for (const auto& name : grounded) {
        element props, p;
        if (top["properties"].get(props) || props[name].get(p))
            return make_error(errc::not_found, where + ": grounded argument '" + name + "' is not a property of its inputSchema");
    }
    std::string out;
    TACHYON_TRY(in.write(top, out, 0, &grounded));
    return out;
}

}  // namespace tachyon::tools::mcp
