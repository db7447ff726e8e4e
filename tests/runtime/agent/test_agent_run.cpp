#include "runtime/agent/agent_run.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "runtime/agent/agent_service.h"
#include "runtime/journal/journal.h"
#include "runtime/common/json_util.h"
#include "runtime/agent/run_report.h"
#include "runtime/journal/timeline.h"
#include "runtime/agent/tool_catalog.h"
#include "tests/runtime/scripted_model.h"
#include "tests/tools/incident_fixture.h"

using namespace tachyon;

namespace {

const char* k_answer_ok =
    R"({"root_cause_service": "payments-db", "fault_type": "connection_pool_exhaustion", "first_bad_timestamp": "2026-03-14T14:04:58Z", "evidence": ["payments-db:3", "payments-db:6"]})";
const char* k_answer_wrong =
    R"({"root_cause_service": "payments", "fault_type": "connection_pool_exhaustion", "first_bad_timestamp": "2026-03-14T14:05:10.100Z", "evidence": ["payments:2", "payments:3"]})";

const char* k_output_schema =
    R"({"type":"object","properties":{"root_cause_service":{"type":"string"},"fault_type":{"type":"string"},"first_bad_timestamp":{"type":"string"},"evidence":{"type":"array","items":{"type":"string"},"minItems":1}},"required":["root_cause_service","fault_type","first_bad_timestamp","evidence"],"additionalProperties":false})";

std::string call(const std::string& name, const std::string& args) {
    return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>";
}

// A slow tool for timeouts: sleeps `ms` unless cancelled.
class sleepy_tool : public tools::tool {
public:
    explicit sleepy_tool(int ms) : ms_(ms) {}
    std::string_view name() const override { return "sleepy"; }
    std::string_view description() const override { return "Sleeps."; }
    std::string_view parameters_schema() const override { return R"({"type":"object","properties":{},"additionalProperties":false})"; }
    result<std::string> invoke(std::string_view, const tools::call_context& ctx) override {
        for (int i = 0; i < ms_ / 5; ++i) {
            if (ctx.cancelled()) return make_error(errc::cancelled, "sleepy: cancelled");
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return std::string("rested");
    }

private:
    int ms_;
};

struct harness {
    incident_fixture::temp_root root{"agent_run"};
    incident_fixture::temp_root journal_dir{"agent_run_journal"};
    std::shared_ptr<agent_definition> agent = std::make_shared<agent_definition>();
    bool prefix_cache = true;  // the engine's
    bool journal = true;
    boost::asio::io_context io_;  // destroyed after any host a test made from this harness
    std::shared_ptr<call_predictor> predictor;  // speculative tools: shared by this harness's runs when set
    run_observer* observer = nullptr;
    tool_wrapper wrap;  // the run's tool decorator, if any

