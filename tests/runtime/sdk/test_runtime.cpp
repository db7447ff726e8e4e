#include "tachyon/runtime.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/runtime/sdk/sdk_fixture.h"
#include "tests/runtime/telemetry/otlp_receiver.h"

using namespace tachyon::sdk;
using sdk_fixture::call;

namespace {

const char* k_order_schema =
    R"({"type":"object","properties":{"order_id":{"type":"integer","minimum":1}},"required":["order_id"],"additionalProperties":false})";
const char* k_answer_schema = R"({"type":"object","properties":{"status":{"type":"string"}},"required":["status"],"additionalProperties":false})";

// An agent on the scripted model with one C++ tool, served by `rt`.
struct scripted_agent {
    sdk_fixture::model_dir dir;
    sdk_fixture::scripted_host model;
    std::atomic<int> n_lookups{0};
    std::shared_ptr<tool> lookup = make_tool({"lookup_order", "Status of an order.", k_order_schema},
                                             [this](std::string_view args) -> result<std::string> {
                                                 ++n_lookups;
                                                 auto id = tool_arguments::parse(args)->integer("order_id");
                                                 if (*id == 404) return error{errc::not_found, "no order 404"};
                                                 return R"({"status": "shipped"})";
                                             });
    agent_spec spec;

    explicit scripted_agent(const std::vector<std::string>& turns) : model(turns) {
        spec.name = "support";
        spec.instructions = "Answer from the order database.";
        spec.model = dir.model_file();
        spec.chat_format = "chatml";
        spec.tools = {lookup};
        spec.output_schema = k_answer_schema;
    }
    agent make() const { return agent::build(spec).value(); }
    void serve(runtime& rt) const { runtime_access::add_model(rt, dir.model_file(), model.host); }
};

}  // namespace

TEST_CASE("a run through the public API calls a C++ tool, answers and streams its events in order") {
    scripted_agent s({call("lookup_order", R"({"order_id": 7})"), R"({"status": "shipped"})"});
    runtime rt;
    s.serve(rt);
    std::vector<std::string> kinds;
    std::string streamed;
    run_options o;
    o.on_event = [&](const event& e) {
        if (std::get_if<turn_start_event>(&e)) kinds.push_back("turn_start");
        if (auto* t = std::get_if<text_event>(&e)) streamed += t->text;
        if (std::get_if<turn_end_event>(&e)) kinds.push_back("turn_end");
        if (auto* t = std::get_if<tool_start_event>(&e)) kinds.push_back("tool_start " + t->call.name);
        if (auto* t = std::get_if<tool_end_event>(&e)) kinds.push_back("tool_end " + t->call.name + (t->call.ok ? " ok" : " failed"));
        if (auto* v = std::get_if<verify_event>(&e)) kinds.push_back(v->ok ? "verify ok" : "verify failed");
    };
    run_result r = rt.run(s.make(), "where is order 7?", o);
    CHECK(r.state == run_state::succeeded);
    CHECK(to_string(r.state) == "succeeded");
    CHECK_FALSE(r.verified);  // accepted: the agent has no verify checks to vouch for it
    CHECK(r.answer == R"({"status":"shipped"})");
    CHECK(r.steps == 2);
    CHECK(s.n_lookups == 1);
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0].name == "lookup_order");
    CHECK(r.calls[0].arguments == R"({"order_id": 7})");
    CHECK(r.calls[0].result == R"({"status": "shipped"})");
    REQUIRE(r.turns.size() == 2);
    CHECK(r.journal_path.empty());  // no journal unless asked
    // The tool started while the first turn was still decoding (early dispatch).
    REQUIRE(kinds.size() >= 5);
    CHECK(kinds[0] == "turn_start");
    CHECK(std::find(kinds.begin(), kinds.end(), "tool_end lookup_order ok") != kinds.end());
    CHECK(kinds[kinds.size() - 2] == "turn_start");
    CHECK(kinds.back() == "turn_end");
    CHECK(streamed == r.turns[0].text + r.turns[1].text);
    // The model read the tool's result in its next turn.
    CHECK(s.model.transcript().find("<tool_response>\n{\"status\": \"shipped\"}\n</tool_response>") != std::string::npos);
}

