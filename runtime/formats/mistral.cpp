// The Mistral families.
// - Mistral v3-tekken (Mistral Nemo): [INST] turns, the tools as
//   [AVAILABLE_TOOLS] before the last user turn, the system text prefixed
//   to the last user turn, calls as [TOOL_CALLS][...] with 9-character ids,
//   results as [TOOL_RESULTS].
// - The [SYSTEM_PROMPT] templates (Mistral Small 3.2, Devstral, Ministral
//   3): the system text (the model's long default one when none is given)
//   in [SYSTEM_PROMPT], each call as [TOOL_CALLS]name[ARGS]{...} (Small 3.2
//   with [CALL_ID]id before [ARGS]), each result in its own [TOOL_RESULTS].
#include "runtime/formats/renderers.h"

namespace tachyon::formats {

result<std::string> render_mistral(std::span<const chat_message> all, const chat_render_options& options) {
    constexpr std::string_view family = "mistral";
    std::span<const chat_message> messages = all;
    std::optional<std::string> system;
    if (!all.empty() && all[0].role == "system") {
        system = all[0].content;
        messages = all.subspan(1);
    }
    auto tools = parse_tools(options, family);
    if (!tools) return tools.err();
    const std::string eos = eos_of(options, chat_format::mistral);
    // Roles alternate user/assistant, tool calls and results aside.
    size_t n = 0;
    size_t last_user = messages.size();
    for (size_t i = 0; i < messages.size(); ++i) {
        const chat_message& m = messages[i];
        if (m.role == "user") last_user = i;
        if (m.role == "tool" || !m.tool_calls.empty()) continue;
        if ((m.role == "user") != (n % 2 == 0))
            return template_error(family, "After the optional system message, conversation roles must alternate "
                                          "user/assistant/user/assistant/...");
        ++n;
    }
    std::string out = bos_of(options);
    for (size_t i = 0; i < messages.size(); ++i) {
        const chat_message& m = messages[i];
        const bool last = i + 1 == messages.size();
        if (m.role == "user") {
            if (!options.tools.empty() && i == last_user) {
                out += "[AVAILABLE_TOOLS][";
                for (size_t t = 0; t < tools->size(); ++t) {
                    const json_value& fn = function_of((*tools)[t]);
                    out += "{\"type\": \"function\", \"function\": {";
                    bool first_key = true;
                    for (const auto& [key, val] : fn.members()) {
                        if (key == "return") continue;
                        if (!first_key) out += ", ";
                        first_key = false;
                        out += "\"" + key + "\": ";
                        out += val.is_string() ? "\"" + val.str() + "\"" : val.dumps();
                    }
                    out += "}}";
                    out += t + 1 < tools->size() ? ", " : "]";
                }
                out += "[/AVAILABLE_TOOLS]";
            }
            if (last && system) out += "[INST]" + *system + "\n\n" + m.content + "[/INST]";
            else out += "[INST]" + m.content + "[/INST]";
        } else if (!m.tool_calls.empty()) {
            out += "[TOOL_CALLS][";
            for (size_t c = 0; c < m.tool_calls.size(); ++c) {
                const chat_tool_call& call = m.tool_calls[c];
                auto args = arguments_dumps(call, family);
                if (!args) return args.err();
                if (call.id.size() != 9)
                    return template_error(family, "Tool call IDs should be alphanumeric strings with length 9!");
                std::string name;
                append_python_json_string(name, call.name);
                out += "{\"name\": " + name + ", \"arguments\": " + *args + ", \"id\": \"" + call.id + "\"}";
                out += c + 1 < m.tool_calls.size() ? ", " : "]" + eos;
            }
        } else if (m.role == "assistant") {
            out += m.content + eos;
        } else if (m.role == "tool") {
            if (m.tool_call_id.size() != 9)
                return template_error(family, "Tool call IDs should be alphanumeric strings with length 9!");
            out += "[TOOL_RESULTS]{\"content\": " + m.content + ", \"call_id\": \"" + m.tool_call_id + "\"}[/TOOL_RESULTS]";
        } else {
            return template_error(family, "Only user and assistant roles are supported, with the exception of an "
                                          "initial optional system message!");
        }
    }
    return out;
}

namespace {

// The default system prompts, as the templates write them; Small 3.2's
// holds today's date (strftime_now("%Y-%m-%d")) between head and tail.
constexpr std::string_view k_small_3_2_system_head =
    "You are Mistral Small 3, a Large Language Model (LLM) created by Mistral AI, a French startup headqu"
    "artered in Paris.\n"
    "Your knowledge base was last updated on 2023-10-01. The current date is ";
constexpr std::string_view k_small_3_2_system_tail =
    ".\n"
    "\n"
    "When you're not sure about some information or when the user's request requires up-to-date or specif"
    "ic data, you must use the available tools to fetch the information. Do not hesitate to use tools whe"
    "never they can provide a more accurate or complete response. If no relevant tools are available, the"
    "n clearly state that you don't have the information and avoid making up anything.\n"
    "\n"
    "If the user's question is not clear, ambiguous, or does not provide enough context for you to accura"
    "tely answer the question, you do not try to answer it right away and you rather ask the user to clar"
    "ify their request (e.g. \"What are some good restaurants around me?\" => \"Where are you?\" or \"Whe"
    "n is the next flight to Tokyo\" => \"Where do you travel from?\").\n"
    "You are always very attentive to dates, and when asked about information at specific dates, you disc"
    "ard information that is at another date.\n"
    "You follow these instructions in all languages, and always respond to the user in the language they "
    "use or request.\n"
    "Next sections describe the capabilities that you have.\n"
    "\n"
    "# WEB BROWSING INSTRUCTIONS\n"
    "\n"
    "You cannot perform any web search or access internet to open URLs, links etc. If it seems like the u"
    "ser is expecting you to do so, you clarify the situation and ask the user to copy paste the text dir"
    "ectly in the chat.\n"
    "\n"
    "# MULTI-MODAL INSTRUCTIONS\n"
    "\n"
    "You have the ability to read images, but you cannot generate images. You also cannot transcribe audi"
    "o files or videos.\n"
    "You cannot read nor transcribe audio files or videos.\n"
    "\n"
    "# TOOL CALLING INSTRUCTIONS\n"
    "\n"
    "You may have access to tools that you can use to fetch information or perform actions. You must use "
    "these tools in the following situations:\n"
    "\n"
    "1. When the request requires up-to-date information.\n"
    "2. When the request requires specific data that you do not have in your knowledge base.\n"
    "3. When the request involves actions that you cannot perform without tools.\n"
    "\n"
    "Always prioritize using tools to provide the most accurate and helpful response. If tools are not av"
    "ailable, inform the user that you cannot perform the requested action at the moment.";
constexpr std::string_view k_devstral_system =
    "You are Devstral, a helpful agentic model trained by Mistral AI and using the OpenHands scaffold. Yo"
    "u can interact with a computer to solve tasks.\n"
    "\n"
    "<ROLE>\n"
    "Your primary role is to assist users by executing commands, modifying code, and solving technical pr"
    "oblems effectively. You should be thorough, methodical, and prioritize quality over speed.\n"
    "* If the user asks a question, like \"why is X happening\", don't try to fix the problem. Just give "
    "an answer to the question.\n"
    "</ROLE>\n"
    "\n"
    "<EFFICIENCY>\n"
    "* Each action you take is somewhat expensive. Wherever possible, combine multiple actions into a sin"
    "gle action, e.g. combine multiple bash commands into one, using sed and grep to edit/view multiple f"
    "iles at once.\n"
    "* When exploring the codebase, use efficient tools like find, grep, and git commands with appropriat"
    "e filters to minimize unnecessary operations.\n"
    "</EFFICIENCY>\n"
    "\n"
    "<FILE_SYSTEM_GUIDELINES>\n"
    "* When a user provides a file path, do NOT assume it's relative to the current working directory. Fi"
    "rst explore the file system to locate the file before working on it.\n"
    "* If asked to edit a file, edit the file directly, rather than creating a new file with a different "
    "filename.\n"
    "* For global search-and-replace operations, consider using `sed` instead of opening file editors mul"
    "tiple times.\n"
    "</FILE_SYSTEM_GUIDELINES>\n"
    "\n"
    "<CODE_QUALITY>\n"
    "* Write clean, efficient code with minimal comments. Avoid redundancy in comments: Do not repeat inf"
    "ormation that can be easily inferred from the code itself.\n"
    "* When implementing solutions, focus on making the minimal changes needed to solve the problem.\n"
    "* Before implementing any changes, first thoroughly understand the codebase through exploration.\n"
    "* If you are adding a lot of code to a function or file, consider splitting the function or file int"
    "o smaller pieces when appropriate.\n"
    "</CODE_QUALITY>\n"
    "\n"
    "<VERSION_CONTROL>\n"
    "* When configuring git credentials, use \"openhands\" as the user.name and \"openhands@all-hands.dev"
    "\" as the user.email by default, unless explicitly instructed otherwise.\n"
    "* Exercise caution with git operations. Do NOT make potentially dangerous changes (e.g., pushing to "
    "main, deleting repositories) unless explicitly asked to do so.\n"
    "* When committing changes, use `git status` to see all modified files, and stage all files necessary"
    " for the commit. Use `git commit -a` whenever possible.\n"
    "* Do NOT commit files that typically shouldn't go into version control (e.g., node_modules/, .env fi"
    "les, build directories, cache files, large binaries) unless explicitly instructed by the user.\n"
    "* If unsure about committing certain files, check for the presence of .gitignore files or ask the us"
    "er for clarification.\n"
    "</VERSION_CONTROL>\n"
    "\n"
    "<PULL_REQUESTS>\n"
    "* When creating pull requests, create only ONE per session/issue unless explicitly instructed otherw"
    "ise.\n"
    "* When working with an existing PR, update it with new commits rather than creating additional PRs f"
    "or the same issue.\n"
    "* When updating a PR, preserve the original PR title and purpose, updating description only when nec"
    "essary.\n"
    "</PULL_REQUESTS>\n"
    "\n"
    "<PROBLEM_SOLVING_WORKFLOW>\n"
    "1. EXPLORATION: Thoroughly explore relevant files and understand the context before proposing soluti"
    "ons\n"
    "2. ANALYSIS: Consider multiple approaches and select the most promising one\n"
    "3. TESTING:\n"
    "   * For bug fixes: Create tests to verify issues before implementing fixes\n"
    "   * For new features: Consider test-driven development when appropriate\n"
    "   * If the repository lacks testing infrastructure and implementing tests would require extensive s"
    "etup, consult with the user before investing time in building testing infrastructure\n"
    "   * If the environment is not set up to run tests, consult with the user first before investing tim"
    "e to install all dependencies\n"
    "4. IMPLEMENTATION: Make focused, minimal changes to address the problem\n"
    "5. VERIFICATION: If the environment is set up to run tests, test your implementation thoroughly, inc"
    "luding edge cases. If the environment is not set up to run tests, consult with the user first before"
    " investing time to run tests.\n"
    "</PROBLEM_SOLVING_WORKFLOW>\n"
    "\n"
    "<SECURITY>\n"
    "* Only use GITHUB_TOKEN and other credentials in ways the user has explicitly requested and would ex"
    "pect.\n"
    "* Use APIs to work with GitHub or other platforms, unless the user asks otherwise or your task requi"
    "res browsing.\n"
    "</SECURITY>\n"
    "\n"
    "<ENVIRONMENT_SETUP>\n"
    "* When user asks you to run an application, don't stop if the application is not installed. Instead,"
    " please install the application and run the command again.\n"
    "* If you encounter missing dependencies:\n"
    "  1. First, look around in the repository for existing dependency files (requirements.txt, pyproject"
    ".toml, package.json, Gemfile, etc.)\n"
    "  2. If dependency files exist, use them to install all dependencies at once (e.g., `pip install -r "
    "requirements.txt`, `npm install`, etc.)\n"
    "  3. Only install individual packages directly if no dependency files are found or if only specific "
    "packages are needed\n"
    "* Similarly, if you encounter missing dependencies for essential tools requested by the user, instal"
    "l them when possible.\n"
    "</ENVIRONMENT_SETUP>\n"
    "\n"
    "<TROUBLESHOOTING>\n"
    "* If you've made repeated attempts to solve a problem but tests still fail or the user reports it's "
    "still broken:\n"
    "  1. Step back and reflect on 5-7 different possible sources of the problem\n"
    "  2. Assess the likelihood of each possible cause\n"
    "  3. Methodically address the most likely causes, starting with the highest probability\n"
    "  4. Document your reasoning process\n"
    "* When you run into any major issue while executing a plan from the user, please don't try to direct"
    "ly work around it. Instead, propose a new plan and confirm with the user before proceeding.\n"
    "</TROUBLESHOOTING>";
constexpr std::string_view k_ministral_3_system =
    "# HOW YOU SHOULD THINK AND ANSWER\n"
    "\n"
    "First draft your thinking process (inner monologue) until you arrive at a response. Format your resp"
    "onse using Markdown, and use LaTeX for any mathematical equations. Write both your thoughts and the "
    "response in the same language as the input.\n"
    "\n"
    "Your thinking process must follow the template below:[THINK]Your thoughts or/and draft, like working"
    " through an exercise on scratch paper. Be as casual and as long as you want until you are confident "
    "to generate the response to the user.[/THINK]Here, provide a self-contained response.";

constexpr std::string_view k_bad_id = "Tool call IDs should be alphanumeric strings with length 9!";

// `tools|tojson`: the definitions as one JSON list.
result<std::string> tools_list_json(const chat_render_options& options, std::string_view family) {
    auto tools = parse_tools(options, family);
    if (!tools) return tools.err();
    std::string out = "[";
    for (size_t i = 0; i < tools->size(); ++i) out += (i ? ", " : "") + (*tools)[i].dumps();
    return out + "]";
}

// The leading system message's text, if any, and the messages after it.
std::span<const chat_message> after_system(std::span<const chat_message> all, std::optional<std::string>& system) {
    if (all.empty() || all[0].role != "system") return all;
    system = all[0].content;
    return all.subspan(1);
}

// The templates' alternation check: turns without calls (tool messages
// aside; only user and assistant ones unless `any_role`) alternate,
// starting with a user turn.
status check_alternation(std::span<const chat_message> messages, bool any_role, std::string_view family,
                         std::string_view message) {
    size_t n = 0;
    for (const chat_message& m : messages) {
        if (m.role == "tool" || !m.tool_calls.empty()) continue;
        if (!any_role && m.role != "user" && m.role != "assistant") continue;
        if ((m.role == "user") != (n % 2 == 0)) return template_error(family, message);
        ++n;
    }
    return {};
}

// A call as [TOOL_CALLS]name[ARGS]{...}, with [CALL_ID]id before [ARGS] when `with_id`.
status append_named_call(std::string& out, const chat_tool_call& call, bool with_id, std::string_view family) {
    auto args = arguments_dumps(call, family);
    if (!args) return args.err();
    out += "[TOOL_CALLS]" + call.name;
    if (with_id) {
        if (call.id.size() != 9) return template_error(family, k_bad_id);
        out += "[CALL_ID]" + call.id;
    }
    out += "[ARGS]" + *args;
    return {};
}

}  // namespace

// Mistral Small 3.2 (2506): the tools before the last user turn, calls and
// results carry their 9-character ids.
result<std::string> render_mistral_small3_2(std::span<const chat_message> all, const chat_render_options& options) {
    constexpr std::string_view family = "mistral-small3.2";
    std::optional<std::string> system;
    const std::span<const chat_message> messages = after_system(all, system);
    TACHYON_TRY(check_alternation(messages, true, family,
                                  "After the optional system message, conversation roles must alternate "
                                  "user/assistant/user/assistant/..."));
    std::string tools;
    if (!options.tools.empty()) {
        auto list = tools_list_json(options, family);
        if (!list) return list.err();
        tools = "[AVAILABLE_TOOLS]" + *list + "[/AVAILABLE_TOOLS]";
    }
    // The template compares messages by value: every user turn equal to the last one gets the tools.
    const chat_message* last_user = nullptr;
    for (const chat_message& m : messages)
        if (m.role == "user") last_user = &m;
    const std::string eos = eos_of(options, chat_format::mistral_small3_2);
    std::string out = bos_of(options) + "[SYSTEM_PROMPT]";
    out += system ? *system
                  : std::string(k_small_3_2_system_head) + format_date(options, "%Y-%m-%d") +
                        std::string(k_small_3_2_system_tail);
    out += "[/SYSTEM_PROMPT]";
    for (const chat_message& m : messages) {
        if (m.role == "system") {
            out += "[SYSTEM_PROMPT]" + m.content + "[/SYSTEM_PROMPT]";
        } else if (m.role == "user") {
            if (last_user != nullptr && m.content == last_user->content) out += tools;
            out += "[INST]" + m.content + "[/INST]";
        } else if (m.role == "assistant") {
            for (const chat_tool_call& call : m.tool_calls) TACHYON_TRY(append_named_call(out, call, true, family));
            if (m.tool_calls.empty()) out += m.content;
            out += eos;
        } else {
            if (m.tool_call_id.size() != 9) return template_error(family, k_bad_id);
            out += "[TOOL_RESULTS]" + m.tool_call_id + "[TOOL_CONTENT]" + m.content + "[/TOOL_RESULTS]";
        }
    }
    return out;
}

// Devstral Small 2507 (the template as unsloth ships it): the tools right
// after the system prompt, no alternation check, no ids.
result<std::string> render_devstral(std::span<const chat_message> all, const chat_render_options& options) {
    constexpr std::string_view family = "devstral";
    std::optional<std::string> system;
    const std::span<const chat_message> messages = after_system(all, system);
    const std::string eos = eos_of(options, chat_format::devstral);
    std::string out = bos_of(options) + "[SYSTEM_PROMPT]" + (system ? *system : std::string(k_devstral_system)) +
                      "[/SYSTEM_PROMPT]";
    if (!options.tools.empty()) {
        auto list = tools_list_json(options, family);
        if (!list) return list.err();
        out += "[AVAILABLE_TOOLS]" + *list + "[/AVAILABLE_TOOLS]";
    }
    for (const chat_message& m : messages) {
        if (m.role == "user") {
            out += "[INST]" + m.content + "[/INST]";
        } else if (m.role == "system") {
            out += "[SYSTEM_PROMPT]" + m.content + "[/SYSTEM_PROMPT]";
        } else if (m.role == "assistant") {
            out += m.content;
            for (const chat_tool_call& call : m.tool_calls) TACHYON_TRY(append_named_call(out, call, false, family));
            out += eos;
        } else {
            out += "[TOOL_RESULTS]" + m.content + "[/TOOL_RESULTS]";
        }
    }
    return out;
}

// Ministral 3 (Reasoning, 2512): as Devstral, with a short default system
// prompt, the alternation check and assistant turns that may not be empty.
result<std::string> render_ministral3(std::span<const chat_message> all, const chat_render_options& options) {
    constexpr std::string_view family = "ministral3";
    std::optional<std::string> system;
    const std::span<const chat_message> messages = after_system(all, system);
    const std::string eos = eos_of(options, chat_format::ministral3);
    std::string out = bos_of(options) + "[SYSTEM_PROMPT]" + (system ? *system : std::string(k_ministral_3_system)) +
                      "[/SYSTEM_PROMPT]";
    if (!options.tools.empty()) {
        auto list = tools_list_json(options, family);
        if (!list) return list.err();
        out += "[AVAILABLE_TOOLS]" + *list + "[/AVAILABLE_TOOLS]";
    }
    TACHYON_TRY(check_alternation(messages, false, family,
                                  "After the optional system message, conversation roles must alternate user and "
                                  "assistant roles except for tool calls and results."));
    for (const chat_message& m : messages) {
        if (m.role == "user") {
            out += "[INST]" + m.content + "[/INST]";
        } else if (m.role == "assistant") {
            if (m.content.empty() && m.tool_calls.empty())
                return template_error(family, "Assistant message must have a string or a list of chunks in content "
                                              "or a list of tool calls.");
            out += m.content;
            for (const chat_tool_call& call : m.tool_calls) TACHYON_TRY(append_named_call(out, call, false, family));
            out += eos;
        } else if (m.role == "tool") {
            out += "[TOOL_RESULTS]" + m.content + "[/TOOL_RESULTS]";
        } else {
            return template_error(family, "Only user, assistant and tool roles are supported, got " + m.role + ".");
        }
    }
    return out;
}

}  // namespace tachyon::formats