    harness() {
        incident_fixture::write_incident(root.path);
        agent->file = "test-agent.json";
        agent->name = "test-agent";
        agent->instructions = "Find the root cause in {incident_dir}.";
        agent->chat_format = "chatml";
        for (const char* t : {"error_summary", "get_trace", "search_logs", "recent_changes"})
            agent->tools.push_back({t, {{"root", "{incident_dir}"}}, std::nullopt, {}});
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

    // A host whose scripted model plays `turns` in order, across runs.
    std::shared_ptr<model_host> make_host(const std::vector<std::string>& turns, int n_ctx = 1 << 15) const {
        auto tok = scripted::chatml_tokenizer();
        auto m = std::make_unique<scripted::model>(tok, turns);
        m->set_fallback(tok.find_token("<|im_end|>"));
        engine_options eo;
        eo.n_ctx = n_ctx;
        eo.prefix_cache = prefix_cache;
        return model_host::create(std::move(m), tok, chat_format::chatml, eo);
    }

    run_outcome run(const std::vector<std::string>& turns, run_switches sw = {}, std::vector<std::shared_ptr<tools::tool>> custom = {},
                    std::shared_ptr<std::atomic<bool>> cancel = nullptr, std::shared_ptr<model_host> shared_host = nullptr) {
        auto host = shared_host ? shared_host : make_host(turns);
        boost::asio::thread_pool pool(4);
        run_request req;
        req.agent = agent;
        req.task = "users report checkout 502s since ~14:05 UTC, find the root cause";
        req.inputs = {{"incident_dir", root.path.string()}};
        req.switches = sw;
        req.journal_dir = journal ? journal_dir.path.string() : std::string();
        req.custom_tools = std::move(custom);
        req.wrap_tool = wrap;
        // The service would open the model from a file; drive run_agent directly with the scripted host.
        // One event loop for the harness: the engine may drop a finished
        // request's callbacks (which hold executors) after a run returns.
        boost::asio::io_context& io = io_;
        io.restart();
        run_outcome out;
        run_environment env{host, &pool, observer, cancel ? cancel : std::make_shared<std::atomic<bool>>(false), predictor};
        boost::asio::co_spawn(boost::asio::make_strand(io), run_agent(env, req), [&](std::exception_ptr e, run_outcome o) {
            REQUIRE_FALSE(e);
            out = std::move(o);
        });
        io.run();
        pool.join();
        return out;
    }
};

}  // namespace

TEST_CASE("a scripted run calls a tool, answers, passes verification and writes its journal") {
    harness h;
    auto out = h.run({call("error_summary", "{}"), k_answer_ok});
    CHECK(out.state == "succeeded");
    CHECK(out.verified);
    CHECK(out.steps == 2);
    CHECK(out.verify_attempts == 1);
    REQUIRE(out.calls.size() == 2);  // the tool call and the verify call
    CHECK(out.calls[0].name == "error_summary");
    CHECK(out.calls[0].ok);
    CHECK(out.calls[0].early);  // dispatched while the turn was still decoding
    CHECK(out.calls[0].result.find("payments-db") != std::string::npos);
    CHECK(out.answer.find("\"root_cause_service\":\"payments-db\"") != std::string::npos);
    // The second turn prefilled only the tool response, not the conversation again.
    REQUIRE(out.turns.size() == 2);
    CHECK(out.turns[1].reused_tokens > out.turns[0].prefill_tokens);
    CHECK(out.turns[1].prefill_tokens < out.turns[0].prefill_tokens);

    auto log = journal::read_journal(out.journal_path);
    REQUIRE(log.ok());
    CHECK(log->warnings.empty());
    CHECK(log->start() != nullptr);
    REQUIRE(log->final_answer() != nullptr);
    CHECK(log->final_answer()->verified);
    REQUIRE(log->end() != nullptr);
    CHECK(log->end()->state == journal::run_state::succeeded);
}

TEST_CASE("a rejected answer goes back to the model, which corrects it") {
    harness h;
    auto out = h.run({k_answer_wrong, call("search_logs", R"({"service": "payments-db", "level": "ERROR"})"), k_answer_ok});
    CHECK(out.verified);
    CHECK(out.verify_attempts == 2);
    CHECK(out.steps == 3);
    // The feedback the model read names the dependency that failed first.
    REQUIRE(out.turns.size() == 3);
}

TEST_CASE("verification retries are bounded") {
    harness h;
    h.agent->max_verify_retries = 1;
    auto out = h.run({k_answer_wrong, k_answer_wrong, k_answer_wrong});
    CHECK_FALSE(out.verified);
    CHECK(out.state == "failed");
    CHECK(out.verify_attempts == 2);
    CHECK(out.error.find("did not pass verification") != std::string::npos);
}

TEST_CASE("unknown tools, bad arguments and malformed calls become errors the model reads") {
    // With constrained decoding (the default) the model cannot write these;
    // without it, or from a model that bypasses the mask, they are fed back.
    harness h;
    run_switches free;
    free.constrain = false;
    auto out = h.run({call("delete_database", "{}") + "\n" + call("search_logs", R"({"limit": 500})") +
                          "\n<tool_call>\n{\"name\": \"search_logs\", \"arguments\": {oops}\n</tool_call>",
                      k_answer_ok},
                     free);
    CHECK(out.verified);
    CHECK(out.calls.size() == 1);  // only the verify call ran; the three bad calls never reached a tool
    CHECK(out.n_tool_calls == 3);
    CHECK(out.n_bad_calls == 3);
    CHECK(out.steps == 2);
}

TEST_CASE("calls of one turn run concurrently, with early dispatch off they start after the turn") {
    harness h;
    h.agent->tools.push_back({"sleepy", {}, std::nullopt, {}});
    std::vector<std::shared_ptr<tools::tool>> custom{std::make_shared<sleepy_tool>(200)};
    const std::string turn = call("sleepy", "{}") + "\n" + call("sleepy", "{}") + "\n" + call("sleepy", "{}");
    auto parallel = h.run({turn, k_answer_ok}, {}, custom);
    REQUIRE(parallel.calls.size() == 4);
    // The three 200 ms calls overlap: each started before any of them ended.
    double last_start = 0, first_end = 1e300;
    for (const auto& c : parallel.calls) {
        if (c.name != "sleepy") continue;
        last_start = std::max(last_start, c.start_ms);
        first_end = std::min(first_end, c.end_ms);
    }
    CHECK(last_start < first_end);
    CHECK(parallel.calls[0].early);

    run_switches seq;
    seq.early_dispatch = false;
    seq.parallel_tools = false;
    auto sequential = h.run({turn, k_answer_ok}, seq, custom);
    REQUIRE(sequential.calls.size() == 4);
    CHECK_FALSE(sequential.calls[0].early);
    CHECK(sequential.calls[1].start_ms >= sequential.calls[0].end_ms);
    CHECK(sequential.calls[2].start_ms >= sequential.calls[1].end_ms);
}

TEST_CASE("a tool that hangs is cut off at its timeout and the run goes on") {
    harness h;
    h.agent->tools.push_back({"sleepy", {}, int64_t{50}, {}});
    std::vector<std::shared_ptr<tools::tool>> custom{std::make_shared<sleepy_tool>(5000)};
    auto out = h.run({call("sleepy", "{}"), k_answer_ok}, {}, custom);
    CHECK(out.verified);
    REQUIRE(out.calls.size() >= 1);
    CHECK_FALSE(out.calls[0].ok);
    CHECK(out.calls[0].result.find("timed out after 50 ms") != std::string::npos);
    CHECK(out.calls[0].end_ms - out.calls[0].start_ms < 1000);
}

// A tool that holds its work back in begin(): an hour on a timer bound to
// the call's cut-off signal.
class held_tool : public tools::tool {
public:
    std::atomic<int> n_invoked{0};
    bool wait_cut_off = false;
    std::string_view name() const override { return "held"; }
    std::string_view description() const override { return "Waits before it works."; }
    std::string_view parameters_schema() const override { return R"({"type":"object","properties":{},"additionalProperties":false})"; }
    result<std::string> invoke(std::string_view, const tools::call_context&) override {
        ++n_invoked;
        return std::string("done");
    }
    void begin(const tools::call_start& start, std::function<void()> work) override {
        auto timer = std::make_shared<boost::asio::steady_timer>(start.executor, std::chrono::hours(1));
        timer->async_wait(boost::asio::bind_cancellation_slot(start.cut_off, [this, timer, work, cut_off = start.cut_off](boost::system::error_code ec) mutable {
            cut_off.clear();
            if (ec) wait_cut_off = true;
            else work();
        }));
    }
};

TEST_CASE("a tool waiting to begin its work is cut off by the timeout, and by a cancelled run") {
    harness h;
    h.agent->tools.push_back({"held", {}, int64_t{50}, {}});
    auto held = std::make_shared<held_tool>();
    auto out = h.run({call("held", "{}"), k_answer_ok}, {}, {held});
    CHECK(out.verified);
    REQUIRE(out.calls.size() >= 1);
    CHECK(out.calls[0].result.find("timed out after 50 ms") != std::string::npos);
    CHECK(held->wait_cut_off);
    CHECK(held->n_invoked == 0);

    harness h2;
    h2.agent->tools.push_back({"held", {}, std::nullopt, {}});
    auto held2 = std::make_shared<held_tool>();
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    std::thread canceller([cancel] {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        cancel->store(true);
    });
    // Returns only once nothing waits: the hour's timer must have been cut off.
    auto cancelled = h2.run({call("held", "{}"), k_answer_ok}, {}, {held2}, cancel);
    canceller.join();
    CHECK(cancelled.state == "cancelled");
    CHECK(held2->wait_cut_off);
    CHECK(held2->n_invoked == 0);
}

TEST_CASE("a run's tool wrapper wraps every tool it calls, its verify checks too") {
    // A decorator that forwards everything and notes what it wrapped and started.
    struct noting_tool : tools::tool {
        std::shared_ptr<tools::tool> inner;
        std::shared_ptr<std::vector<std::string>> started;
        std::string_view name() const override { return inner->name(); }
        std::string_view description() const override { return inner->description(); }
        std::string_view parameters_schema() const override { return inner->parameters_schema(); }
        tools::tool_flags flags() const override { return inner->flags(); }
        result<std::string> invoke(std::string_view a, const tools::call_context& ctx) override { return inner->invoke(a, ctx); }
        void begin(const tools::call_start& start, std::function<void()> work) override {
            started->push_back(std::string(inner->name()));
            inner->begin(start, std::move(work));
        }
    };
    harness h;
    std::set<std::string> wrapped;
    auto started = std::make_shared<std::vector<std::string>>();
    h.wrap = [&](std::shared_ptr<tools::tool> t) -> std::shared_ptr<tools::tool> {
        wrapped.insert(std::string(t->name()));
        auto n = std::make_shared<noting_tool>();
        n->inner = std::move(t);
        n->started = started;
        return n;
    };
    auto out = h.run({call("error_summary", "{}"), k_answer_ok});
    CHECK(out.verified);
    CHECK(wrapped == std::set<std::string>{"error_summary", "get_trace", "search_logs", "recent_changes", "verify_root_cause"});
    CHECK(*started == std::vector<std::string>{"error_summary", "verify_root_cause"});
}

TEST_CASE("budgets: max_steps and the deadline end the run with budget_exhausted") {
    harness h;
    h.agent->budgets.max_steps = 2;
    auto out = h.run({call("error_summary", "{}"), call("error_summary", "{}"), call("error_summary", "{}"), k_answer_ok});
    CHECK(out.state == "budget_exhausted");
    CHECK(out.steps == 2);
    CHECK(out.error.find("max_steps") != std::string::npos);

    harness h2;
    h2.agent->tools.push_back({"sleepy", {}, std::nullopt, {}});
    h2.agent->budgets.deadline_ms = 100;
    std::vector<std::shared_ptr<tools::tool>> custom{std::make_shared<sleepy_tool>(3000)};
    auto late = h2.run({call("sleepy", "{}"), k_answer_ok}, {}, custom);
    CHECK(late.state == "budget_exhausted");
    CHECK(late.error.find("deadline") != std::string::npos);

    harness h3;
    h3.agent->budgets.max_tokens = 10;
    auto wordy = h3.run({call("error_summary", "{}"), k_answer_ok});
    CHECK(wordy.state == "budget_exhausted");
}

TEST_CASE("cancellation stops a run in a tool wait and closes the journal") {
    harness h;
    h.agent->tools.push_back({"sleepy", {}, std::nullopt, {}});
    std::vector<std::shared_ptr<tools::tool>> custom{std::make_shared<sleepy_tool>(5000)};
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    std::thread canceller([cancel] {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        cancel->store(true);
    });
    const auto t0 = std::chrono::steady_clock::now();
    auto out = h.run({call("sleepy", "{}"), k_answer_ok}, {}, custom, cancel);
    canceller.join();
    CHECK(out.state == "cancelled");
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
    auto log = journal::read_journal(out.journal_path);
    REQUIRE(log.ok());
    REQUIRE(log->end() != nullptr);
    CHECK(log->end()->state == journal::run_state::cancelled);
    // run_end is the last event: no call of the run is recorded after it
    REQUIRE(!log->events.empty());
    CHECK(std::holds_alternative<journal::run_end_event>(log->events.back().body));
}

TEST_CASE("without kv_retain every turn prefills the whole conversation, unless the prefix cache has it") {
    run_switches sw;
    sw.kv_retain = false;
    harness stateless;
    stateless.prefix_cache = false;
    auto out = stateless.run({call("error_summary", "{}"), k_answer_ok}, sw);
    CHECK(out.verified);
    REQUIRE(out.turns.size() == 2);
    CHECK(out.turns[1].reused_tokens == 0);
    CHECK(out.turns[1].prefill_tokens > out.turns[0].prefill_tokens);

    // A stateless client of a caching engine: the re-sent conversation is
    // found in the cache but for its last, partial block.
    harness cached;
    auto c = cached.run({call("error_summary", "{}"), k_answer_ok}, sw);
    CHECK(c.verified);
    REQUIRE(c.turns.size() == 2);
    CHECK(c.turns[1].reused_tokens >= c.turns[0].prefill_tokens - 16);
    CHECK(c.turns[1].prefill_tokens < out.turns[1].prefill_tokens);
    CHECK(c.answer == out.answer);
}

TEST_CASE("constrained decoding keeps a model from calling unknown tools or inventing identifiers") {
    harness h;
    // The script tries an unknown tool and an id never seen in the run; the
    // mask turns both into valid, grounded calls (the scripted model then
    // drifts off its script, which is the point).
    auto out = h.run({call("delete_database", "{}"), k_answer_ok});
    CHECK(out.n_bad_calls == 0);
    for (const auto& c : out.calls) {
        CHECK(c.name != "delete_database");
    }
}

TEST_CASE("a missing input for a placeholder is a clear error") {
    harness h;
    h.agent->instructions = "Look at {incident_dir} and {other_thing}.";
    auto out = h.run({k_answer_ok});
    CHECK(out.state == "failed");
    CHECK(out.error.find("{other_thing}") != std::string::npos);
}

TEST_CASE("speculative tools: a call the agent's earlier runs always made starts before the model writes it") {
    harness h;
    h.predictor = std::make_shared<call_predictor>();
    const std::vector<std::string> script{call("search_logs", R"({"service": "checkout", "level": "ERROR"})"), k_answer_ok};
    for (int i = 0; i < 3; ++i) {  // three runs teach the predictor (min_support 3)
        auto out = h.run(script);
        CHECK(out.verified);
        CHECK(out.n_spec_calls == 0);
    }
    auto out = h.run(script);
    CHECK(out.verified);
    CHECK(out.n_spec_calls == 1);
    CHECK(out.n_spec_hits == 1);
    REQUIRE(out.calls.size() == 2);  // the model's call (served by the prediction) and verify
    CHECK(out.calls[0].name == "search_logs");
    CHECK(out.calls[0].call_id == "call_1_0");
    CHECK(out.calls[0].start_ms < out.turns[0].end_ms);
    CHECK(out.calls[0].result.find("checkout") != std::string::npos);
    CHECK(out.calls[0].speculative);
    CHECK_FALSE(out.calls[1].speculative);
    auto log = journal::read_journal(out.journal_path);
    REQUIRE(log.ok());
    CHECK(log->warnings.empty());
    // the journal says which call a prediction served
    int n_speculative = 0;
    for (const auto& e : log->events)
        if (const auto* c = std::get_if<journal::tool_call_event>(&e.body)) n_speculative += c->speculative ? 1 : 0;
    CHECK(n_speculative == 1);
}

TEST_CASE("speculative tools: a call whose arguments the turn before last already held starts a turn early") {
    harness h;
    h.predictor = std::make_shared<call_predictor>();
    // The model reads the summary, looks at the changes of the service it
    // names, then at its logs: the logs call needs nothing the changes add.
    const std::vector<std::string> script{call("error_summary", "{}"), call("recent_changes", R"({"service": "payments-db"})"),
                                          call("search_logs", R"({"service": "payments-db", "level": "ERROR"})"), k_answer_ok};
    for (int i = 0; i < 3; ++i) h.run(script);  // three runs teach the predictor (min_support 3)
    auto out = h.run(script);
    CHECK(out.verified);
    REQUIRE(out.turns.size() == 4);
    const run_tool_call* logs = nullptr;
    for (const auto& c : out.calls)
        if (c.name == "search_logs") logs = &c;
    REQUIRE(logs != nullptr);
    CHECK(logs->speculative);
    CHECK(logs->call_id == "call_3_0");  // the model's call in turn 3, served by the prediction
    CHECK(logs->result.find("payments-db") != std::string::npos);
    // started while the model was still writing turn 2 (its changes call)
    CHECK(logs->start_ms < out.turns[1].end_ms);
    CHECK(out.n_spec_hits == out.n_spec_calls);  // every prediction was a call the model made

    // The journal holds each call once, the logs call as the model's.
    auto log = journal::read_journal(out.journal_path);
    REQUIRE(log.ok());
    int n_logs = 0;
    for (const auto& e : log->events)
        if (const auto* c = std::get_if<journal::tool_call_event>(&e.body)) n_logs += c->name == "search_logs" ? 1 : 0;
    CHECK(n_logs == 1);
}

TEST_CASE("speculative tools: a prediction the model does not make is discarded, never shown to it") {
    harness h;
    h.predictor = std::make_shared<call_predictor>();
    for (int i = 0; i < 3; ++i) h.run({call("search_logs", R"({"service": "checkout"})"), k_answer_ok});
    // This time the model asks for something else.
    auto out = h.run({call("search_logs", R"({"service": "checkout", "level": "WARN"})"), k_answer_ok});
    CHECK(out.verified);
    CHECK(out.n_spec_calls == 1);
    CHECK(out.n_spec_hits == 0);
    REQUIRE(out.calls.size() == 2);
    CHECK(out.calls[0].arguments.find("WARN") != std::string::npos);
    for (const auto& c : out.calls) CHECK(c.result.find("discarded") == std::string::npos);

    // Switched off, nothing is predicted.
    run_switches off;
    off.speculative_tools = false;
    auto quiet = h.run({call("search_logs", R"({"service": "checkout"})"), k_answer_ok}, off);
    CHECK(quiet.n_spec_calls == 0);
}

TEST_CASE("the shipped model decides the same with every speed switch on or off (greedy)") {
    const std::string agent_file = std::string(TACHYON_SOURCE_DIR) + "/agents/incident-analyst.json";
    auto agent = load_agent_file(agent_file, builtin_tool_names());
    REQUIRE_MESSAGE(agent.ok(), (agent.ok() ? "" : agent.err().message));
    if (!std::filesystem::exists(agent->model)) {
        MESSAGE("skipped: the shipped model is absent");
        return;
    }
    incident_fixture::temp_root incident("switches_incident");
    incident_fixture::temp_root journals("switches_journal");
    incident_fixture::write_incident(incident.path);
    auto shared_agent = std::make_shared<agent_definition>(std::move(agent).value());

    struct decided {
        std::string answer;
        std::vector<std::string> calls;  // name + arguments, in the model's order
        std::vector<std::string> turns;
    };
    auto run = [&](run_switches sw, bool prefix_cache) {
        service_options so;
        so.engine.n_ctx = 16384;
        so.engine.prefix_cache = prefix_cache;
        agent_service service(so);
        run_request req;
        req.agent = shared_agent;
        req.task = "Checkout requests fail with 502s since about 14:05 UTC. Find the root cause.";
        req.inputs = {{"incident_dir", incident.path.string()}};
        req.switches = sw;
        req.journal_dir = journals.path.string();
        run_outcome out = service.run(req);
        decided d;
        d.answer = out.answer;
        auto calls = out.calls;
        std::stable_sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.call_id < b.call_id; });
        for (const auto& c : calls) d.calls.push_back(c.name + " " + c.arguments);
        for (const auto& t : out.turns) d.turns.push_back(t.text);
        return d;
    };
    const decided all_on = run({}, true);
    REQUIRE_FALSE(all_on.turns.empty());
    auto same = [&](const decided& d, const char* what) {
        INFO("switched off: " << what);
        CHECK(d.turns == all_on.turns);
        CHECK(d.calls == all_on.calls);
        CHECK(d.answer == all_on.answer);
    };
    run_switches sw;
    sw.spec_decode = false;
    same(run(sw, true), "spec_decode");
    sw = {};
    sw.jump_forward = false;
    same(run(sw, true), "jump_forward");
    sw = {};
    sw.kv_retain = false;
    same(run(sw, true), "kv_retain");
    same(run({}, false), "prefix_cache");
    sw = {};
    sw.early_dispatch = false;
    sw.parallel_tools = false;
    sw.speculative_tools = false;
    same(run(sw, true), "early_dispatch, parallel_tools, speculative_tools");
}

