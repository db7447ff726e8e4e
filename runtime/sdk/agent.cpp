#include "tachyon/agent.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "runtime/constrain/json_schema.h"
#include "runtime/common/json_util.h"
#include "runtime/constrain/schema_pattern.h"
#include "runtime/sdk/bridge.h"
#include "runtime/agent/tool_catalog.h"
#include "tools/mcp/http_transport.h"
#include "runtime/formats/chat_format.h"
#include "runtime/remote/remote_model.h"

namespace tachyon::sdk {
namespace {

// The runtime's own result types (sdk::result is the public one).
template <class T>
using internal_result = ::tachyon::result<T>;
using internal_status = ::tachyon::status;

// Names the model may call a tool by (the tool-call grammar's alphabet).
bool valid_tool_name(std::string_view name) {
    if (name.empty()) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
    return true;
}

std::vector<std::shared_ptr<tools::tool>> adapt_all(const std::vector<std::shared_ptr<tool>>& custom) {
    std::vector<std::shared_ptr<tools::tool>> out;
    for (const auto& t : custom)
        if (t) out.push_back(adapt_tool(t));
    return out;
}

// Checks what the runtime would only find when a run starts: each C++ tool's
// name and schema. `where` names the agent ("agents/a.json", "agent 'x'").
internal_status check_custom_tools(const std::string& where, const std::vector<std::shared_ptr<tools::tool>>& custom) {
    std::set<std::string, std::less<>> seen;
    for (const auto& t : custom) {
        const std::string name(t->name());
        if (!valid_tool_name(name)) {
            return make_error(::tachyon::errc::invalid_argument,
                              where + ": C++ tool '" + name + "': a tool name must be letters, digits, '_' or '-'");
        }
        if (!seen.insert(name).second) return make_error(::tachyon::errc::invalid_argument, where + ": C++ tool '" + name + "' is given twice");
        auto schema = json_schema::parse(t->parameters_schema(), name, "argument");
        if (!schema) {
            return make_error(::tachyon::errc::invalid_argument,
                              where + ": C++ tool '" + name + "': parameters_schema: " + schema.err().message);
        }
        if (auto c = schema->unsatisfiable())
            return make_error(::tachyon::errc::invalid_argument, where + ": C++ tool '" + name + "': parameters_schema." + c->path + ": " + c->what);
    }
    return {};
}

internal_result<agent> finish(agent_definition def, std::vector<std::shared_ptr<tools::tool>> custom) {
    TACHYON_TRY(check_custom_tools(def.file, custom));
    auto i = std::make_shared<agent_access::impl>();
    i->definition = std::make_shared<const agent_definition>(std::move(def));
    i->custom_tools = std::move(custom);
    return agent_access::make(std::move(i));
}

std::vector<std::string> known_tool_names(const std::vector<std::shared_ptr<tools::tool>>& custom) {
    std::vector<std::string> known = builtin_tool_names();
    for (const auto& t : custom) known.emplace_back(t->name());
    return known;
}

template <class T>
::tachyon::error out_of_range(const std::string& where, const std::string& key, T lo, T hi, T got) {
    return make_error(::tachyon::errc::invalid_argument, where + ": " + key + ": expected an integer in [" + std::to_string(lo) + ", " +
                                                             std::to_string(hi) + "], got " + std::to_string(got));
}

// Validates an agent_spec into an agent_definition, with the agent file's
// rules (agent_def.cpp) and messages that name the agent and the field.
internal_result<agent_definition> definition_from_spec(const agent_spec& spec, const std::vector<std::shared_ptr<tools::tool>>& custom) {
    const std::string where = "agent '" + spec.name + "'";
    auto fail = [&](const std::string& key, const std::string& what) {
        return make_error(::tachyon::errc::invalid_argument, where + ": " + key + ": " + what);
    };
    agent_definition a;
    a.file = where;
    if (spec.name.empty()) return make_error(::tachyon::errc::invalid_argument, "agent: name: must not be empty");
    a.name = spec.name;
    a.description = spec.description;
    a.instructions = spec.instructions;

    if (spec.model.empty()) return fail("model", "missing (required: the path of a GGUF model file, or a remote model object)");
    if (remote::looks_like_remote_model(spec.model)) {
        // A model served elsewhere, as an agent file names it (runtime/remote/remote_model.h).
        auto m = remote::parse_remote_model(spec.model, where + ": model");
        if (!m) return make_error(::tachyon::errc::invalid_argument, m.err().message);
        a.remote = std::make_shared<const remote::remote_model>(std::move(m).value());
        a.model = a.remote->describe();
    } else {
        a.model = std::filesystem::path(spec.model).lexically_normal().string();
        if (!std::filesystem::exists(a.model)) return fail("model", "model file " + a.model + " does not exist (expected a GGUF file)");
    }

    if (!spec.chat_format.empty() && !chat_format_from_name(spec.chat_format)) {
        return fail("chat_format", "expected one of " + chat_format_names() + ", got \"" + spec.chat_format + "\"");
    }
    a.chat_format = spec.chat_format;
    a.sampling = to_internal(spec.sampling);
    if (auto st = a.sampling.validate(); !st) return fail("sampling", st.err().message);

    std::set<std::string> seen;
    for (size_t i = 0; i < spec.tools.size(); ++i) {
        const tool_use& u = spec.tools[i];
        const std::string key = "tools[" + std::to_string(i) + "]";
        agent_tool t;
        t.name = u.custom ? u.custom->name() : u.name;
        if (u.custom && !u.settings.empty()) return fail(key, "C++ tool '" + t.name + "' takes no settings (settings are for built-in tools)");
        if (!u.custom) {
            if (auto st = check_builtin_settings(u.name, u.settings); !st) {
                std::string m = st.err().message;
                if (st.err().code == ::tachyon::errc::not_found) m += "; a C++ tool is given as a tool object (make_tool)";
                return fail(key, m);
            }
        }
        if (!seen.insert(t.name).second) return fail(key, "tool '" + t.name + "' is listed twice");
        t.settings = u.settings;
        if (u.timeout_ms) {
            if (*u.timeout_ms < 1 || *u.timeout_ms > 3600000) return out_of_range<int64_t>(where, key + ".timeout_ms", 1, 3600000, *u.timeout_ms);
            t.timeout_ms = u.timeout_ms;
        }
        for (const auto& [arg, pattern] : u.grounding) {
            if (auto compiled = schema_pattern::compile(pattern); !compiled) return fail(key + ".grounding." + arg, compiled.err().message);
        }
        t.grounding = u.grounding;
        a.tools.push_back(std::move(t));
    }

    const agent_budgets& b = spec.budgets;
    if (b.max_steps < 1 || b.max_steps > 1000) return out_of_range(where, "budgets.max_steps", 1, 1000, b.max_steps);
    if (b.max_tokens < 1 || b.max_tokens > (1 << 24)) return out_of_range(where, "budgets.max_tokens", 1, 1 << 24, b.max_tokens);
    if (b.deadline_ms < 1 || b.deadline_ms > 86400000) return out_of_range<int64_t>(where, "budgets.deadline_ms", 1, 86400000, b.deadline_ms);
    if (b.tool_timeout_ms < 1 || b.tool_timeout_ms > 3600000) return out_of_range<int64_t>(where, "budgets.tool_timeout_ms", 1, 3600000, b.tool_timeout_ms);
    a.budgets = {b.max_steps, b.max_tokens, b.deadline_ms, b.tool_timeout_ms};

    for (size_t i = 0; i < spec.verify.size(); ++i) {
        const verify_check& v = spec.verify[i];
        const std::string key = "verify[" + std::to_string(i) + "]";
        const bool is_custom = std::any_of(custom.begin(), custom.end(), [&](const auto& t) { return t->name() == v.tool; });
        if (is_custom && !v.settings.empty()) return fail(key, "C++ tool '" + v.tool + "' takes no settings");
        if (!is_custom) {
            if (auto st = check_builtin_settings(v.tool, v.settings); !st) return fail(key, st.err().message);
        }
        agent_verify_check c;
        c.tool = v.tool;
        c.settings = v.settings;
        for (const auto& [arg, value] : v.arguments) {
            if (value.rfind("$.", 0) == 0) {
                c.arguments.emplace_back(arg, value);
                continue;
            }
            auto literal = json::minify(value, key + ".arguments." + arg);
            if (!literal) return fail(key + ".arguments." + arg, "expected \"$.field\" or a JSON literal, got '" + value + "'");
            c.arguments.emplace_back(arg, *literal);
        }
        a.verify.push_back(std::move(c));
    }
    if (spec.max_verify_retries < 0 || spec.max_verify_retries > 100) {
        return out_of_range(where, "max_verify_retries", 0, 100, spec.max_verify_retries);
    }
    a.max_verify_retries = spec.max_verify_retries;

    // MCP servers, with the agent file's rules (agent_def.cpp, mcp_servers).
    std::set<std::string> server_names;
    for (size_t i = 0; i < spec.mcp_servers.size(); ++i) {
        const mcp_server& m = spec.mcp_servers[i];
        const std::string key = "mcp_servers[" + std::to_string(i) + "]";
        if (m.name.empty()) return fail(key + ".name", "must not be empty");
        if (!server_names.insert(m.name).second) return fail(key + ".name", "server '" + m.name + "' is given twice");
        if (m.command.empty() == m.url.empty()) return fail(key, "give exactly one of command (stdio) or url (Streamable HTTP)");
        if (!m.command.empty() && m.command.front().empty()) return fail(key + ".command", "must name a program (expected [program, args...])");
        if (!m.url.empty()) {
            if (auto u = tools::mcp::parse_http_url(m.url); !u) return fail(key + ".url", u.err().message);
            if (!m.env.empty() || !m.cwd.empty()) return fail(key, "env and cwd are for servers started with command, not for a url");
        } else if (!m.headers.empty() || !m.bearer_env.empty()) {
            return fail(key, "headers and bearer_env are for Streamable HTTP servers (url), not for a command");
        }
        if (!m.cwd.empty() && !std::filesystem::is_directory(m.cwd)) return fail(key + ".cwd", "'" + m.cwd + "' is not a directory");
        if (m.timeout_ms && (*m.timeout_ms < 1 || *m.timeout_ms > 3600000))
            return out_of_range<int64_t>(where, key + ".timeout_ms", 1, 3600000, *m.timeout_ms);
        agent_mcp_server s;
        s.name = m.name;
        s.command = m.command;
        s.env = m.env;
        s.cwd = m.cwd;
        s.url = m.url;
        s.headers = m.headers;
        s.bearer_env = m.bearer_env;
        s.tools = m.tools;
        s.read_only = m.read_only;
        s.grounded = m.grounded;
        s.timeout_ms = m.timeout_ms;
        a.mcp_servers.push_back(std::move(s));
    }

    if (!spec.output_schema.empty()) {
        auto schema = json_schema::parse(spec.output_schema, "final answer", "field");
        if (!schema) return fail("output_schema", schema.err().message);
        if (auto c = schema->unsatisfiable()) return fail("output_schema." + c->path, c->what);
        auto minified = json::minify(spec.output_schema, "output_schema");
        if (!minified) return fail("output_schema", minified.err().message);
        a.output_schema = *minified;
    }
    return a;
}

}  // namespace

result<agent> agent::load(const std::string& path, std::vector<std::shared_ptr<tool>> custom_tools) {
    auto custom = adapt_all(custom_tools);
    auto def = load_agent_file(path, known_tool_names(custom));
    if (!def) return to_public(def.err());
    auto made = finish(std::move(def).value(), std::move(custom));
    if (!made) return to_public(made.err());
    return std::move(made).value();
}

result<agent> agent::parse(std::string_view json, const std::string& file_name, std::vector<std::shared_ptr<tool>> custom_tools) {
    auto custom = adapt_all(custom_tools);
    auto def = parse_agent_definition(json, file_name, known_tool_names(custom));
    if (!def) return to_public(def.err());
    auto made = finish(std::move(def).value(), std::move(custom));
    if (!made) return to_public(made.err());
    return std::move(made).value();
}

result<agent> agent::build(const agent_spec& spec) {
    std::vector<std::shared_ptr<tool>> public_custom;
    for (const auto& u : spec.tools)
        if (u.custom) public_custom.push_back(u.custom);
    auto custom = adapt_all(public_custom);
    auto def = definition_from_spec(spec, custom);
    if (!def) return to_public(def.err());
    auto made = finish(std::move(def).value(), std::move(custom));
    if (!made) return to_public(made.err());
    return std::move(made).value();
}

const std::string& agent::name() const { return impl_->definition->name; }
const std::string& agent::description() const { return impl_->definition->description; }
const std::string& agent::model_path() const { return impl_->definition->model; }

std::vector<std::string> agent::tool_names() const {
    std::vector<std::string> out;
    for (const auto& t : impl_->definition->tools) out.push_back(t.name);
    return out;
}

std::vector<std::string> agent::placeholders() const { return impl_->definition->placeholders(); }

}  // namespace tachyon::sdk
