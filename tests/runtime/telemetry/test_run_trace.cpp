#include "runtime/telemetry/run_trace.h"

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include "runtime/agent/agent_run.h"
#include "tests/runtime/remote/fake_backend.h"
#include "tests/runtime/scripted_model.h"
#include "tests/runtime/telemetry/otlp_receiver.h"
#include "tests/tools/incident_fixture.h"

using namespace tachyon;
using namespace std::chrono_literals;

namespace {

const char* k_answer_ok =
    R"({"root_cause_service": "payments-db", "fault_type": "connection_pool_exhaustion", "first_bad_timestamp": "2026-03-14T14:04:58Z", "evidence": ["payments-db:3", "payments-db:6"]})";
const char* k_output_schema =
    R"({"type":"object","properties":{"root_cause_service":{"type":"string"},"fault_type":{"type":"string"},"first_bad_timestamp":{"type":"string"},"evidence":{"type":"array","items":{"type":"string"},"minItems":1}},"required":["root_cause_service","fault_type","first_bad_timestamp","evidence"],"additionalProperties":false})";

std::string call(const std::string& name, const std::string& args) {
    return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>";
}

// The incident agent on the scripted model: one tool call, then the answer,
// which its verify check accepts.
struct traced_run {
    incident_fixture::temp_root root{"run_trace"};
    std::shared_ptr<agent_definition> agent = std::make_shared<agent_definition>();
    boost::asio::io_context io;

    traced_run() {
        incident_fixture::write_incident(root.path);
        agent->file = "incident-analyst.json";
        agent->name = "incident-analyst";
        agent->model = "/models/incident-analyst.gguf";
        agent->instructions = "Find the root cause in {incident_dir}.";
        agent->chat_format = "chatml";
        agent->sampling.temperature = 0.0f;
        agent->sampling.seed = 42;
        agent->budgets.max_tokens = 2048;
        for (const char* t : {"error_summary", "search_logs"}) agent->tools.push_back({t, {{"root", "{incident_dir}"}}, std::nullopt, {}});
        agent_verify_check check;
        check.tool = "verify_root_cause";
        check.arguments = {{"service", "$.root_cause_service"},
                           {"fault_type", "$.fault_type"},
                           {"first_bad_timestamp", "$.first_bad_timestamp"},
                           {"evidence", "$.evidence"}};
        check.settings = {{"root", "{incident_dir}"}};
        agent->verify.push_back(check);
        agent->output_schema = k_output_schema;
    }