TEST_CASE("no KV block leaks after 1,000 agent runs on one engine") {
    harness h;
    h.journal = false;
    const int n_runs = 1000;
    std::vector<std::string> script;
    for (int i = 0; i < n_runs; ++i) script.push_back(k_answer_ok);
    auto host = h.make_host(script, 1 << 13);
    const int n_blocks = (1 << 13) / 16;
    for (int i = 0; i < n_runs; ++i) {
        auto out = h.run({}, {}, {}, nullptr, host);
        REQUIRE_MESSAGE(out.verified, "run " << i << ": " << out.state << " " << out.error);
    }
    engine& e = host->eng();
    auto sync = [&e] {  // a one-token request: the engine has processed everything before it
        request r;
        r.session = e.create_session();
        r.append = {1};
        e.run(std::move(r));
    };
    sync();
    auto c = e.counters();
    CHECK(c.n_requests >= static_cast<uint64_t>(n_runs));
    CHECK(c.n_cached > 0);  // runs after the first found the prompt in the cache
    // Every block is free, only cached, or the sync session's one block.
    CHECK(c.n_kv_blocks_free + c.n_kv_blocks_cached == n_blocks - 1);
    e.clear_prefix_cache();
    sync();
    CHECK(e.n_free_kv_blocks() == n_blocks - 2);  // the two sync sessions' blocks
}

