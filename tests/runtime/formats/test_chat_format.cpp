#include "runtime/formats/chat_format.h"

#include <doctest/doctest.h>

#include <tuple>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <simdjson.h>

using namespace tachyon;

namespace {

const std::filesystem::path k_templates = std::filesystem::path(TACHYON_CONFORMANCE_DIR) / "templates";

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string text_of(simdjson::dom::element e) {
    std::string_view s;
    if (!e.get_string().get(s)) return std::string(s);
    return simdjson::minify(e);
}

struct conformance_case {
    std::vector<chat_message> messages;
    chat_render_options options;
};

// A case of conversations.json as the renderers take it; the manifest's
// tokens are passed as the reference renders passed them.
conformance_case load_case(simdjson::dom::element conversations, std::string_view name,
                           simdjson::dom::element manifest_entry) {
    conformance_case c;
    simdjson::dom::element k = conversations["cases"][name];
    for (simdjson::dom::element m : k["messages"].get_array()) {
        chat_message msg;
        msg.role = std::string(m["role"].get_string().value());
        msg.content = text_of(m["content"].value());
        std::string_view s;
        if (!m["tool_call_id"].get_string().get(s)) msg.tool_call_id = std::string(s);
        if (!m["name"].get_string().get(s)) msg.name = std::string(s);
        simdjson::dom::array calls;
        if (!m["tool_calls"].get_array().get(calls)) {
            for (simdjson::dom::element call : calls) {
                chat_tool_call tc;
                tc.id = std::string(call["id"].get_string().value());
                tc.name = std::string(call["function"]["name"].get_string().value());
                tc.arguments_json = text_of(call["function"]["arguments"].value());
                msg.tool_calls.push_back(std::move(tc));
            }
        }
        c.messages.push_back(std::move(msg));
    }
    c.options.add_generation_prompt = k["add_generation_prompt"].get_bool().value();
    if (k["with_tools"].get_bool().value()) {
        for (simdjson::dom::element t : conversations["tools"].get_array()) c.options.tools.push_back(simdjson::minify(t));
    }
    bool thinking = true;
    if (!k["extra_kwargs"]["enable_thinking"].get_bool().get(thinking)) c.options.enable_thinking = thinking;
    std::string_view token;
    c.options.bos_token = manifest_entry["bos_token"].get_string().get(token) ? std::string() : std::string(token);
    c.options.eos_token = manifest_entry["eos_token"].get_string().get(token) ? std::string() : std::string(token);
    c.options.date = chat_date{2026, 1, 15};  // the README's strftime_now date
    return c;
}

// The first byte where two texts differ, with a little of each around it.
std::string first_difference(const std::string& want, const std::string& got) {
    size_t i = 0;
    while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
    const size_t from = i > 40 ? i - 40 : 0;
    return "at byte " + std::to_string(i) + "\n  want: " + want.substr(from, 100) + "\n  got:  " + got.substr(from, 100);
}

}  // namespace

