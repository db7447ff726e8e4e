#include "runtime/chat/chat_generation.h"

#include <doctest/doctest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "tests/runtime/scripted_model.h"

using namespace tachyon;
using namespace tachyon::openai;

namespace {

std::shared_ptr<model_host> scripted_host(const std::vector<std::string>& turns, chat_format format = chat_format::chatml) {
    auto tok = scripted::chatml_tokenizer();
    auto m = std::make_unique<scripted::model>(tok, turns);
    m->set_fallback(tok.find_token("<|im_end|>"));
    return model_host::create(std::move(m), std::move(tok), format, engine_options{});
}

const char* k_tools = R"("tools": [{"type": "function", "function": {"name": "search_logs", "description": "Searches logs.",
    "parameters": {"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"], "additionalProperties": false}}}])";

struct run_result {
    std::vector<delta> deltas;
    completion done;
    bool ok = false;
};

run_result run(std::shared_ptr<model_host> host, const std::string& body) {
    auto req = parse_chat_request(body);
    REQUIRE_MESSAGE(req.ok(), req.err().message);
    boost::asio::io_context io;
    auto gen = chat_generation::create(host, std::move(req).value(), "scripted", io.get_executor());
    REQUIRE_MESSAGE(gen.ok(), gen.err().message);
    auto work = boost::asio::make_work_guard(io);
    run_result out;
    (*gen)->start([&](const delta& d) { out.deltas.push_back(d); },
                  [&](result<completion> c) {
                      out.ok = c.ok();
                      if (c) out.done = std::move(c).value();
                      work.reset();
                  });
    io.run();
    return out;
}

}  // namespace

TEST_CASE("chat_generation: text streams as content deltas after the role delta") {
    auto host = scripted_host({"Hello there."});
    auto r = run(host, R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0})");
    REQUIRE(r.ok);
    CHECK(r.done.content == "Hello there.");
    CHECK(r.done.finish_reason == "stop");
    REQUIRE(!r.deltas.empty());
    CHECK(r.deltas.front().role);
    std::string joined;
    for (const auto& d : r.deltas) joined += d.content;
    CHECK(joined == "Hello there.");
    CHECK(r.done.tokens.completion_tokens > 0);
    CHECK(r.done.tokens.prompt_tokens > 0);
}

TEST_CASE("chat_generation: a Hermes tool call becomes tool_calls, streamed as head and arguments fragments") {
    auto host = scripted_host({"Checking.\n<tool_call>\n{\"name\": \"search_logs\", \"arguments\": {\"service\": \"db\"}}\n</tool_call>"});
    auto r = run(host, std::string(R"({"model": "m", "messages": [{"role": "user", "content": "go"}], "temperature": 0, )") + k_tools + "}");
    REQUIRE(r.ok);
    CHECK(r.done.finish_reason == "tool_calls");
    REQUIRE(r.done.tool_calls.size() == 1);
    CHECK(r.done.tool_calls[0].name == "search_logs");
    CHECK(r.done.tool_calls[0].arguments_json == R"({"service": "db"})");
    CHECK(r.done.tool_calls[0].id.rfind("call_", 0) == 0);
    CHECK(r.done.content.find("<tool_call>") == std::string::npos);
    int heads = 0;
    std::string args;
    for (const auto& d : r.deltas) {
        if (d.tool_index != 0) continue;
        if (!d.tool_id.empty()) {
            ++heads;
            CHECK(d.tool_name == "search_logs");
        }
        args += d.arguments;
    }
    CHECK(heads == 1);
    CHECK(args == R"({"service": "db"})");
}

TEST_CASE("chat_generation: long arguments stream in several fragments that join to the parsed arguments") {
    const std::string args = R"({"service": "payments-database-primary-with-a-long-name"})";
    auto host = scripted_host({"<tool_call>\n{\"name\": \"search_logs\", \"arguments\": " + args + "}\n</tool_call>"});
    auto r = run(host, std::string(R"({"model": "m", "messages": [{"role": "user", "content": "go"}], "temperature": 0, "stream": true, )") + k_tools + "}");
    REQUIRE(r.ok);
    REQUIRE(r.done.tool_calls.size() == 1);
    CHECK(r.done.tool_calls[0].arguments_json == args);
    std::string joined;
    int fragments = 0;
    std::string head_id;
    for (const auto& d : r.deltas) {
        if (d.tool_index != 0) continue;
        if (!d.tool_id.empty()) {
            CHECK(head_id.empty());
            head_id = d.tool_id;
            CHECK(d.arguments.empty());
        }
        if (!d.arguments.empty()) ++fragments;
        joined += d.arguments;
    }
    CHECK(joined == args);
    CHECK(fragments >= 3);
    CHECK(head_id == r.done.tool_calls[0].id);
}

