#include "runtime/db/worker.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "runtime/db/run_store.h"
#include "tests/runtime/db/pg_test_db.h"
#include "tests/runtime/db/worker_fixture.h"
#include "tests/runtime/telemetry/otlp_receiver.h"

using namespace tachyon;
using namespace worker_fixture;

TEST_CASE("worker: a run's spans are exported as under serve, continuing the traceparent it was queued with") {
    pg_test::fixture f("worker_trace");
    if (f.skipped()) return;
    agents_folder agents;
    REQUIRE(f.run(db::enqueue(*f.conn, "traced", "test-agent", k_task, agents.inputs())).ok());
    REQUIRE(f.run(db::enqueue(*f.conn, "fresh", "test-agent", k_task, agents.inputs())).ok());
    // The traceparent of the request that queued it (schema version 4).
    REQUIRE(f.conn->exec("UPDATE tachyon.runs SET traceparent = $1 WHERE id = 'traced'",
                         {std::string("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")})
                .ok());

    otlp_test::receiver rx;
    telemetry::otel_config config;
    config.traces_url = rx.traces_url();
    config.service_name = "worker-trace-test";
    auto tracer = telemetry::tracer::create(config);
    REQUIRE(tracer.ok());
    service_options so;
    so.tracer = *tracer;
    agent_service service(so);
    auto tok = scripted::chatml_tokenizer();
    std::vector<std::string> turns = k_turns;
    turns.insert(turns.end(), k_turns.begin(), k_turns.end());  // both runs
    auto m = std::make_unique<scripted::model>(tok, turns);
    m->set_fallback(tok.find_token("<|im_end|>"));
    engine_options eo;
    eo.n_threads = 1;
    eo.n_ctx = 16384;  // both runs' sessions at once
    service.add_host(agents.model_path, model_host::create(std::move(m), tok, chat_format::chatml, eo));

    db::worker w(service, worker_opts(f.url(), agents.dir.path.string()));
    auto st = w.run();
    REQUIRE_MESSAGE(st.ok(), st.err().message);
    CHECK(w.stats().finished == 2);
    for (const char* id : {"traced", "fresh"}) {
        auto row = f.run(db::get_run(*f.conn, id));
        REQUIRE(row.ok());
        REQUIRE(row->has_value());
        CHECK((*row)->state == "succeeded");
    }
    REQUIRE((*tracer)->flush(std::chrono::seconds(5)));

    const auto spans = otlp_test::all_spans(rx.requests());
    auto named = [&](const std::string& prefix) {
        std::vector<otlp_test::parsed_span> out;
        for (const auto& s : spans)
            if (s.name.rfind(prefix, 0) == 0) out.push_back(s);
        return out;
    };
    const auto runs = named("invoke_agent test-agent");
    REQUIRE(runs.size() == 2);
    const auto traced = std::find_if(runs.begin(), runs.end(), [](const auto& s) { return s.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"; });
    REQUIRE(traced != runs.end());
    CHECK(traced->parent_span_id == "00f067aa0ba902b7");  // a child of the queueing request's span
    const auto fresh = traced == runs.begin() ? runs.begin() + 1 : runs.begin();
    CHECK(fresh->trace_id != traced->trace_id);  // no traceparent: a trace of its own
    CHECK(fresh->parent_span_id.empty());
    // The run's model turns and tool calls hang under its invoke_agent span, as under serve.
    int chats = 0, tools_called = 0;
    for (const auto& s : named("chat ")) chats += s.parent_span_id == traced->span_id;
    for (const auto& s : named("execute_tool ")) tools_called += s.trace_id == traced->trace_id;
    CHECK(chats == 4);
    CHECK(tools_called >= 2);  // error_summary, search_logs
}