TEST_CASE("every conformance template of a family tachyon runs renders byte for byte as its Jinja2 render") {
    if (!std::filesystem::exists(k_templates / "manifest.json")) {
        MESSAGE("conformance templates not found at " << k_templates.string() << "; skipped");
        return;
    }
    simdjson::dom::parser manifest_parser, conv_parser;
    simdjson::padded_string manifest_text(read_file(k_templates / "manifest.json"));
    simdjson::padded_string conv_text(read_file(k_templates / "conversations.json"));
    simdjson::dom::element manifest = manifest_parser.parse(manifest_text).value();
    simdjson::dom::element conversations = conv_parser.parse(conv_text).value();
    int n_compared = 0, n_refused = 0, n_foreign = 0;
    for (auto [name, entry] : manifest.get_object()) {
        const std::string template_name(name);
        const std::string jinja = read_file(k_templates / "jinja" / (template_name + ".jinja"));
        REQUIRE_MESSAGE(!jinja.empty(), template_name);
        auto format = detect_chat_format(jinja);
        if (!format) {
            // A family tachyon does not run: detection says so.
            INFO(template_name);
            CHECK(format.err().message.find("does not run") != std::string::npos);
            CHECK(format.err().message.find("--chat-format") != std::string::npos);
            ++n_foreign;
            continue;
        }
        for (auto& elem : entry["cases"].get_object()) {
            // named parts, not structured bindings, which clang 14 cannot take into a lambda (INFO)
            const std::string_view case_name = elem.key; const auto status = elem.value;
            const std::string_view st = status["status"].get_string().value();
            if (st == "not_applicable") continue;
            INFO(template_name << " / " << std::string(case_name) << " as " << to_string(*format));
            conformance_case c = load_case(conversations, case_name, entry);
            auto got = render_chat(*format, c.messages, c.options);
            if (st == "raised") {
                CHECK_FALSE(got.ok());
                if (!got.ok()) CHECK(got.err().message.find("chat format") != std::string::npos);
                ++n_refused;
                continue;
            }
            REQUIRE(st == "ok");
            const std::string want = read_file(k_templates / std::string(status["file"].get_string().value()));
            REQUIRE_MESSAGE(got.ok(), (got.ok() ? "" : got.err().message));
            CHECK_MESSAGE(*got == want, first_difference(want, *got));
            ++n_compared;
        }
    }
    MESSAGE(n_compared << " renders compared, " << n_refused << " refusals checked, " << n_foreign
                       << " templates of families tachyon does not run");
    CHECK(n_compared > 0);
}

// ChatML and Llama 3 as tachyon rendered them before the family table:
// the shipped agents' prompts must not change.


namespace {

const std::string k_tools_section =
    "# Tools\n"
    "\n"
    "You may call one or more functions to assist with the user query.\n"
    "\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"search_logs\", \"parameters\": {}}}\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"get_trace\", \"parameters\": {}}}\n"
    "</tools>\n"
    "\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n"
    "<tool_call>\n"
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
    "</tool_call>";

const std::vector<std::string> k_tools = {
    R"({"type": "function", "function": {"name": "search_logs", "parameters": {}}})",
    R"({"type": "function", "function": {"name": "get_trace", "parameters": {}}})",
};

}  // namespace

TEST_CASE("ChatML renders turns, merges tool results into one user turn, and opens the reply") {
    const std::vector<chat_message> messages = {
        {"system", "You are an SRE."},
        {"user", "Why is checkout failing?"},
        {"assistant", "<tool_call>\n{\"name\": \"search_logs\", \"arguments\": {}}\n</tool_call>\n"
                      "<tool_call>\n{\"name\": \"get_trace\", \"arguments\": {}}\n</tool_call>"},
        {"tool", "ERROR db timeout"},
        {"tool", "{\"span\": 3}"},
    };
    auto out = render_chat(chat_format::chatml, messages);
    REQUIRE(out.ok());
    CHECK(*out ==
          "<|im_start|>system\nYou are an SRE.<|im_end|>\n"
          "<|im_start|>user\nWhy is checkout failing?<|im_end|>\n"
          "<|im_start|>assistant\n<tool_call>\n{\"name\": \"search_logs\", \"arguments\": {}}\n</tool_call>\n"
          "<tool_call>\n{\"name\": \"get_trace\", \"arguments\": {}}\n</tool_call><|im_end|>\n"
          "<|im_start|>user\n<tool_response>\nERROR db timeout\n</tool_response>\n"
          "<tool_response>\n{\"span\": 3}\n</tool_response><|im_end|>\n"
          "<|im_start|>assistant\n");

    auto no_prompt = render_chat(chat_format::chatml, {{{"user", "hi"}}}, {.add_generation_prompt = false, .tools = {}});
    REQUIRE(no_prompt.ok());
    CHECK(*no_prompt == "<|im_start|>user\nhi<|im_end|>\n");
}