TEST_CASE("chat_generation: tool_choice required opens the turn with a call") {
    // The prompt already ends with <tool_call>: the script is the call's body.
    auto host = scripted_host({"\n{\"name\": \"search_logs\", \"arguments\": {\"service\": \"api\"}}\n</tool_call>"});
    auto r = run(host, std::string(R"({"model": "m", "messages": [{"role": "user", "content": "go"}], "temperature": 0,
                                       "tool_choice": "required", )") + k_tools + "}");
    REQUIRE(r.ok);
    REQUIRE(r.done.tool_calls.size() == 1);
    CHECK(r.done.tool_calls[0].arguments_json == R"({"service": "api"})");
    CHECK(r.done.content.empty());
}

TEST_CASE("chat_generation: the constraint keeps arguments valid for the tool's schema") {
    // The script tries an argument the schema forbids; the mask steers away from it.
    auto host = scripted_host({"\n{\"name\": \"search_logs\", \"arguments\": {\"bogus\": 1}}\n</tool_call>"});
    auto r = run(host, std::string(R"({"model": "m", "messages": [{"role": "user", "content": "go"}], "temperature": 0, "max_tokens": 80,
                                       "tool_choice": {"type": "function", "function": {"name": "search_logs"}}, )") + k_tools + "}");
    REQUIRE(r.ok);
    for (const auto& c : r.done.tool_calls) {
        CHECK(c.name == "search_logs");
        CHECK(c.arguments_json.find("bogus") == std::string::npos);
    }
}

TEST_CASE("chat_generation: a stop sequence ends the answer before it") {
    auto host = scripted_host({"Hello END world"});
    auto r = run(host, R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0, "stop": "END"})");
    REQUIRE(r.ok);
    CHECK(r.done.content == "Hello ");
    CHECK(r.done.finish_reason == "stop");
}

TEST_CASE("chat_generation: max_tokens ends with finish_reason length") {
    auto host = scripted_host({"A long answer that keeps going"});
    auto r = run(host, R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0, "max_tokens": 3})");
    REQUIRE(r.ok);
    CHECK(r.done.finish_reason == "length");
    CHECK(r.done.tokens.completion_tokens == 3);
}

TEST_CASE("chat_generation: response_format json_object forces a JSON object") {
    auto host = scripted_host({"\"a\": 1}"});
    auto r = run(host, R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0,
                           "response_format": {"type": "json_object"}})");
    REQUIRE(r.ok);
    CHECK(r.done.content == "{\"a\": 1}");
}

TEST_CASE("chat_generation: a prompt past the context is an error naming max_tokens") {
    auto host = scripted_host({"x"});
    auto req = parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 100000})");
    REQUIRE(req.ok());
    boost::asio::io_context io;
    auto gen = chat_generation::create(host, std::move(req).value(), "m", io.get_executor());
    REQUIRE_FALSE(gen.ok());
    CHECK(gen.err().message.rfind("max_tokens: ", 0) == 0);
}

TEST_CASE("chat_generation: every family with tool calls is served with tools, its calls parsed in its syntax") {
    struct family_case {
        chat_format format;
        std::string script;
    };
    const family_case cases[] = {
        {chat_format::llama3_1, "{\"name\": \"search_logs\", \"parameters\": {\"service\": \"api\"}}"},
        {chat_format::llama3_2, "<|python_tag|>{\"name\": \"search_logs\", \"parameters\": {\"service\": \"api\"}}"},
        {chat_format::mistral, "[TOOL_CALLS][{\"name\": \"search_logs\", \"arguments\": {\"service\": \"api\"}}]"},
        {chat_format::phi4_mini, "<|tool_call|>[{\"name\": \"search_logs\", \"arguments\": {\"service\": \"api\"}}]<|/tool_call|>"},
        {chat_format::granite3_3, "<|tool_call|>[{\"name\": \"search_logs\", \"arguments\": {\"service\": \"api\"}}]"},
        {chat_format::qwen3, "<think>\nThe logs.\n</think>\n\n<tool_call>\n{\"name\": \"search_logs\", \"arguments\": {\"service\": \"api\"}}\n</tool_call>"},
    };
    for (const auto& c : cases) {
        CAPTURE(to_string(c.format));
        auto r = run(scripted_host({c.script}, c.format),
                     std::string(R"({"model": "m", "messages": [{"role": "user", "content": "go"}], "temperature": 0, "stream": true, )") +
                         k_tools + "}");
        REQUIRE(r.ok);
        REQUIRE(r.done.tool_calls.size() == 1);
        CHECK(r.done.tool_calls[0].name == "search_logs");
        CHECK(r.done.tool_calls[0].arguments_json == R"({"service": "api"})");
        CHECK(r.done.finish_reason == "tool_calls");
        CHECK(r.done.content.empty());
        // Mistral's template takes back only ids of 9 alphanumeric characters.
        if (c.format == chat_format::mistral) CHECK(r.done.tool_calls[0].id.size() == 9);
    }
}