    run_outcome run(std::shared_ptr<telemetry::tracer> tracer, std::vector<std::string> turns, std::string traceparent = {},
                    std::vector<std::shared_ptr<tools::tool>> custom = {}, std::shared_ptr<const remote::remote_model> remote = nullptr) {
        auto tok = scripted::chatml_tokenizer();
        auto m = std::make_unique<scripted::model>(tok, turns);
        m->set_fallback(tok.find_token("<|im_end|>"));
        engine_options eo;
        eo.n_ctx = 1 << 15;
        auto host = model_host::create(std::move(m), tok, chat_format::chatml, eo);
        boost::asio::thread_pool pool(2);
        run_request req;
        req.agent = agent;
        req.task = "users report checkout 502s since ~14:05 UTC, find the root cause";
        req.inputs = {{"incident_dir", root.path.string()}};
        req.journal_dir.clear();
        req.run_id = "run-traced-1";
        req.traceparent = std::move(traceparent);
        req.custom_tools = std::move(custom);
        run_environment env{host, &pool, nullptr, std::make_shared<std::atomic<bool>>(false), nullptr};
        env.tracer = std::move(tracer);
        env.remote = std::move(remote);
        run_outcome out;
        io.restart();
        boost::asio::co_spawn(boost::asio::make_strand(io), run_agent(env, req), [&](std::exception_ptr e, run_outcome o) {
            REQUIRE_FALSE(e);
            out = std::move(o);
        });
        io.run();
        pool.join();
        return out;
    }
};

std::shared_ptr<telemetry::tracer> make_tracer(const std::string& url, bool capture = false, std::string sampler = {},
                                               std::chrono::milliseconds timeout = 10s) {
    telemetry::otel_config c;
    c.traces_url = url;
    c.service_name = "incident-test";
    c.capture_content = capture;
    c.timeout = timeout;
    auto s = telemetry::sampler::parse(sampler, "");
    REQUIRE(s.ok());
    c.sampler = *s;
    auto t = telemetry::tracer::create(c);
    REQUIRE(t.ok());
    return *t;
}

const otlp_test::parsed_span& one_named(const std::vector<otlp_test::parsed_span>& spans, const std::string& name, int index = 0) {
    int seen = 0;
    for (const auto& s : spans)
        if (s.name == name && seen++ == index) return s;
    FAIL("no span " << name << " #" << index);
    return spans.front();
}

int count_named(const std::vector<otlp_test::parsed_span>& spans, const std::string& prefix) {
    int n = 0;
    for (const auto& s : spans) n += s.name.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
}

// A tool that keeps the traceparent its calls were given.
class traceparent_probe : public tools::tool {
public:
    std::string_view name() const override { return "probe"; }
    std::string_view description() const override { return "Reports nothing."; }
    std::string_view parameters_schema() const override { return R"({"type":"object","properties":{},"additionalProperties":false})"; }
    result<std::string> invoke(std::string_view, const tools::call_context& ctx) override {
        std::lock_guard lock(mutex);
        seen.emplace_back(ctx.traceparent);
        return std::string("nothing");
    }
    std::mutex mutex;
    std::vector<std::string> seen;
};

}  // namespace