TEST_CASE("the ChatML tools section is DESIGN.md's Prompt format, byte for byte") {
    auto section = render_tools_section(k_tools);
    REQUIRE(section.ok());
    CHECK(*section == k_tools_section);

    const std::vector<chat_message> messages = {{"system", "Find the root cause."}, {"user", "task"}};
    auto out = render_chat(chat_format::chatml, messages, {.add_generation_prompt = true, .tools = k_tools});
    REQUIRE(out.ok());
    CHECK(*out == "<|im_start|>system\nFind the root cause.\n\n" + k_tools_section + "<|im_end|>\n" +
                      "<|im_start|>user\ntask<|im_end|>\n<|im_start|>assistant\n");

    // Without a system message the tools open the prompt on their own.
    auto bare = render_chat(chat_format::chatml, {{{"user", "task"}}}, {.add_generation_prompt = false, .tools = k_tools});
    REQUIRE(bare.ok());
    CHECK(*bare == "<|im_start|>system\n" + k_tools_section + "<|im_end|>\n<|im_start|>user\ntask<|im_end|>\n");

    // A definition spanning lines would break the one-per-line format.
    const std::vector<std::string> bad = {"{\n}"};
    CHECK_FALSE(render_tools_section(bad).ok());
}

TEST_CASE("Llama 3 renders header turns, ipython tool results, trimmed content") {
    const std::vector<chat_message> messages = {
        {"system", "Be brief."},
        {"user", "  hi\n"},
        {"assistant", "calling"},
        {"tool", "42"},
    };
    auto out = render_chat(chat_format::llama3, messages);
    REQUIRE(out.ok());
    CHECK(*out ==
          "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
          "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\ncalling<|eot_id|>"
          "<|start_header_id|>ipython<|end_header_id|>\n\n42<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\n");
    CHECK_FALSE(render_chat(chat_format::llama3, messages, {.add_generation_prompt = true, .tools = k_tools}).ok());
}

TEST_CASE("the format is detected from the template text or chosen by name") {
    const std::string qwen = "{%- for message in messages %}{{- '<|im_start|>' + message.role }}{% endfor %}";
    const std::string llama3 = "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}{% endfor %}";
    CHECK(*detect_chat_format(qwen) == chat_format::chatml);
    CHECK(*detect_chat_format(llama3) == chat_format::llama3);
    CHECK(*select_chat_format(qwen, "llama3") == chat_format::llama3);
    CHECK(*select_chat_format("", "chatml") == chat_format::chatml);

    const std::string vicuna = "{% for message in messages %}USER: {{ message.content }}{% endfor %}";
    auto unknown = detect_chat_format(vicuna);
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.err().message.find("tokenizer.chat_template") != std::string::npos);
    CHECK(unknown.err().message.find("chatml, ") != std::string::npos);
    CHECK(unknown.err().message.find("--chat-format") != std::string::npos);
    CHECK_FALSE(detect_chat_format("").ok());
    auto bad_name = chat_format_from_name("vicuna");
    REQUIRE_FALSE(bad_name.ok());
    CHECK(bad_name.err().message.find("'vicuna'") != std::string::npos);
}

TEST_CASE("an unknown role is an error naming it") {
    auto out = render_chat(chat_format::chatml, {{{"narrator", "x"}}});
    REQUIRE_FALSE(out.ok());
    CHECK(out.err().message.find("'narrator'") != std::string::npos);
}

TEST_CASE("every family is named, detected from its template's features and overridable by name") {
    for (const chat_family& f : chat_families()) {
        INFO(f.name);
        CHECK(*chat_format_from_name(f.name) == f.format);
        CHECK(to_string(f.format) == f.name);
        CHECK(*select_chat_format("{{ '<|im_start|>' }}", f.name) == f.format);
    }
    CHECK(*detect_chat_format("{{ '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud.' }}") == chat_format::qwen2_5);
    CHECK(*detect_chat_format("<start_of_turn>{% set first_user_prefix = '' %}") == chat_format::gemma3);
    CHECK(*detect_chat_format("<|system|>{{ c }}<|tool|>{{ t }}<|/tool|><|end|><|assistant|>") == chat_format::phi4_mini);
    auto harmony = detect_chat_format("<|start|>assistant<|channel|>final<|message|>");
    REQUIRE_FALSE(harmony.ok());
    CHECK(harmony.err().message.find("gpt-oss") != std::string::npos);
    CHECK(harmony.err().message.find("does not run") != std::string::npos);
}

