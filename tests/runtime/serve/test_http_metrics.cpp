#include "runtime/serve/http_metrics.h"

#include <doctest/doctest.h>

#include "tests/runtime/scripted_model.h"

using namespace tachyon;

namespace {

bool has_line(const std::string& text, const std::string& line) { return text.find("\n" + line + "\n") != std::string::npos; }

}  // namespace

TEST_CASE("http_metrics: requests, tokens, in-flight and queue gauges, prefix-cache hit rate") {
    http::metrics m;
    m.count_request("/v1/chat/completions", 200);
    m.count_request("/v1/chat/completions", 200);
    m.count_request("/v1/chat/completions", 429);
    m.chat_started();
    m.chat_started();
    m.chat_first_token();
    std::string text = m.render({}, {});
    CHECK(has_line(text, R"(tachyon_http_requests_total{route="/v1/chat/completions",status="200"} 2)"));
    CHECK(has_line(text, R"(tachyon_http_requests_total{route="/v1/chat/completions",status="429"} 1)"));
    CHECK(has_line(text, "tachyon_chat_requests_in_flight 2"));
    CHECK(has_line(text, "tachyon_chat_queue_depth 1"));
    m.chat_finished(true, 100, 10, 75);
    m.chat_finished(false, 100, 0, 25);
    text = m.render({}, {});
    CHECK(has_line(text, "tachyon_chat_requests_in_flight 0"));
    CHECK(has_line(text, "tachyon_chat_queue_depth 0"));
    CHECK(has_line(text, "tachyon_prompt_tokens_total 200"));
    CHECK(has_line(text, "tachyon_completion_tokens_total 10"));
    CHECK(has_line(text, "tachyon_prefix_cache_hit_rate 0.5"));
    CHECK(has_line(text, "tachyon_completion_tokens_per_second 1"));
    CHECK(text.find("# TYPE tachyon_chat_queue_depth gauge") != std::string::npos);
}

TEST_CASE("http_metrics: tool latency is a cumulative histogram in seconds") {
    http::metrics m;
    m.observe_tool("search_logs", 3);
    m.observe_tool("search_logs", 40);
    m.observe_tool("search_logs", 20000);
    const std::string text = m.render({}, {{"running", 1}, {"succeeded", 2}});
    CHECK(has_line(text, R"(tachyon_tool_call_duration_seconds_bucket{tool="search_logs",le="0.005"} 1)"));
    CHECK(has_line(text, R"(tachyon_tool_call_duration_seconds_bucket{tool="search_logs",le="0.05"} 2)"));
    CHECK(has_line(text, R"(tachyon_tool_call_duration_seconds_bucket{tool="search_logs",le="10"} 2)"));
    CHECK(has_line(text, R"(tachyon_tool_call_duration_seconds_bucket{tool="search_logs",le="+Inf"} 3)"));
    CHECK(has_line(text, R"(tachyon_tool_call_duration_seconds_count{tool="search_logs"} 3)"));
    CHECK(has_line(text, R"(tachyon_runs{state="succeeded"} 2)"));
}

TEST_CASE("http_metrics: KV blocks come from the model's engine") {
    auto tok = scripted::chatml_tokenizer();
    auto model = std::make_unique<scripted::model>(tok, std::vector<std::string>{});
    engine_options o;
    o.n_ctx = 1024;
    o.block_size = 16;
    auto host = model_host::create(std::move(model), std::move(tok), chat_format::chatml, o);
    http::metrics m;
    const std::string text = m.render({{"scripted", host}}, {});
    CHECK(has_line(text, R"(tachyon_kv_blocks_total{model="scripted"} 64)"));
    CHECK(has_line(text, R"(tachyon_engine_prefix_cache_hit_rate{model="scripted"} 0)"));
    CHECK(has_line(text, R"(tachyon_engine_queue_depth{model="scripted"} 0)"));
    // Used blocks are what the engine thread last published: present, at most the total.
    const size_t at = text.find(R"(tachyon_kv_blocks_used{model="scripted"} )");
    REQUIRE(at != std::string::npos);
    const int used = std::stoi(text.substr(at + std::string_view(R"(tachyon_kv_blocks_used{model="scripted"} )").size()));
    CHECK(used >= 0);
    CHECK(used <= 64);
}
