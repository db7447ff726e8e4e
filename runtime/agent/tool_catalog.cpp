#include "runtime/agent/tool_catalog.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "base/assert.h"
#include "runtime/agent/agent_def.h"
#include "runtime/constrain/json_schema.h"
#include "tools/mcp/mcp_tools.h"
#include "tools/logs/builtin.h"
#include "tools/host/http_get.h"
#include "tools/host/read_file.h"
#include "tools/host/shell.h"

namespace tachyon {
namespace {

const std::vector<std::string> log_tool_names = {"list_services", "error_summary", "search_logs", "get_trace",
                                                  "recent_changes", "read_lines", "verify_root_cause"};

bool is_log_tool(const std::string& name) {
    for (const auto& n : log_tool_names)
        if (n == name) return true;
    return false;
}

// A list setting: a JSON array of strings, or one string.
result<std::vector<std::string>> string_list(const std::string& tool, const std::string& key, const std::string& value) {
    if (value.empty() || value.front() != '[') return std::vector<std::string>{value};
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (parser.parse(simdjson::padded_string(value)).get(doc) || !doc.is_array()) {
        return make_error(errc::invalid_argument, "tool " + tool + ": setting '" + key + "' must be a string or an array of strings");
    }
    std::vector<std::string> out;
    for (auto e : doc.get_array()) {
        std::string_view sv;
        if (e.get_string().get(sv)) return make_error(errc::invalid_argument, "tool " + tool + ": setting '" + key + "' must hold strings only");
        out.emplace_back(sv);
    }
    return out;
}

result<int64_t> integer_setting(const std::string& tool, const std::string& key, const std::string& value) {
    int64_t out = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
    if (ec != std::errc() || ptr != value.data() + value.size() || out <= 0) {
        return make_error(errc::invalid_argument, "tool " + tool + ": setting '" + key + "' must be a positive integer, got '" + value + "'");
    }
    return out;
}

error unknown_setting(const std::string& tool, const std::string& key, const char* expected) {
    return make_error(errc::invalid_argument, "tool " + tool + ": unknown setting '" + key + "' (expected: " + expected + ")");
}

result<std::shared_ptr<tools::tool>> make_general_tool(const std::string& name, const std::map<std::string, std::string>& settings) {
    if (name == "read_file") {
        tools::read_file_settings s;
        for (const auto& [k, v] : settings) {
            if (k == "roots") {
                auto l = string_list(name, k, v);
                if (!l) return l.err();
                for (auto& r : *l) s.roots.emplace_back(r);
            } else if (k == "max_bytes") {
                auto n = integer_setting(name, k, v);
                if (!n) return n.err();
                s.max_bytes = static_cast<size_t>(*n);
            } else {
                return unknown_setting(name, k, "roots, max_bytes");
            }
        }
        return tools::make_read_file_tool(s);
    }
    if (name == "shell") {
        tools::shell_settings s;
        for (const auto& [k, v] : settings) {
            if (k == "allowed_programs") {
                auto l = string_list(name, k, v);
                if (!l) return l.err();
                s.allowed_programs = *l;
            } else if (k == "cwd") {
                s.default_cwd = v;
            } else if (k == "cwd_roots") {
                auto l = string_list(name, k, v);
                if (!l) return l.err();
                for (auto& r : *l) s.cwd_roots.emplace_back(r);
            } else if (k == "timeout_ms") {
                auto n = integer_setting(name, k, v);
                if (!n) return n.err();
                s.default_timeout_ms = *n;
            } else if (k == "sandbox") {
                auto mode = tools::parse_shell_sandbox(v);
                if (!mode) return make_error(errc::invalid_argument, "tool " + name + ": setting 'sandbox': " + mode.err().message);
                s.sandbox = *mode;
            } else {
                return unknown_setting(name, k, "allowed_programs, cwd, cwd_roots, timeout_ms, sandbox");
            }
        }
        return tools::make_shell_tool(s);
    }
    if (name == "http_get") {
        tools::http_get_settings s;
        for (const auto& [k, v] : settings) {
            if (k == "allowed_hosts") {
                auto l = string_list(name, k, v);
                if (!l) return l.err();
                s.allowed_hosts = *l;
            } else if (k == "timeout_ms") {
                auto n = integer_setting(name, k, v);
                if (!n) return n.err();
                s.read_timeout_ms = *n;
            } else {
                return unknown_setting(name, k, "allowed_hosts, timeout_ms");
            }
        }
        return tools::make_http_get_tool(s);
    }
    return make_error(errc::not_found, "unknown tool '" + name + "'");
}

}  // namespace

const std::vector<std::string>& builtin_tool_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n = log_tool_names;
        n.insert(n.end(), {"read_file", "shell", "http_get"});
        return n;
    }();
    return names;
}

std::string_view builtin_tool_schema(std::string_view name) {
    if (name == "read_file") return tools::read_file_parameters_schema();
    if (name == "shell") return tools::shell_parameters_schema();
    if (name == "http_get") return tools::http_get_parameters_schema();
    // The log tools' schemas do not depend on their store, which loads on
    // the first call: a registry over no root lends them.
    static const tools::registry log_tools = [] {
        tools::registry r;
        const bool added = tools::add_log_tools(r, std::string()).ok();
        TACHYON_ASSERT(added, "the log tools register under distinct names");
        return r;
    }();
    for (const auto& n : log_tool_names)
        if (n == name) return log_tools.find(n)->parameters_schema();
    return {};
}