TEST_CASE("Gemma 3 writes the system text at the start of the first user turn, Gemma 2 refuses it") {
    const std::vector<chat_message> messages = {{"system", "Be brief."}, {"user", " hi "}};
    auto g3 = render_chat(chat_format::gemma3, messages, {.bos_token = "<bos>"});
    REQUIRE(g3.ok());
    CHECK(*g3 == "<bos><start_of_turn>user\nBe brief.\n\nhi<end_of_turn>\n<start_of_turn>model\n");
    auto g2 = render_chat(chat_format::gemma2, messages);
    REQUIRE_FALSE(g2.ok());
    CHECK(g2.err().message == "chat format gemma2: System role not supported");
}

TEST_CASE("structured calls are written in each family's syntax") {
    chat_message call{"assistant", ""};
    call.tool_calls.push_back({"abcdefghi", "get_trace", "{\"id\":\"t1\"}"});
    const std::vector<chat_message> messages = {{"user", "go"}, call};
    auto phi4 = render_chat(chat_format::phi4_mini, messages, {.add_generation_prompt = false});
    REQUIRE(phi4.ok());
    CHECK(phi4->find("<|assistant|><|tool_call|>[{\"name\": \"get_trace\", \"arguments\": {\"id\": \"t1\"}}]<|/tool_call|><|end|>") !=
          std::string::npos);
    auto mistral = render_chat(chat_format::mistral, messages, {.add_generation_prompt = false});
    REQUIRE(mistral.ok());
    CHECK(*mistral == "[INST]go[/INST][TOOL_CALLS][{\"name\": \"get_trace\", \"arguments\": {\"id\": \"t1\"}, \"id\": \"abcdefghi\"}]</s>");
    auto chatml = render_chat(chat_format::chatml, messages, {.add_generation_prompt = false});
    REQUIRE(chatml.ok());
    CHECK(*chatml == "<|im_start|>user\ngo<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_trace\", \"arguments\": "
                     "{\"id\":\"t1\"}}\n</tool_call><|im_end|>\n");
    // Arguments that are not JSON are an error naming the call, not a crash.
    call.tool_calls[0].arguments_json = "{nope";
    auto bad = render_chat(chat_format::qwen3, std::vector<chat_message>{{"user", "go"}, call});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("get_trace") != std::string::npos);
}

TEST_CASE("each family names its call syntax and trigger from the table, for inspect and messages") {
    CHECK(describe_tool_calls(chat_format::chatml) == "hermes <tool_call>");
    CHECK(describe_tool_calls(chat_format::qwen3) == "qwen3 <tool_call>");
    CHECK(describe_tool_calls(chat_format::llama3_1) == "llama3 {\"name\"");
    CHECK(describe_tool_calls(chat_format::mistral) == "mistral [TOOL_CALLS]");
    CHECK(describe_tool_calls(chat_format::phi4_mini) == "phi4 <|tool_call|>");
    CHECK(describe_tool_calls(chat_format::granite3_3) == "granite <|tool_call|>");
    CHECK(describe_tool_calls(chat_format::gemma3) == "none");
    CHECK(describe_tool_calls(chat_format::llama3) == "none");  // Llama 3.0's template has no tools
    CHECK(call_trigger_of(tool_call_syntax::llama3) == "{\"name\"");
    CHECK(call_trigger_of(tool_call_syntax::none).empty());
}