namespace {

// Reads the run's journal back whenever the run reports something, and
// checks that what is reported is on disk already (as after a kill -9 at
// that moment).
struct journal_checker : run_observer {
    std::filesystem::path dir;
    std::vector<std::string> missing;
    int n_reports = 0;

    std::vector<journal::event> on_disk() const {
        for (const auto& entry : std::filesystem::directory_iterator(dir)) {
            auto log = journal::read_journal(entry.path());
            if (log) return log->events;
        }
        return {};
    }
    template <class T, class Pred>
    void expect(const std::string& what, Pred pred) {
        ++n_reports;
        for (const auto& e : on_disk())
            if (const auto* b = std::get_if<T>(&e.body); b && pred(*b)) return;
        missing.push_back(what);
    }
    void on_turn_start(int step) override {
        expect<journal::turn_start_event>("turn_start " + std::to_string(step), [&](const auto& t) { return t.step == step; });
    }
    void on_turn_end(const run_turn& t) override {
        expect<journal::model_turn_event>("model_turn " + std::to_string(t.step), [&](const auto& m) { return m.step == t.step; });
    }
    void on_tool_start(const run_tool_call& c) override {
        expect<journal::tool_start_event>("tool_start " + c.call_id, [&](const auto& s) { return s.call_id == c.call_id; });
    }
    void on_tool_end(const run_tool_call& c) override {
        expect<journal::tool_call_event>("tool_call " + c.call_id, [&](const auto& r) { return r.call_id == c.call_id; });
    }
    void on_verify(int attempt, bool, const std::string&) override {
        expect<journal::verify_event>("verify " + std::to_string(attempt), [&](const auto& v) { return v.attempt == attempt; });
    }
    void on_event(const journal::event& e) override {
        ++n_reports;
        for (const auto& d : on_disk())
            if (d.seq == e.seq && journal::type_name(d.body) == journal::type_name(e.body)) return;
        missing.push_back("event " + std::to_string(e.seq) + " " + std::string(journal::type_name(e.body)));
    }
};

template <class T>
std::vector<T> events_of(const journal::run_log& log) {
    std::vector<T> out;
    for (const auto& e : log.events)
        if (const auto* b = std::get_if<T>(&e.body)) out.push_back(*b);
    return out;
}

// A verify check written in code: passes when the answer's note is "ok",
// else says what the note was (quoting the model back, as checks do).
class note_check : public tools::tool {
public:
    std::string_view name() const override { return "note_check"; }
    std::string_view description() const override { return "Checks the note."; }
    std::string_view parameters_schema() const override {
        return R"({"type":"object","properties":{"note":{"type":"string"}},"required":["note"],"additionalProperties":false})";
    }
    result<std::string> invoke(std::string_view arguments, const tools::call_context&) override {
        const std::string args(arguments);
        if (args.find("\"ok\"") != std::string::npos) return std::string("verified: the note is right");
        return "not verified: your note says " + args + "; the first ERROR line is payments-db:3";
    }
};

}  // namespace