TEST_CASE("arguments failing a C++ tool's schema never reach it, and the model reads the validation error") {
    scripted_agent s({call("lookup_order", R"({"order_id": "seven"})"), call("lookup_order", R"({"order_id": 404})"),
                      R"({"status": "unknown"})"});
    runtime rt;
    s.serve(rt);
    run_options o;
    o.constrain = false;  // a constrained model could not write the bad call at all
    run_result r = rt.run(s.make(), "where is order seven?", o);
    CHECK(r.state == run_state::succeeded);
    CHECK(r.n_tool_calls == 2);
    CHECK(r.n_bad_calls == 1);
    CHECK(s.n_lookups == 1);  // only the valid call ran
    REQUIRE(r.calls.size() == 1);
    CHECK_FALSE(r.calls[0].ok);
    CHECK(r.calls[0].result == "no order 404");
    const std::string transcript = s.model.transcript();
    CHECK(transcript.find("<tool_response>\nerror: lookup_order: ") != std::string::npos);  // the schema error, for the model
    CHECK(transcript.find("order_id") != std::string::npos);
    CHECK(transcript.find("no order 404") != std::string::npos);  // the tool's own error, for the model
}

TEST_CASE("a C++ verify check rejects an answer, the model corrects it") {
    scripted_agent s({R"({"status": "lost"})", R"({"status": "shipped"})"});
    s.spec.tools.push_back(make_tool({"check_status", "Checks a status.",
                                      R"({"type":"object","properties":{"status":{"type":"string"}},"required":["status"]})"},
                                     [](std::string_view args) -> result<std::string> {
                                         if (*tool_arguments::parse(args)->string("status") != "shipped") {
                                             return error{errc::invalid_argument, "the order database says shipped"};
                                         }
                                         return std::string("verified: shipped");
                                     }));
    s.spec.verify = {{"check_status", {{"status", "$.status"}}, {}}};
    runtime rt;
    s.serve(rt);
    int n_verify = 0, n_failed = 0;
    run_options o;
    o.on_event = [&](const event& e) {
        if (auto* v = std::get_if<verify_event>(&e)) {
            ++n_verify;
            n_failed += v->ok ? 0 : 1;
        }
    };
    run_result r = rt.run(s.make(), "where is order 7?", o);
    CHECK(r.verified);
    CHECK(r.verify_attempts == 2);
    CHECK(n_verify == 2);
    CHECK(n_failed == 1);
    CHECK(r.answer == R"({"status":"shipped"})");
    CHECK(s.model.transcript().find("the order database says shipped") != std::string::npos);
}

