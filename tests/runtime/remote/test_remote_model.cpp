#include "runtime/remote/remote_model.h"

#include <doctest/doctest.h>

using namespace tachyon;
using namespace tachyon::remote;

TEST_CASE("remote_model: the object of an agent file, with defaults") {
    auto m = parse_remote_model(R"({"url": "http://gpu-1:8000/v1/", "name": "qwen2.5-7b", "api_key_env": "KEY", "tools": "text",
                                   "chat_format": "qwen2.5", "timeout_s": 1.5, "idle_timeout_s": 4, "headers": {"X-Team": "sre"}})",
                                "a.json: model");
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.err().message));
    CHECK(m->url == "http://gpu-1:8000/v1");
    CHECK(m->name == "qwen2.5-7b");
    CHECK(m->tools == tool_mode::text);
    CHECK(m->timeouts.first_token.count() == 1500);
    CHECK(m->timeouts.idle.count() == 4000);
    CHECK(m->timeouts.connect.count() == 10000);
    CHECK(m->headers.at("X-Team") == "sre");
    CHECK(m->describe() == "qwen2.5-7b at http://gpu-1:8000/v1");
    auto d = parse_remote_model(R"({"url": "http://h/v1", "name": "n"})", "m");
    REQUIRE(d.ok());
    CHECK(d->tools == tool_mode::server);
    CHECK(d->provider == "openai");  // the API it speaks, unless named
    auto named = parse_remote_model(R"({"url": "http://h/v1", "name": "n", "provider": "vllm"})", "m");
    REQUIRE(named.ok());
    CHECK(named->provider == "vllm");
    CHECK(looks_like_remote_model("  {\"url\": 1}"));
    CHECK_FALSE(looks_like_remote_model("models/a.gguf"));
}

TEST_CASE("remote_model: bad objects are errors naming the key and what was expected") {
    auto err = [](const char* text) {
        auto m = parse_remote_model(text, "a.json: model");
        REQUIRE_FALSE(m.ok());
        return m.err().message;
    };
    CHECK(err(R"({"name": "n"})") == "a.json: model.url: missing (required: the API base, e.g. \"http://host:8000/v1\")");
    CHECK(err(R"({"url": "http://h/v1"})") == "a.json: model.name: missing (required: the model name the server serves)");
    CHECK(err(R"({"url": "http://h/v1", "name": "n", "tools": "both"})") == "a.json: model.tools: expected \"server\" or \"text\", got \"both\"");
    CHECK(err(R"({"url": "http://h/v1", "name": "n", "timeout_s": -1})").rfind("a.json: model.timeout_s: expected seconds in (0, 86400]", 0) == 0);
    CHECK(err(R"({"url": "http://h/v1", "name": "n", "temperature": 0})").rfind("a.json: model.temperature: unknown key (expected one of: url, name,", 0) == 0);
    CHECK(err(R"({"url": "https://api.example.com/v1", "name": "n"})").find("model.url: url 'https://api.example.com/v1': https is not supported yet, use a local TLS proxy") !=
          std::string::npos);
    CHECK(err(R"({"url": "ftp://h", "name": "n"})").find("expected http://host[:port]/path") != std::string::npos);
    CHECK(err(R"({"url": "http://h/v1", "name": "n", "headers": {"X-A": "1\r\nX-B: 2"}})") ==
          "a.json: model.headers.X-A: expected a header name and a value on one line");
    CHECK(err(R"({"url": "http://h/v1", "name": "n", "provider": ""})").find("model.provider: expected the backend's name") != std::string::npos);
    CHECK(err("[1]") == "a.json: model: expected an object with url and name, got an array");
}
