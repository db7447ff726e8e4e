#include "tachyon/tool.h"

#include <simdjson.h>

#include "base/log.h"
#include "runtime/common/json_util.h"
#include "runtime/sdk/bridge.h"

namespace tachyon::sdk {
namespace {

// A tool from a function.
class function_tool final : public tool {
public:
    function_tool(tool_spec spec, tool_function function) : spec_(std::move(spec)), function_(std::move(function)) {}
    std::string name() const override { return spec_.name; }
    std::string description() const override { return spec_.description; }
    std::string parameters_schema() const override { return spec_.parameters_schema; }
    bool read_only() const override { return spec_.read_only; }
    result<std::string> invoke(std::string_view arguments_json, const tool_call_context& ctx) override {
        if (!function_) return sdk::error{errc::internal, spec_.name + ": the tool has no function"};
        return function_(arguments_json, ctx);
    }

private:
    tool_spec spec_;
    tool_function function_;
};

// The runtime's view of a public tool. Name, description and schema are
// read once: the runtime holds string_views into them.
class tool_adapter final : public tools::tool {
public:
    explicit tool_adapter(std::shared_ptr<sdk::tool> t)
        : tool_(std::move(t)), name_(tool_->name()), description_(tool_->description()),
          schema_(tool_->parameters_schema()), read_only_(tool_->read_only()) {}
    std::string_view name() const override { return name_; }
    std::string_view description() const override { return description_; }
    std::string_view parameters_schema() const override { return schema_; }
    tools::tool_flags flags() const override { return {.read_only = read_only_, .idempotent = read_only_}; }

    // The boundary of one tool call: user code may throw; the model reads the message.
    ::tachyon::result<std::string> invoke(std::string_view arguments_json, const tools::call_context& ctx) override {
        try {
            auto r = tool_->invoke(arguments_json, tool_call_context(ctx.cancel));
            if (!r) return to_internal(r.error());
            return std::move(r).value();
        } catch (const std::exception& e) {
            TACHYON_LOG(warn, __func__ << ": tool " << name_ << " threw: " << e.what());
            return make_error(::tachyon::errc::internal, name_ + ": " + e.what());
        } catch (...) {
            TACHYON_LOG(warn, __func__ << ": tool " << name_ << " threw a non-standard exception");
            return make_error(::tachyon::errc::internal, name_ + ": the tool failed");
        }
    }

private:
    std::shared_ptr<sdk::tool> tool_;
    std::string name_, description_, schema_;
    bool read_only_;
};

}  // namespace

std::shared_ptr<tool> make_tool(tool_spec spec, tool_function function) {
    return std::make_shared<function_tool>(std::move(spec), std::move(function));
}

std::shared_ptr<tools::tool> adapt_tool(std::shared_ptr<sdk::tool> t) { return std::make_shared<tool_adapter>(std::move(t)); }

result<tool_arguments> tool_arguments::parse(std::string_view arguments_json) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto err = parser.parse(simdjson::padded_string(arguments_json)).get(doc)) {
        return sdk::error{errc::parse_error, std::string("tool arguments: not valid JSON (") + simdjson::error_message(err) + ")"};
    }
    if (!doc.is_object()) return sdk::error{errc::invalid_argument, "tool arguments: expected a JSON object"};
    tool_arguments out;
    for (auto field : doc.get_object()) {
        value v;
        switch (field.value.type()) {
            case simdjson::dom::element_type::STRING:
                v.kind = 1;
                v.text = std::string(field.value.get_string().value());
                break;
            case simdjson::dom::element_type::INT64:
                v.kind = 2;
                v.integer = field.value.get_int64().value();
                v.number = static_cast<double>(v.integer);
                break;
            case simdjson::dom::element_type::UINT64:
                v.kind = 3;  // past int64: a number only
                v.number = static_cast<double>(field.value.get_uint64().value());
                break;
            case simdjson::dom::element_type::DOUBLE:
                v.kind = 3;
                v.number = field.value.get_double().value();
                break;
            case simdjson::dom::element_type::BOOL:
                v.kind = 4;
                v.boolean = field.value.get_bool().value();
                break;
            case simdjson::dom::element_type::ARRAY:
            case simdjson::dom::element_type::OBJECT: v.kind = 5; break;
            case simdjson::dom::element_type::NULL_VALUE: v.kind = 0; break;
        }
        if (v.kind != 1) v.text = simdjson::minify(field.value);
        out.values_[std::string(field.key)] = std::move(v);
    }
    return out;
}

bool tool_arguments::has(std::string_view key) const { return values_.find(key) != values_.end(); }

std::optional<std::string> tool_arguments::string(std::string_view key) const {
    auto it = values_.find(key);
    if (it == values_.end() || it->second.kind != 1) return std::nullopt;
    return it->second.text;
}

std::optional<int64_t> tool_arguments::integer(std::string_view key) const {
    auto it = values_.find(key);
    if (it == values_.end() || it->second.kind != 2) return std::nullopt;
    return it->second.integer;
}

std::optional<double> tool_arguments::number(std::string_view key) const {
    auto it = values_.find(key);
    if (it == values_.end() || (it->second.kind != 2 && it->second.kind != 3)) return std::nullopt;
    return it->second.number;
}

std::optional<bool> tool_arguments::boolean(std::string_view key) const {
    auto it = values_.find(key);
    if (it == values_.end() || it->second.kind != 4) return std::nullopt;
    return it->second.boolean;
}

std::optional<std::string> tool_arguments::json(std::string_view key) const {
    auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    return it->second.kind == 1 ? ::tachyon::json::quote(it->second.text) : it->second.text;
}

std::string json_quote(std::string_view text) { return ::tachyon::json::quote(text); }

}  // namespace tachyon::sdk
