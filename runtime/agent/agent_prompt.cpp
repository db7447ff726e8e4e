#include "runtime/agent/agent_prompt.h"

#include "runtime/formats/chat_format.h"
#include "runtime/common/json_util.h"
#include "runtime/agent/tool_catalog.h"

namespace tachyon {

std::vector<std::string> tool_definitions(const std::vector<std::shared_ptr<tools::tool>>& tools) {
    std::vector<std::string> out;
    for (const auto& t : tools) {
        std::string s = "{\"type\": \"function\", \"function\": {\"name\": ";
        s += json::quote(t->name());
        s += ", \"description\": ";
        s += json::quote(t->description());
        s += ", \"parameters\": ";
        s += t->parameters_schema();
        s += "}}";
        out.push_back(std::move(s));
    }
    return out;
}

result<std::vector<std::shared_ptr<tools::tool>>> make_agent_tools(const agent_definition& agent,
                                                                   const std::map<std::string, std::string>& inputs,
                                                                   const std::vector<std::shared_ptr<tools::tool>>& custom_tools,
                                                                   mcp_sessions* mcp) {
    std::vector<tool_request> requests;
    std::vector<std::shared_ptr<tools::tool>> custom_slot;  // [n_tools] the custom tool, or null for a built-in
    for (const auto& t : agent.tools) {
        std::shared_ptr<tools::tool> custom;
        for (const auto& c : custom_tools)
            if (c->name() == t.name) custom = c;
        custom_slot.push_back(custom);
        if (custom) continue;
        tool_request r{t.name, {}};
        for (const auto& [k, v] : t.settings) {
            auto filled = fill_placeholders(v, inputs, agent.file + ": tools." + t.name + ".settings." + k);
            if (!filled) return filled.err();
            r.settings[k] = *filled;
        }
        requests.push_back(std::move(r));
    }
    auto builtins = make_builtin_tools(requests);
    if (!builtins) return builtins.err();
    std::vector<std::shared_ptr<tools::tool>> out;
    size_t next_builtin = 0;
    for (auto& c : custom_slot) out.push_back(c ? c : (*builtins)[next_builtin++]);
    if (agent.mcp_servers.empty()) return out;
    std::unique_ptr<mcp_sessions> own;
    if (!mcp) mcp = (own = std::make_unique<mcp_sessions>()).get();
    auto remote = mcp->tools_of(agent);
    if (!remote) return remote.err();
    for (auto& t : *remote) {
        for (const auto& have : out)
            if (have->name() == t->name())
                return make_error(errc::invalid_argument, agent.file + ": mcp_servers: tool '" + std::string(t->name()) +
                                                              "' has the name of another tool of the agent (expected distinct names; "
                                                              "pick a subset with \"tools\")");
        out.push_back(std::move(t));
    }
    return out;
}

result<std::string> render_initial_prompt(const agent_definition& agent, const model_host& host,
                                          const std::map<std::string, std::string>& inputs, const std::string& task,
                                          const std::vector<std::shared_ptr<tools::tool>>& custom_tools,
                                          mcp_sessions* mcp) {
    auto tools = make_agent_tools(agent, inputs, custom_tools, mcp);
    if (!tools) return tools.err();
    auto system = fill_placeholders(agent.instructions, inputs, agent.file + ": instructions");
    if (!system) return system.err();
    std::vector<chat_message> messages{{"system", *system}, {"user", task}};
    chat_render_options o;
    o.add_generation_prompt = true;
    o.tools = tool_definitions(*tools);
    return render_chat(host.format(), messages, o);
}

}  // namespace tachyon