TEST_CASE("chat_generation: Qwen3's think block is reasoning_content, streamed apart from the content") {
    auto r = run(scripted_host({"<think>\nLet me think.\n</think>\n\nThe answer."}, chat_format::qwen3),
                 R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0, "stream": true})");
    REQUIRE(r.ok);
    CHECK(r.done.content == "The answer.");
    CHECK(r.done.reasoning_content == "Let me think.\n");
    std::string content, reasoning;
    for (const auto& d : r.deltas) {
        content += d.content;
        reasoning += d.reasoning_content;
    }
    CHECK(content == "The answer.");
    CHECK(reasoning == "Let me think.\n");
    CHECK(completion_json(r.done).find("\"reasoning_content\":\"Let me think.\\n\"") != std::string::npos);
}

TEST_CASE("chat_generation: a Llama 3 call is constrained from its trigger, and tool_choice required opens with it") {
    // The prompt ends with the trigger {"name": the script is the rest, with an argument the schema forbids.
    auto r = run(scripted_host({": \"search_logs\", \"parameters\": {\"bogus\": 1}}"}, chat_format::llama3_1),
                 std::string(R"({"model": "m", "messages": [{"role": "user", "content": "go"}], "temperature": 0, "max_tokens": 80,
                                 "tool_choice": "required", )") + k_tools + "}");
    REQUIRE(r.ok);
    for (const auto& c : r.done.tool_calls) {
        CHECK(c.name == "search_logs");
        CHECK(c.arguments_json.find("bogus") == std::string::npos);
    }
    r = run(scripted_host({": \"search_logs\", \"parameters\": {\"service\": \"api\"}}"}, chat_format::llama3_1),
            std::string(R"({"model": "m", "messages": [{"role": "user", "content": "go"}], "temperature": 0,
                            "tool_choice": "required", )") + k_tools + "}");
    REQUIRE(r.ok);
    REQUIRE(r.done.tool_calls.size() == 1);
    CHECK(r.done.tool_calls[0].arguments_json == R"({"service": "api"})");
}

TEST_CASE("chat_generation: tools for a family without tool calls are refused naming the format") {
    auto host = scripted_host({"hi"}, chat_format::gemma3);
    auto req = parse_chat_request(std::string(R"({"model": "m", "messages": [{"role": "user", "content": "go"}], )") + k_tools + "}");
    REQUIRE(req.ok());
    boost::asio::io_context io;
    auto gen = chat_generation::create(host, std::move(req).value(), "scripted", io.get_executor());
    REQUIRE_FALSE(gen.ok());
    CHECK(gen.err().message.find("gemma3") != std::string::npos);
}

TEST_CASE("chat_generation: tachyon_forced_tokens replays the given tokens, and only where the server allows it") {
    auto host = scripted_host({"Hello there."});
    std::vector<int32_t> forced = host->encode_plain("Recorded answer.");
    forced.push_back(host->tok().find_token("<|im_end|>"));
    std::string ids;
    for (int32_t t : forced) ids += (ids.empty() ? "" : ",") + std::to_string(t);
    const std::string body = R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0, "tachyon_forced_tokens": [)" + ids + "]}";
    auto req = parse_chat_request(body);
    REQUIRE_MESSAGE(req.ok(), req.err().message);
    CHECK(req->forced_tokens == forced);
    CHECK(parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tachyon_forced_tokens": [1, -2]})").err().message ==
          "tachyon_forced_tokens[1]: expected an integer in [0, 2147483647], got -2");

    boost::asio::io_context io;
    auto refused = chat_generation::create(host, *req, "scripted", io.get_executor());
    REQUIRE(!refused.ok());
    CHECK(refused.err().message.find("tachyon_forced_tokens: this server does not replay forced tokens") == 0);

    generation_limits allow;
    allow.allow_forced_tokens = true;
    auto gen = chat_generation::create(host, std::move(req).value(), "scripted", io.get_executor(), allow);
    REQUIRE_MESSAGE(gen.ok(), gen.err().message);
    auto work = boost::asio::make_work_guard(io);
    completion done;
    (*gen)->start([](const delta&) {}, [&](result<completion> c) {
        REQUIRE_MESSAGE(c.ok(), c.err().message);
        done = std::move(c).value();
        work.reset();
    });
    io.run();
    CHECK(done.content == "Recorded answer.");
    CHECK(done.finish_reason == "stop");
    CHECK(done.tokens.completion_tokens == static_cast<int>(forced.size()));
}