TEST_CASE("an agent run exports invoke_agent, chat and execute_tool spans with the GenAI attributes") {
    otlp_test::receiver rx;
    auto tracer = make_tracer(rx.traces_url());
    traced_run r;
    auto out = r.run(tracer, {call("error_summary", "{}"), k_answer_ok});
    REQUIRE(out.state == "succeeded");
    REQUIRE(tracer->flush(10s));
    auto exports = otlp_test::parse_exports(rx.requests());
    REQUIRE_FALSE(exports.empty());
    CHECK(exports[0].resource.at("service.name").text == "incident-test");
    auto spans = otlp_test::all_spans(rx.requests());
    CHECK(spans.size() == 5);
    CHECK(count_named(spans, "invoke_agent ") == 1);
    CHECK(count_named(spans, "chat ") == 2);
    CHECK(count_named(spans, "execute_tool ") == 2);

    const auto& run = one_named(spans, "invoke_agent incident-analyst");
    CHECK(run.parent_span_id.empty());
    CHECK(run.kind == 1);
    CHECK(run.str("gen_ai.operation.name") == "invoke_agent");
    CHECK(run.str("gen_ai.agent.name") == "incident-analyst");
    CHECK(run.str("gen_ai.provider.name") == "tachyon");
    CHECK(run.str("gen_ai.request.model") == "incident-analyst");
    CHECK(run.str("gen_ai.conversation.id") == "run-traced-1");
    CHECK(run.str("tachyon.run.id") == "run-traced-1");
    CHECK(run.str("tachyon.run.state") == "succeeded");
    CHECK(run.str("tachyon.run.verified") == "true");
    CHECK(run.str("tachyon.run.turns") == "2");
    CHECK(run.status_code == 0);  // success leaves the status unset
    CHECK(run.end_ns() > run.start_ns());

    for (int i = 0; i < 2; ++i) {
        CAPTURE(i);
        const auto& chat = one_named(spans, "chat incident-analyst", i);
        CHECK(chat.trace_id == run.trace_id);
        CHECK(chat.parent_span_id == run.span_id);
        CHECK(chat.kind == 1);  // in-process generation
        CHECK(chat.str("gen_ai.operation.name") == "chat");
        CHECK(chat.str("gen_ai.provider.name") == "tachyon");
        CHECK(chat.str("gen_ai.request.model") == "incident-analyst");
        CHECK(chat.attributes.at("gen_ai.request.temperature").kind == "doubleValue");
        CHECK(chat.str("gen_ai.request.temperature") == "0");
        CHECK(chat.attributes.at("gen_ai.request.top_p").kind == "doubleValue");
        CHECK(chat.str("gen_ai.request.max_tokens") == "2048");
        CHECK(chat.str("gen_ai.request.seed") == "42");
        CHECK(chat.attributes.at("gen_ai.usage.input_tokens").kind == "intValue");
        CHECK(std::stoll(chat.str("gen_ai.usage.input_tokens")) == out.turns[i].prefill_tokens + out.turns[i].reused_tokens);
        CHECK(std::stoll(chat.str("gen_ai.usage.output_tokens")) == out.turns[i].generated_tokens);
        CHECK(std::stoll(chat.str("gen_ai.usage.cache_read.input_tokens")) == out.turns[i].reused_tokens);
        CHECK(chat.str("tachyon.prefix_cache.reused_tokens") == chat.str("gen_ai.usage.cache_read.input_tokens"));
        CHECK(chat.attributes.at("gen_ai.response.time_to_first_chunk").kind == "doubleValue");
        CHECK(std::stod(chat.str("gen_ai.response.time_to_first_chunk")) >= 0);
        CHECK(chat.str("tachyon.step") == std::to_string(i + 1));
        CHECK(chat.start_ns() >= run.start_ns());
        CHECK(chat.end_ns() <= run.end_ns());
        CHECK(chat.end_ns() >= chat.start_ns());
    }
    CHECK(one_named(spans, "chat incident-analyst", 0).str("gen_ai.response.finish_reasons") == "tool_calls");
    CHECK(one_named(spans, "chat incident-analyst", 0).attributes.at("gen_ai.response.finish_reasons").kind == "arrayValue");
    CHECK(one_named(spans, "chat incident-analyst", 1).str("gen_ai.response.finish_reasons") == "stop");
    // The second turn reused the first one's KV (kv_retain): the prefix cache attribute shows it.
    CHECK(std::stoll(one_named(spans, "chat incident-analyst", 1).str("tachyon.prefix_cache.reused_tokens")) > 0);

    const auto& tool = one_named(spans, "execute_tool error_summary");
    CHECK(tool.trace_id == run.trace_id);
    CHECK(tool.parent_span_id == run.span_id);
    CHECK(tool.str("gen_ai.operation.name") == "execute_tool");
    CHECK(tool.str("gen_ai.tool.name") == "error_summary");
    CHECK(tool.str("gen_ai.tool.call.id") == "call_1_0");
    CHECK(tool.str("gen_ai.tool.type") == "function");
    CHECK(tool.str("tachyon.tool.dispatched_while_decoding") == "true");  // early dispatch
    CHECK(tool.attributes.at("tachyon.tool.speculative_hit").kind == "boolValue");
    CHECK_FALSE(tool.has("gen_ai.tool.call.arguments"));  // no content capture by default
    CHECK_FALSE(tool.has("gen_ai.tool.call.result"));
    CHECK(tool.start_ns() >= run.start_ns());
    CHECK(tool.end_ns() >= tool.start_ns());
    // Started while the first turn was still decoding: before that chat span ended.
    CHECK(tool.start_ns() <= one_named(spans, "chat incident-analyst", 0).end_ns());

    const auto& check = one_named(spans, "execute_tool verify_root_cause");
    CHECK(check.str("tachyon.tool.verify") == "true");
    CHECK(check.status_code == 0);
    // Every span id is distinct.
    std::set<std::string> ids;
    for (const auto& s : spans) ids.insert(s.span_id);
    CHECK(ids.size() == spans.size());
}

