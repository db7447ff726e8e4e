#include "runtime/agent/agent_run.h"

#include <doctest/doctest.h>

#include <tuple>

#include "tests/runtime/agent/agent_run_harness.h"

using namespace tachyon;
using namespace agent_run_test;


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

TEST_CASE("a run on a model of another family calls its tools in that family's syntax, dispatched early") {
    const std::pair<chat_format, std::string> families[] = {
        {chat_format::llama3_1, "{\"name\": \"error_summary\", \"parameters\": {}}"},
        {chat_format::qwen3, "<think>\nFirst the errors.\n</think>\n\n<tool_call>\n{\"name\": \"error_summary\", \"arguments\": {}}\n</tool_call>"},
        {chat_format::granite3_3, "<|tool_call|>[{\"name\": \"error_summary\", \"arguments\": {}}]"},
    };
    for (const auto& elem : families) {
        // named parts, not structured bindings, which clang 14 cannot take into a lambda (CAPTURE)
        const auto& format = std::get<0>(elem); const auto& call_text = std::get<1>(elem);
        CAPTURE(to_string(format));
        harness h;
        h.format = format;
        h.agent->chat_format = std::string(to_string(format));
        auto out = h.run({call_text, k_answer_ok});
        CHECK(out.state == "succeeded");
        CHECK(out.verified);
        REQUIRE(out.calls.size() == 2);  // the tool call and the verify call
        CHECK(out.calls[0].name == "error_summary");
        CHECK(out.calls[0].ok);
        CHECK(out.calls[0].early);
    }
}

TEST_CASE("a run on a Mistral model completes its tool loop: results carry the id the model wrote, as the templates demand") {
    // The family comes from the model's own template, as a GGUF's tokenizer.chat_template gives it.
    // Two tool turns: the templates' alternation check must see each as a turn of calls, not an answer.
    const std::pair<std::string, std::vector<std::string>> families[] = {
        {"mistralai-Mistral-Nemo-Instruct-2407",
         {"[TOOL_CALLS][{\"name\": \"error_summary\", \"arguments\": {}, \"id\": \"a1b2c3d4e\"}]",
          "[TOOL_CALLS][{\"name\": \"recent_changes\", \"arguments\": {}, \"id\": \"Z9y8X7w6V\"}]"}},
        {"Mistral-Small-3.2-24B-Instruct-2506",
         {"[TOOL_CALLS]error_summary[CALL_ID]a1b2c3d4e[ARGS]{}", "[TOOL_CALLS]recent_changes[CALL_ID]Z9y8X7w6V[ARGS]{}"}},
        {"unsloth-mistral-Devstral-Small-2507",
         {"[TOOL_CALLS]error_summary[ARGS]{}", "[TOOL_CALLS]recent_changes[ARGS]{}"}},
        {"mistralai-Ministral-3-14B-Reasoning-2512",
         {"[TOOL_CALLS]error_summary[ARGS]{}", "[TOOL_CALLS]recent_changes[ARGS]{}"}},
    };
    const std::filesystem::path jinja = std::filesystem::path(TACHYON_CONFORMANCE_DIR) / "templates" / "jinja";
    if (!std::filesystem::exists(jinja)) {
        MESSAGE("conformance templates not found at " << jinja.string() << "; skipped");
        return;
    }
    for (const auto& elem : families) {
        // named parts, not structured bindings, which clang 14 cannot take into a lambda (CAPTURE)
        const auto& name = std::get<0>(elem); const auto& call_texts = std::get<1>(elem);
        CAPTURE(name);
        std::ifstream in(jinja / (name + ".jinja"), std::ios::binary);
        const std::string template_text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto format = detect_chat_format(template_text);
        REQUIRE_MESSAGE(format.ok(), (format.ok() ? "" : format.err().message));
        harness h;
        h.format = *format;
        h.agent->chat_format = std::string(to_string(*format));
        // Constrained (the default): the grammar lets the model write the family's call, id included.
        auto out = h.run({call_texts[0], call_texts[1], k_answer_ok});
        CHECK(out.state == "succeeded");
        CHECK(out.error.empty());
        CHECK(out.verified);
        REQUIRE(out.calls.size() == 3);  // the tool calls and the verify call
        CHECK(out.calls[0].name == "error_summary");
        CHECK(out.calls[0].ok);
        CHECK(out.calls[0].early);
        CHECK(out.calls[1].name == "recent_changes");
        CHECK(out.calls[1].ok);
    }
}

TEST_CASE("a tool result's id is the model's when it is 9 letters and digits, else one made from the step and call") {
    CHECK(agent_detail::result_call_id("a1b2c3d4e", 3, 1) == "a1b2c3d4e");
    CHECK(agent_detail::result_call_id("", 3, 1) == "call00301");
    CHECK(agent_detail::result_call_id("call_0_1", 12, 4) == "call01204");
    CHECK(agent_detail::result_call_id("a1b2c3d4-", 1234, 123) == "call23423");
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

// A sleepy tool that bounds its own calls, as an MCP tool does (its client's
// request timeout, extended by progress up to a cap).
class bounded_tool : public sleepy_tool {
public:
    bounded_tool(int ms, int64_t bound_ms) : sleepy_tool(ms), bound_ms_(bound_ms) {}
    tools::tool_flags flags() const override {
        tools::tool_flags f;
        f.max_duration_ms = bound_ms_;
        return f;
    }

private:
    int64_t bound_ms_;
};

TEST_CASE("a tool that bounds its own calls is waited for up to its bound, past the run's default tool timeout") {
    harness h;
    h.agent->budgets.tool_timeout_ms = 100;
    h.agent->tools.push_back({"sleepy", {}, std::nullopt, {}});
    auto bounded = h.run({call("sleepy", "{}"), k_answer_ok}, {}, {std::make_shared<bounded_tool>(400, 5000)});
    REQUIRE(bounded.calls.size() >= 1);
    CHECK_MESSAGE(bounded.calls[0].ok, bounded.calls[0].result);
    CHECK(bounded.calls[0].result == "rested");
    // without a bound of its own, the run's default cuts the same call off
    auto unbounded = h.run({call("sleepy", "{}"), k_answer_ok}, {}, {std::make_shared<sleepy_tool>(400)});
    REQUIRE(unbounded.calls.size() >= 1);
    CHECK(unbounded.calls[0].result.find("timed out after 100 ms") != std::string::npos);
    // and a timeout the agent file gives the tool wins over the tool's bound
    h.agent->tools.back().timeout_ms = 50;
    auto capped = h.run({call("sleepy", "{}"), k_answer_ok}, {}, {std::make_shared<bounded_tool>(400, 5000)});
    REQUIRE(capped.calls.size() >= 1);
    CHECK(capped.calls[0].result.find("timed out after 50 ms") != std::string::npos);
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