status check_builtin_settings(const std::string& name, const std::map<std::string, std::string>& settings) {
    // The keys each tool reads (make_general_tool and the log tools below).
    static const std::map<std::string, std::vector<std::string>> keys = {
        {"read_file", {"roots", "max_bytes"}},
        {"shell", {"allowed_programs", "cwd", "cwd_roots", "timeout_ms", "sandbox"}},
        {"http_get", {"allowed_hosts", "timeout_ms"}},
    };
    const auto& names = builtin_tool_names();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        return make_error(errc::not_found, "unknown tool '" + name + "' (built-in tools: " + list + ")");
    }
    const std::vector<std::string> log_keys = {"root", "year", "tz"};
    auto it = keys.find(name);
    const std::vector<std::string>& allowed = it != keys.end() ? it->second : log_keys;
    for (const auto& [key, value] : settings) {
        if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
        std::string list;
        for (const auto& k : allowed) list += (list.empty() ? "" : ", ") + k;
        return unknown_setting(name, key, list.c_str());
    }
    if (is_log_tool(name) && settings.find("root") == settings.end()) {
        return make_error(errc::invalid_argument, "tool " + name + ": setting 'root' (the incident directory) is required");
    }
    return {};
}

result<std::vector<std::shared_ptr<tools::tool>>> mcp_sessions::tools_of(const agent_definition& agent) {
    std::vector<std::shared_ptr<tools::tool>> out;
    for (const auto& server : agent.mcp_servers) {
        std::string key = agent.file + "\n" + server.name;
        for (const auto& arg : server.command) key += "\n" + arg;
        key += "\n" + server.url;
        std::shared_ptr<tools::mcp::client> session;
        {
            std::lock_guard lock(mutex_);
            auto it = clients_.find(key);
            if (it != clients_.end()) session = it->second;
        }
        if (!session) {
            tools::mcp::server_config c;
            c.name = server.name;
            c.command = server.command;
            c.env = server.env;
            c.cwd = server.cwd;
            c.url = server.url;
            c.headers = server.headers;
            c.bearer_env = server.bearer_env;
            c.tools = server.tools;
            c.read_only.insert(server.read_only.begin(), server.read_only.end());
            for (const auto& [tool, args] : server.grounded) c.grounded[tool].insert(args.begin(), args.end());
            if (server.timeout_ms) c.request_timeout = std::chrono::milliseconds(*server.timeout_ms);
            // structuredContent is checked with the same validator as tool arguments.
            auto validate = [](std::string_view schema_json, std::string_view instance) -> status {
                auto schema = json_schema::parse(schema_json, "structuredContent", "field");
                if (!schema) return schema.err();
                return schema->validate(instance);
            };
            auto made = tools::mcp::client::connect(std::move(c), validate);
            if (!made) return make_error(made.err().code, agent.file + ": mcp_servers." + server.name + ": " + made.err().message);
            std::lock_guard lock(mutex_);
            session = clients_.emplace(key, std::move(made).value()).first->second;
        }
        auto tools = tools::mcp::make_mcp_tools(session);
        if (!tools) return make_error(tools.err().code, agent.file + ": mcp_servers." + server.name + ": " + tools.err().message);
        for (auto& t : *tools) {
            // The runtime compiles every schema it constrains decoding with: refuse one it cannot, naming server and tool.
            auto schema = json_schema::parse(t->parameters_schema(), std::string(t->name()), "argument");
            if (!schema)
                return make_error(errc::unsupported, agent.file + ": mcp_servers." + server.name + ": tool " + std::string(t->name()) +
                                                         ": inputSchema: " + schema.err().message);
            if (auto c = schema->unsatisfiable())
                return make_error(errc::unsupported, agent.file + ": mcp_servers." + server.name + ": tool " + std::string(t->name()) +
                                                         ": inputSchema." + c->path + ": " + c->what);
            out.push_back(std::move(t));
        }
    }
    return out;
}

result<std::vector<std::shared_ptr<tools::tool>>> make_builtin_tools(const std::vector<tool_request>& requests) {
    std::map<std::string, tools::registry> by_root;  // one store per incident root
    std::vector<std::shared_ptr<tools::tool>> out;
    for (const auto& [name, settings] : requests) {
        if (!is_log_tool(name)) {
            auto t = make_general_tool(name, settings);
            if (!t) return t.err();
            out.push_back(std::move(t).value());
            continue;
        }
        for (const auto& [key, value] : settings) {
            if (key != "root" && key != "year" && key != "tz")
                return make_error(errc::invalid_argument, "tool " + name + ": unknown setting '" + key + "' (expected: root, year, tz)");
        }
        auto root = settings.find("root");
        if (root == settings.end()) return make_error(errc::invalid_argument, "tool " + name + ": setting 'root' (the incident directory) is required");
        if (!std::filesystem::is_directory(root->second)) {
            return make_error(errc::not_found, "tool " + name + ": root '" + root->second + "' is not a directory");
        }
        auto options = tools::log_store_options_from(settings);
        if (!options) return make_error(options.err().code, "tool " + name + ": " + options.err().message);
        auto it = by_root.find(root->second);
        if (it == by_root.end()) {
            it = by_root.emplace(root->second, tools::registry{}).first;
            TACHYON_TRY(tools::add_log_tools(it->second, root->second, *options));
        }
        out.push_back(it->second.find(name));
    }
    return out;
}

}  // namespace tachyon
