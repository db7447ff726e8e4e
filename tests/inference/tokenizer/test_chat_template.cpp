#include "inference/tokenizer/chat_template.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace tachyon;

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

    const std::string phi3 = "{{ bos_token }}{% for message in messages %}{{'<|user|>' + '\\n'}}{% endfor %}";
    auto unknown = detect_chat_format(phi3);
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.err().message.find("tokenizer.chat_template") != std::string::npos);
    CHECK(unknown.err().message.find("chatml or llama3") != std::string::npos);
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
