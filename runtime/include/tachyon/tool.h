// tachyon C++ SDK: tools written in C++. A tool has a name, a description
// and a JSON Schema for its arguments (all three are shown to the model), a
// read_only flag, and a function that turns the arguments into the text the
// model reads. Define one from a lambda with make_tool(), or derive from
// sdk::tool.
//
// The runtime validates the arguments against the schema before calling the
// tool: a call that does not match never reaches your code; the model reads
// the validation error instead. A failure the model should read ("no order
// 42") is an error result; its message is what the model sees.
//
//   auto weather = tachyon::sdk::make_tool(
//       {"weather", "Current weather of a city.",
//        R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})"},
//       [](std::string_view args) -> tachyon::sdk::result<std::string> {
//           auto a = tachyon::sdk::tool_arguments::parse(args).value();
//           return "sunny in " + *a.string("city");
//       });
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "tachyon/result.h"

namespace tachyon::sdk {

// What a tool call may look at while it runs.
class tool_call_context {
public:
    // A context whose call is cancelled when `*cancel` is set (nullptr: never).
    explicit tool_call_context(const std::atomic<bool>* cancel = nullptr) : cancel_(cancel) {}
    // True once the call is cancelled or timed out: return promptly.
    bool cancelled() const { return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed); }

private:
    const std::atomic<bool>* cancel_;
};

// A tool defined by deriving from this class. invoke() runs on the
// runtime's tool pool (not the event loop), possibly for several calls at
// once: make it thread-safe.
class tool {
public:
    virtual ~tool() = default;
    // The name the model calls the tool by ([A-Za-z0-9_-]+).
    virtual std::string name() const = 0;
    // One or two sentences for the model: what the tool does and returns.
    virtual std::string description() const = 0;
    // JSON Schema of the arguments, an object type.
    virtual std::string parameters_schema() const = 0;
    // True when the tool has no side effects (it may be run speculatively).
    virtual bool read_only() const { return true; }
    // Returns the text the model reads, or an error message for the model.
    // `arguments_json` is a JSON object already valid for the schema.
    virtual result<std::string> invoke(std::string_view arguments_json, const tool_call_context& ctx) = 0;
};

// What make_tool() needs besides the function.
struct tool_spec {
    std::string name;               // the name the model calls the tool by
    std::string description;        // shown to the model
    std::string parameters_schema;  // JSON Schema of the arguments (an object type)
    bool read_only = true;          // no side effects
};

// The function of a lambda tool: arguments JSON in, text for the model (or an error) out.
using tool_function = std::function<result<std::string>(std::string_view arguments_json, const tool_call_context& ctx)>;

// A tool from a function taking (arguments_json, ctx).
std::shared_ptr<tool> make_tool(tool_spec spec, tool_function function);

// A tool from a function taking only (arguments_json).
template <class F>
    requires(!std::is_convertible_v<F, tool_function> &&
             std::is_invocable_r_v<result<std::string>, F, std::string_view>)
std::shared_ptr<tool> make_tool(tool_spec spec, F function) {
    return make_tool(std::move(spec), tool_function([f = std::move(function)](std::string_view args, const tool_call_context&) mutable {
                         return result<std::string>(f(args));
                     }));
}

// The arguments of a call, read by key. The runtime has already checked
// them against the tool's schema, so a getter returns nullopt only for an
// optional key that is absent (or a value of another JSON type).
class tool_arguments {
public:
    // Parses a JSON object; the error names what is wrong.
    static result<tool_arguments> parse(std::string_view arguments_json);

    // True when `key` is present.
    bool has(std::string_view key) const;
    // A string value.
    std::optional<std::string> string(std::string_view key) const;
    // An integer value.
    std::optional<int64_t> integer(std::string_view key) const;
    // A number value (integers too).
    std::optional<double> number(std::string_view key) const;
    // A boolean value.
    std::optional<bool> boolean(std::string_view key) const;
    // Any value as minified JSON text (arrays, objects, ...).
    std::optional<std::string> json(std::string_view key) const;

private:
    struct value {
        int kind = 0;      // 0 null, 1 string, 2 integer, 3 number, 4 boolean, 5 array/object
        std::string text;  // string value; minified JSON for the other kinds
        int64_t integer = 0;
        double number = 0;
        bool boolean = false;
    };
    std::map<std::string, value, std::less<>> values_;
};

// `text` as a JSON string literal, quotes included (for tools that answer in JSON).
std::string json_quote(std::string_view text);

}  // namespace tachyon::sdk