TEST_CASE("the newer families' templates are detected as theirs, and each names its call syntax and trigger") {
    if (!std::filesystem::exists(k_templates / "jinja")) {
        MESSAGE("conformance templates not found at " << k_templates.string() << "; skipped");
        return;
    }
    const std::pair<const char*, chat_format> expected[] = {
        {"Qwen-QwQ-32B", chat_format::qwq},
        {"Mistral-Small-3.2-24B-Instruct-2506", chat_format::mistral_small3_2},
        {"unsloth-mistral-Devstral-Small-2507", chat_format::devstral},
        {"mistralai-Ministral-3-14B-Reasoning-2512", chat_format::ministral3},
        {"ibm-granite-granite-4.0", chat_format::granite4_0},
        {"ibm-granite-granite-4.1", chat_format::granite4_1},
        {"mistralai-Mistral-Nemo-Instruct-2407", chat_format::mistral},
        {"ibm-granite-granite-3.3-2B-Instruct", chat_format::granite3_3},
    };
    for (const auto& elem : expected) {
        // named parts, not structured bindings, which clang 14 cannot take into a lambda (CAPTURE)
        const auto& name = std::get<0>(elem); const auto& format = std::get<1>(elem);
        INFO(name);
        auto got = detect_chat_format(read_file(k_templates / "jinja" / (std::string(name) + ".jinja")));
        REQUIRE_MESSAGE(got.ok(), (got.ok() ? "" : got.err().message));
        CHECK(*got == format);
    }
    CHECK(describe_tool_calls(chat_format::qwq) == "qwen3 <tool_call>");
    CHECK(describe_tool_calls(chat_format::mistral_small3_2) == "mistral-named-id [TOOL_CALLS]");
    CHECK(describe_tool_calls(chat_format::devstral) == "mistral-named [TOOL_CALLS]");
    CHECK(describe_tool_calls(chat_format::ministral3) == "mistral-named [TOOL_CALLS]");
    CHECK(describe_tool_calls(chat_format::granite4_0) == "hermes <tool_call>");
    CHECK(call_trigger_of(tool_call_syntax::mistral_named_id) == "[TOOL_CALLS]");
    // Another [SYSTEM_PROMPT] template is still named, not rendered in a neighbour's format.
    auto other = detect_chat_format("{{ '[SYSTEM_PROMPT]' + system + '[/SYSTEM_PROMPT][AVAILABLE_TOOLS]' }}");
    REQUIRE_FALSE(other.ok());
    CHECK(other.err().message.find("does not run") != std::string::npos);
}

TEST_CASE("the newer families refuse what their templates raise on, and QwQ opens its think block as asked") {
    chat_message call{"assistant", ""};
    call.tool_calls.push_back({"abc", "get_trace", "{}"});
    chat_message result{"tool", "ok"};
    result.tool_call_id = "abc";
    const std::vector<chat_message> short_id = {{"user", "go"}, call, result};
    auto small = render_chat(chat_format::mistral_small3_2, short_id);
    REQUIRE_FALSE(small.ok());
    CHECK(small.err().message == "chat format mistral-small3.2: Tool call IDs should be alphanumeric strings with length 9!");
    // Devstral has no ids: the same conversation renders.
    auto devstral = render_chat(chat_format::devstral, short_id, {.add_generation_prompt = false, .bos_token = "<s>"});
    REQUIRE(devstral.ok());
    CHECK(devstral->ends_with("[INST]go[/INST][TOOL_CALLS]get_trace[ARGS]{}</s>[TOOL_RESULTS]ok[/TOOL_RESULTS]"));
    auto ministral = render_chat(chat_format::ministral3, std::vector<chat_message>{{"user", "go"}, {"assistant", ""}});
    REQUIRE_FALSE(ministral.ok());
    CHECK(ministral.err().message.find("Assistant message must have") != std::string::npos);
    auto twice = render_chat(chat_format::ministral3, std::vector<chat_message>{{"user", "a"}, {"user", "b"}});
    REQUIRE_FALSE(twice.ok());
    CHECK(twice.err().message.find("must alternate") != std::string::npos);

    const std::vector<chat_message> hi = {{"user", "hi"}};
    CHECK(*render_chat(chat_format::qwq, hi) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n</think>");
    CHECK(*render_chat(chat_format::qwq, hi, {.enable_thinking = true}) ==
          "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n");
    // Granite 4.0 writes its default system turn, 4.1 none.
    CHECK(render_chat(chat_format::granite4_0, hi)->starts_with("<|start_of_role|>system<|end_of_role|>You are a helpful assistant."));
    CHECK(*render_chat(chat_format::granite4_1, hi) ==
          "<|start_of_role|>user<|end_of_role|>hi<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>");
}