TEST_CASE("every reported event is in the journal on disk before the report arrives") {
    harness h;
    journal_checker checker;
    checker.dir = h.journal_dir.path;
    h.observer = &checker;
    // A tool result, a rejected answer and its verify, a correction, and a verified answer.
    auto out = h.run({call("error_summary", "{}"), k_answer_wrong, k_answer_ok});
    CHECK(out.verified);
    CHECK(checker.n_reports > 10);
    std::string missing;
    for (const auto& m : checker.missing) missing += m + "; ";
    CHECK_MESSAGE(checker.missing.empty(), "reported before it was journaled: " << missing);
}

TEST_CASE("the journal holds every call the model wrote, every rejected answer and every text it read instead") {
    harness h;
    run_switches free;
    free.constrain = false;  // so that the model can write bad calls
    auto out = h.run({call("delete_database", "{}") + "\n" + call("search_logs", R"({"limit": 500})") +
                          "\n<tool_call>\n{\"name\": \"search_logs\", \"arguments\": {oops}\n</tool_call>",
                      k_answer_wrong, k_answer_ok},
                     free);
    CHECK(out.verified);
    auto log = journal::read_journal(out.journal_path);
    REQUIRE(log.ok());
    CHECK(log->warnings.empty());

    const auto rejected = events_of<journal::call_rejected_event>(*log);
    REQUIRE(rejected.size() == 3);
    CHECK(rejected[0].call_id == "call_1_0");
    CHECK(rejected[0].name == "delete_database");
    CHECK(rejected[0].error.find("unknown tool 'delete_database'") != std::string::npos);
    CHECK(rejected[1].name == "search_logs");
    CHECK(rejected[1].arguments_json == R"({"limit":500})");
    CHECK(rejected[1].error.find("limit") != std::string::npos);
    CHECK(rejected[2].call_id == "call_1_2");
    CHECK(rejected[2].error.find("malformed JSON") != std::string::npos);

    // What the model read in place of tool output, exactly.
    const auto feedback = events_of<journal::feedback_event>(*log);
    REQUIRE(feedback.size() == 4);
    for (size_t i = 0; i < 3; ++i) {
        CHECK(feedback[i].source == "call");
        CHECK(feedback[i].call_id == rejected[i].call_id);
        CHECK(feedback[i].text == "error: " + rejected[i].error);
    }
    const auto answers = events_of<journal::answer_rejected_event>(*log);
    REQUIRE(answers.size() == 1);
    CHECK(answers[0].step == 2);
    CHECK(answers[0].answer == k_answer_wrong);
    CHECK(answers[0].error.rfind("verify_root_cause: ", 0) == 0);
    CHECK(feedback[3].source == "answer");
    CHECK(feedback[3].text == answers[0].error);
    CHECK(feedback[3].step == 2);

    // The timeline shows them.
    const std::string timeline = render_timeline_text(*log, 400);
    CHECK(timeline.find("REJECTED") != std::string::npos);
    CHECK(timeline.find("answer rejected") != std::string::npos);
}