TEST_CASE("with content capture the tool spans carry arguments and results, and a caller's traceparent is continued") {
    otlp_test::receiver rx;
    auto tracer = make_tracer(rx.traces_url(), true);
    traced_run r;
    const std::string parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    auto out = r.run(tracer, {call("search_logs", R"({"level": "ERROR"})"), k_answer_ok}, parent);
    REQUIRE(out.state == "succeeded");
    REQUIRE(tracer->flush(10s));
    auto spans = otlp_test::all_spans(rx.requests());
    const auto& run = one_named(spans, "invoke_agent incident-analyst");
    CHECK(run.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(run.parent_span_id == "00f067aa0ba902b7");
    const auto& tool = one_named(spans, "execute_tool search_logs");
    CHECK(tool.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(tool.str("gen_ai.tool.call.arguments").find("\"level\"") != std::string::npos);
    CHECK(tool.str("gen_ai.tool.call.result").find("payments-db") != std::string::npos);
}

TEST_CASE("sampler always_off exports nothing, and the run is unchanged") {
    otlp_test::receiver rx;
    auto tracer = make_tracer(rx.traces_url(), false, "always_off");
    traced_run r;
    auto out = r.run(tracer, {call("error_summary", "{}"), k_answer_ok});
    CHECK(out.state == "succeeded");
    REQUIRE(tracer->flush(5s));
    CHECK(rx.requests().empty());
    CHECK(tracer->n_exported() == 0);
    CHECK(tracer->n_dropped() == 0);
}

TEST_CASE("a dead collector neither fails nor holds up a run, and its spans are dropped and counted") {
    std::string url;
    {
        boost::asio::io_context io;
        boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
        url = "http://127.0.0.1:" + std::to_string(a.local_endpoint().port()) + "/v1/traces";
    }
    auto tracer = make_tracer(url);
    traced_run r;
    auto out = r.run(tracer, {call("error_summary", "{}"), k_answer_ok});
    CHECK(out.state == "succeeded");
    CHECK(out.verified);
    REQUIRE(tracer->flush(5s));
    CHECK(tracer->n_dropped() == 5);
    CHECK(tracer->n_exported() == 0);
}

TEST_CASE("a collector that never answers does not hold up a run: the run ends while the export still waits") {
    otlp_test::receiver rx;
    rx.hang(true);
    auto tracer = make_tracer(rx.traces_url(), false, {}, 1500ms);
    traced_run r;
    auto out = r.run(tracer, {call("error_summary", "{}"), k_answer_ok});
    CHECK(out.state == "succeeded");
    // Nothing is settled yet: the run did not wait for the collector.
    CHECK(tracer->n_exported() + tracer->n_dropped() == 0);
    REQUIRE(tracer->flush(10s));
    CHECK(tracer->n_dropped() == 5);
}

TEST_CASE("a chat completion becomes one chat span") {
    otlp_test::receiver rx;
    auto tracer = make_tracer(rx.traces_url());
    const auto where = tracer->start_root("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    telemetry::chat_span_info info;
    info.model = "incident-analyst";
    info.response_id = "chatcmpl-1";
    info.temperature = 0.7;
    info.top_p = 0.9;
    info.max_tokens = 64;
    info.seed = 7;
    info.input_tokens = 30;
    info.output_tokens = 5;
    info.cached_tokens = 12;
    info.finish_reason = "length";
    info.start = std::chrono::steady_clock::now();
    info.first_token = info.start + 20ms;
    info.end = info.start + 50ms;
    tracer->end(telemetry::chat_completion_span(*tracer, where, info));
    info.finish_reason.clear();
    info.error = "the engine failed";
    tracer->end(telemetry::chat_completion_span(*tracer, tracer->start_root(""), info));
    REQUIRE(tracer->flush(5s));
    auto spans = otlp_test::all_spans(rx.requests());
    REQUIRE(spans.size() == 2);
    const auto& s = spans[0];
    CHECK(s.name == "chat incident-analyst");
    CHECK(s.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(s.parent_span_id == "00f067aa0ba902b7");
    CHECK(s.str("gen_ai.operation.name") == "chat");
    CHECK(s.str("gen_ai.provider.name") == "tachyon");
    CHECK(s.str("gen_ai.response.id") == "chatcmpl-1");
    CHECK(std::stod(s.str("gen_ai.request.temperature")) == doctest::Approx(0.7));
    CHECK(s.str("gen_ai.request.max_tokens") == "64");
    CHECK(s.str("gen_ai.request.seed") == "7");
    CHECK(s.str("gen_ai.usage.input_tokens") == "30");
    CHECK(s.str("gen_ai.usage.output_tokens") == "5");
    CHECK(s.str("gen_ai.usage.cache_read.input_tokens") == "12");
    CHECK(s.str("gen_ai.response.finish_reasons") == "length");
    CHECK(std::stod(s.str("gen_ai.response.time_to_first_chunk")) == doctest::Approx(0.02).epsilon(0.01));
    CHECK(s.end_ns() - s.start_ns() == 50'000'000ULL);
    CHECK(spans[1].status_code == 2);
    CHECK(spans[1].str("error.type") == "generation_failed");
}

TEST_CASE("a tool call receives its execute_tool span as traceparent (what an MCP request sends on)") {
    otlp_test::receiver rx;
    auto tracer = make_tracer(rx.traces_url());
    traced_run r;
    r.agent->tools.push_back({"probe", {}, std::nullopt, {}});
    auto probe = std::make_shared<traceparent_probe>();
    auto out = r.run(tracer, {call("probe", "{}"), k_answer_ok}, {}, {probe});
    REQUIRE(out.state == "succeeded");
    REQUIRE(tracer->flush(10s));
    auto spans = otlp_test::all_spans(rx.requests());
    const auto& tool = one_named(spans, "execute_tool probe");
    REQUIRE(probe->seen.size() == 1);
    CHECK(probe->seen[0] == "00-" + tool.trace_id + "-" + tool.span_id + "-01");
    // Untraced runs give tools none.
    traced_run plain;
    plain.agent->tools.push_back({"probe", {}, std::nullopt, {}});
    auto quiet = std::make_shared<traceparent_probe>();
    REQUIRE(plain.run(nullptr, {call("probe", "{}"), k_answer_ok}, {}, {quiet}).state == "succeeded");
    REQUIRE(quiet->seen.size() == 1);
    CHECK(quiet->seen[0].empty());
}

TEST_CASE("a remote model's turn is a CLIENT chat span whose traceparent goes with the request") {
    otlp_test::receiver rx;
    auto tracer = make_tracer(rx.traces_url());
    fake_backend::server backend({fake_backend::sse({
        R"({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "x", "function": {"name": "error_summary", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]})",
        R"({"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 100}}})"})});
    auto model = std::make_shared<remote::remote_model>();
    model->url = backend.url();
    model->name = "qwen-remote";
    model->provider = "vllm";
    traced_run r;
    r.agent->budgets.max_steps = 1;
    auto out = r.run(tracer, {}, {}, {}, model);
    CHECK(out.state == "budget_exhausted");
    REQUIRE(tracer->flush(10s));
    auto spans = otlp_test::all_spans(rx.requests());
    const auto& chat = one_named(spans, "chat qwen-remote");
    CHECK(chat.kind == 3);
    CHECK(chat.str("gen_ai.provider.name") == "vllm");
    CHECK(chat.str("gen_ai.request.model") == "qwen-remote");
    CHECK(chat.str("server.address") == "127.0.0.1");
    CHECK(chat.attributes.at("server.port").kind == "intValue");
    CHECK(chat.str("gen_ai.response.finish_reasons") == "tool_calls");
    const auto& run = one_named(spans, "invoke_agent incident-analyst");
    CHECK(run.str("gen_ai.provider.name") == "vllm");
    CHECK(run.status_code == 2);
    CHECK(run.str("error.type") == "budget_exhausted");
    auto requests = backend.requests();
    REQUIRE(requests.size() == 1);
    CHECK(requests[0].find("traceparent: 00-" + chat.trace_id + "-" + chat.span_id + "-01\r\n") != std::string::npos);
}