TEST_CASE("start() returns at once, cancel() stops the run in a tool wait and wait() returns cancelled") {
    scripted_agent s({call("hang", "{}"), R"({"status": "late"})"});
    std::atomic<bool> tool_started{false}, tool_saw_cancel{false};
    s.spec.tools.push_back(make_tool({"hang", "Waits until cancelled.", R"({"type":"object"})"},
                                     [&](std::string_view, const tool_call_context& ctx) -> result<std::string> {
                                         tool_started = true;
                                         for (int i = 0; i < 1000 && !ctx.cancelled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
                                         tool_saw_cancel = ctx.cancelled();
                                         return error{errc::cancelled, "hang: cancelled"};
                                     }));
    runtime rt;
    s.serve(rt);
    std::atomic<bool> on_done_called{false};
    run_handle h = rt.start(s.make(), "wait", {}, [&](const run_result& r) { on_done_called = r.state == run_state::cancelled; });
    for (int i = 0; i < 400 && !tool_started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(tool_started);
    CHECK_FALSE(h.done());
    h.cancel();
    const run_result& r = h.wait();
    CHECK(h.done());
    CHECK(r.state == run_state::cancelled);
    CHECK_FALSE(r.verified);
    CHECK(h.future().get().state == run_state::cancelled);
    for (int i = 0; i < 400 && !tool_saw_cancel; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(tool_saw_cancel);
    for (int i = 0; i < 400 && !on_done_called; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(on_done_called);
}

TEST_CASE("destroying the runtime cancels the runs still going and waits for them") {
    scripted_agent s({call("hang", "{}"), R"({"status": "late"})"});
    std::atomic<bool> tool_started{false};
    s.spec.tools.push_back(make_tool({"hang", "Waits until cancelled.", R"({"type":"object"})"},
                                     [&](std::string_view, const tool_call_context& ctx) -> result<std::string> {
                                         tool_started = true;
                                         while (!ctx.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
                                         return error{errc::cancelled, "hang: cancelled"};
                                     }));
    std::shared_future<run_result> f;
    {
        runtime rt;
        s.serve(rt);
        f = rt.start(s.make(), "wait").future();
        for (int i = 0; i < 400 && !tool_started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(f.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
    CHECK(f.get().state == run_state::cancelled);
}

TEST_CASE("a run that cannot start ends failed with an error naming the cause") {
    scripted_agent s({R"({"status": "x"})"});
    s.spec.instructions = "Orders live in {database}.";
    runtime rt;
    s.serve(rt);
    run_result r = rt.run(s.make(), "where is order 7?");
    CHECK(r.state == run_state::failed);
    CHECK(r.error.find("{database}") != std::string::npos);

    // A model file that is not a GGUF model: the error names the file.
    scripted_agent other({});
    run_result bad_model = rt.run(other.make(), "hello");
    CHECK(bad_model.state == run_state::failed);
    CHECK(bad_model.error.find(other.dir.model_file()) != std::string::npos);
}

TEST_CASE("runs can write a journal and take extra C++ tools per run") {
    scripted_agent s({call("ping", "{}"), R"({"status": "pong"})"});
    s.spec.tools.push_back({"ping"});  // not built in: supplied per run below
    runtime rt;
    s.serve(rt);
    // An agent naming a tool neither built in nor given as a C++ tool does not build.
    CHECK_FALSE(agent::build(s.spec).ok());
    s.spec.tools.pop_back();
    s.spec.tools.push_back(make_tool({"ping", "Answers pong.", R"({"type":"object"})"}, [](std::string_view) { return std::string("original"); }));
    run_options o;
    o.journal_dir = (s.dir.path / "runs").string();
    o.run_id = "sdk-test-run";
    o.tools = {make_tool({"ping", "Answers pong.", R"({"type":"object"})"}, [](std::string_view) { return std::string("pong"); })};
    run_result r = rt.run(s.make(), "ping", o);
    CHECK(r.state == run_state::succeeded);
    CHECK(r.run_id == "sdk-test-run");
    CHECK(r.journal_path == (s.dir.path / "runs" / "sdk-test-run.jsonl").string());
    CHECK(std::filesystem::exists(r.journal_path));
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0].result == "pong");  // the per-run tool is found first
}

TEST_CASE("runtime_options::otlp_endpoint traces every run, continuing run_options::traceparent") {
    otlp_test::receiver rx;
    scripted_agent s({call("lookup_order", R"({"order_id": 7})"), R"({"status": "shipped"})"});
    {
        runtime_options ro;
        ro.otlp_endpoint = rx.base_url();
        runtime rt(ro);
        s.serve(rt);
        run_options o;
        o.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        CHECK(rt.run(s.make(), "where is order 7?", o).state == run_state::succeeded);
    }  // the runtime's end sends what is left
    auto spans = otlp_test::all_spans(rx.requests());
    REQUIRE(spans.size() == 4);  // the run, two turns, one call
    int n_run = 0, n_tool = 0;
    for (const auto& sp : spans) {
        CHECK(sp.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
        if (sp.name == "invoke_agent support") {
            ++n_run;
            CHECK(sp.parent_span_id == "00f067aa0ba902b7");
        }
        if (sp.name == "execute_tool lookup_order") ++n_tool;
    }
    CHECK(n_run == 1);
    CHECK(n_tool == 1);
}