TEST_CASE("a failed tool call's error, as the model read it, is journaled as feedback") {
    harness h;
    h.agent->tools.push_back({"sleepy", {}, int64_t{50}, {}});
    std::vector<std::shared_ptr<tools::tool>> custom{std::make_shared<sleepy_tool>(5000)};
    auto out = h.run({call("sleepy", "{}"), k_answer_ok}, {}, custom);
    CHECK(out.verified);
    auto log = journal::read_journal(out.journal_path);
    REQUIRE(log.ok());
    const auto feedback = events_of<journal::feedback_event>(*log);
    REQUIRE(feedback.size() == 1);
    CHECK(feedback[0].source == "tool");
    CHECK(feedback[0].call_id == "call_1_0");
    CHECK(feedback[0].text == "sleepy: timed out after 50 ms");
}

TEST_CASE("a call cut off by the token budget is journaled as rejected") {
    harness h;
    h.agent->budgets.max_tokens = 12;  // ends inside the call
    auto out = h.run({call("error_summary", "{}"), k_answer_ok});
    CHECK(out.state == "budget_exhausted");
    auto log = journal::read_journal(out.journal_path);
    REQUIRE(log.ok());
    const auto rejected = events_of<journal::call_rejected_event>(*log);
    REQUIRE(rejected.size() == 1);
    CHECK(rejected[0].call_id == "call_1_0");
    CHECK(std::holds_alternative<journal::run_end_event>(log->events.back().body));
}

TEST_CASE("a call written but not started when the run stops is journaled") {
    harness h;
    h.agent->budgets.deadline_ms = 200;
    // The call is complete early in a turn that goes on far past the
    // deadline; with early dispatch off it would start only after the turn.
    std::string rambling;
    for (int i = 0; i < 200; ++i) rambling += " w" + std::to_string(i);
    const std::vector<std::string> script{call("error_summary", "{}") + rambling, k_answer_ok};
    auto tok = scripted::chatml_tokenizer();
    auto m = std::make_unique<scripted::model>(tok, script);
    m->set_fallback(tok.find_token("<|im_end|>"));
    m->set_forward_delay(std::chrono::milliseconds(3));
    auto host = model_host::create(std::move(m), tok, chat_format::chatml, engine_options{});
    run_switches after_turn;
    after_turn.early_dispatch = false;
    auto out = h.run({}, after_turn, {}, nullptr, host);
    CHECK(out.state == "budget_exhausted");
    CHECK(out.calls.empty());
    auto log = journal::read_journal(out.journal_path);
    REQUIRE(log.ok());
    CHECK(events_of<journal::tool_call_event>(*log).empty());
    const auto rejected = events_of<journal::call_rejected_event>(*log);
    REQUIRE(rejected.size() == 1);
    CHECK(rejected[0].call_id == "call_1_0");
    CHECK(rejected[0].name == "error_summary");
    CHECK(rejected[0].error.rfind("not run: the run stopped (deadline", 0) == 0);
    CHECK(std::holds_alternative<journal::run_end_event>(log->events.back().body));
}

TEST_CASE("a schema error quoting the model's invented identifier does not make it groundable") {
    harness h;
    run_switches free;
    free.constrain = false;  // arguments are still validated against the grounded values
    // The answer invents a key; the validator names it back; the model then
    // asks for a service of that name, which no tool result ever held.
    const std::string invented =
        R"({"root_cause_service": "payments-db", "fault_type": "connection_pool_exhaustion", "first_bad_timestamp": "2026-03-14T14:04:58Z", "evidence": ["payments-db:3"], "ghost-svc-9": 1})";
    auto out = h.run({invented, call("search_logs", R"({"service": "ghost-svc-9"})"), k_answer_ok}, free);
    CHECK(out.verified);
    CHECK(out.n_bad_calls == 1);
    CHECK(out.calls.size() == 1);  // verify only: the call never reached search_logs
    auto log = journal::read_journal(out.journal_path);
    REQUIRE(log.ok());
    const auto rejected = events_of<journal::call_rejected_event>(*log);
    REQUIRE(rejected.size() == 1);
    CHECK(rejected[0].name == "search_logs");
    CHECK(rejected[0].error.find("ghost-svc-9") != std::string::npos);
}

TEST_CASE("a check quoting the rejected answer: its quoted words are not offered by the next answer's constraint") {
    harness h;
    h.agent->output_schema =
        R"({"type":"object","properties":{"service":{"type":"string","x-grounded":true},"note":{"type":"string"}},"required":["service","note"],"additionalProperties":false})";
    h.agent->verify.clear();
    agent_verify_check check;
    check.tool = "note_check";
    check.arguments = {{"note", "$.note"}};
    h.agent->verify.push_back(check);
    std::vector<std::shared_ptr<tools::tool>> custom{std::make_shared<note_check>()};
    // The first answer's note names a service no tool result holds; the
    // check quotes it back; the second answer tries to cite it.
    auto out = h.run({call("error_summary", "{}"), R"({"service": "payments-db", "note": "blame ghost-svc-9"})",
                      R"({"service": "ghost-svc-9", "note": "ok"})"},
                     {}, custom);
    REQUIRE(out.turns.size() >= 3);
    CHECK(out.turns[1].text.find("ghost-svc-9") != std::string::npos);  // the model's own words
    CHECK(out.turns[2].text.rfind(R"({"service": ")", 0) == 0);
    CHECK(out.turns[2].text.find(R"("service": "ghost-svc-9")") == std::string::npos);
    CHECK(out.answer.find("ghost-svc-9") == std::string::npos);
}

TEST_CASE("an agent without an output schema answers in prose; without checks it is answered, not verified") {
    harness h;
    h.agent->output_schema.clear();
    h.agent->verify.clear();
    const std::string prose = "The root cause is payments-db: its connection pool ran out at 14:04:58.";
    auto out = h.run({call("error_summary", "{}"), prose});
    CHECK(out.state == "succeeded");
    CHECK_FALSE(out.verified);
    CHECK(out.answer == json::quote(prose));
    CHECK(out.verify_attempts == 1);
    const std::string summary = outcome_summary(out);
    CHECK(summary.find("answered (no checks): " + prose) != std::string::npos);
    CHECK(summary.find("verified") == std::string::npos);
    CHECK(outcome_json(out).find(R"("state": "succeeded", "verified": false)") != std::string::npos);
    auto log = journal::read_journal(out.journal_path);
    REQUIRE(log.ok());
    REQUIRE(log->final_answer() != nullptr);
    CHECK_FALSE(log->final_answer()->verified);
    CHECK(log->final_answer()->answer_json == json::quote(prose));

    // A JSON object from an agent with no checks is accepted too, and not called verified.
    harness j;
    j.agent->verify.clear();
    auto obj = j.run({k_answer_ok});
    CHECK(obj.state == "succeeded");
    CHECK_FALSE(obj.verified);
    CHECK(outcome_summary(obj).find("answered (no checks)") != std::string::npos);

    // With checks, verified as before.
    harness v;
    CHECK(v.run({k_answer_ok}).verified);
}

TEST_CASE("a prose agent's check that reads an answer field is a clear error") {
    harness h;
    h.agent->output_schema.clear();  // the verify check reads $.root_cause_service ...
    auto out = h.run({"payments-db"});
    CHECK(out.state == "failed");
    CHECK(out.error.find("verify.checks[0].arguments.service") != std::string::npos);
    CHECK(out.error.find("no output_schema") != std::string::npos);
    // ... and the run that could not start is journaled.
    auto log = journal::read_journal(out.journal_path);
    REQUIRE(log.ok());
    CHECK(log->start() != nullptr);
    REQUIRE(log->end() != nullptr);
    CHECK(log->end()->state == journal::run_state::failed);
}
