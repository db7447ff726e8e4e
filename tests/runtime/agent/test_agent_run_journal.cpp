// The agent run and its journal: what is recorded, resume, approval,
// attention and fencing; MCP tools in a run.
#include "runtime/agent/agent_run.h"

#include <doctest/doctest.h>

#include "tests/runtime/agent/agent_run_harness.h"

using namespace tachyon;
using namespace agent_run_test;

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

TEST_CASE("an agent without an output schema answers in prose, without checks it is answered, not verified") {
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

TEST_CASE("an MCP server's tools join the agent's tools: dispatched early, read-only ones speculated, schemas normalised") {
    harness h;
    agent_mcp_server m;
    m.name = "fake";
    m.command = {"/usr/bin/python3", std::string(TACHYON_SOURCE_DIR) + "/tests/tools/mcp/fake_mcp_server.py", "normal"};
    m.tools = {"echo", "add", "fail"};
    h.agent->mcp_servers.push_back(m);
    auto out = h.run({call("echo", R"({"text": "from mcp"})") + "\n" + call("add", R"({"a": 2, "b": 3})") + "\n" + call("fail", "{}"),
                      k_answer_ok});
    CHECK(out.state == "succeeded");
    REQUIRE(out.calls.size() >= 3);
    // The three run at once: they are reported in the order they end.
    auto by_name = [&](const std::string& name) {
        auto it = std::find_if(out.calls.begin(), out.calls.end(), [&](const auto& c) { return c.name == name; });
        REQUIRE(it != out.calls.end());
        return *it;
    };
    const auto echo = by_name("echo"), add = by_name("add"), fail = by_name("fail");
    CHECK(echo.ok);
    CHECK(echo.early);
    CHECK(echo.result == "from mcp");
    CHECK(add.result == R"({"sum": 5})");
    CHECK_FALSE(fail.ok);  // isError: an error result the model reads
    CHECK(fail.result == "no such order");

    // A name the agent has already is refused, naming the server's tool.
    h.agent->mcp_servers[0].tools = {"echo"};
    h.agent->tools.push_back({"read_file", {{"roots", "/tmp"}}, std::nullopt, {}});
    agent_mcp_server twice = m;
    twice.name = "again";
    twice.tools = {"echo"};
    h.agent->mcp_servers.push_back(twice);
    auto clash = h.run({k_answer_ok});
    CHECK(clash.state == "failed");
    CHECK(clash.error.find("mcp_servers: tool 'echo' has the name of another tool of the agent") != std::string::npos);
}

// --- durable runs: resume, approval, idempotency ---------------------------

namespace {

// A tool with side effects (it does not say it is read-only): counts its
// calls and keeps the idempotency keys it received.
class effect_tool : public tools::tool {
public:
    std::atomic<int> n_invoked{0};
    std::vector<std::string> keys;  // written on the tool pool, read after the run
    std::string_view name() const override { return "deploy"; }
    std::string_view description() const override { return "Deploys."; }
    std::string_view parameters_schema() const override { return R"({"type":"object","properties":{},"additionalProperties":false})"; }
    result<std::string> invoke(std::string_view, const tools::call_context& ctx) override {
        ++n_invoked;
        keys.emplace_back(ctx.idempotency_key);
        return std::string("deployed");
    }
};

std::vector<std::string> journal_lines(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// The journal as a killed process would have left it: its first `n` lines,
// then `torn` (a line cut off mid-write, no newline).
void cut_journal(const std::filesystem::path& path, const std::vector<std::string>& lines, size_t n, const std::string& torn = {}) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (size_t i = 0; i < n; ++i) out << lines[i] << "\n";
    out << torn;
}

template <class event_type>
int count_events(const journal::run_log& log) {
    int n = 0;
    for (const auto& e : log.events) n += std::holds_alternative<event_type>(e.body) ? 1 : 0;
    return n;
}

journal::run_log read_back(const std::string& path) {
    auto log = journal::read_journal(path);
    REQUIRE_MESSAGE(log.ok(), (log.ok() ? "" : log.err().message));
    return std::move(log).value();
}

}  // namespace

TEST_CASE("resume: a run cut after any journal line, or in the middle of one, resumes to the same answer without redoing what it recorded") {
    const std::vector<std::string> turns = {call("error_summary", "{}"), call("search_logs", R"({"service": "payments-db"})"), k_answer_wrong, k_answer_ok};
    harness h;
    auto twin = h.run(turns);
    REQUIRE(twin.state == "succeeded");
    REQUIRE(twin.verified);
    const auto lines = journal_lines(twin.journal_path);
    REQUIRE(lines.size() > 10);
    for (size_t n = 1; n < lines.size(); ++n) {
        for (bool torn : {false, true}) {
            CAPTURE(n);
            CAPTURE(torn);
            cut_journal(twin.journal_path, lines, n, torn ? lines[n].substr(0, lines[n].size() / 2) : std::string());
            const auto before = read_back(twin.journal_path);
            CHECK(before.warnings.size() == (torn ? 1u : 0u));
            // The model plays on from the first turn the journal lacks.
            const auto played = static_cast<size_t>(count_events<journal::model_turn_event>(before));
            auto host = h.make_host(std::vector<std::string>(turns.begin() + static_cast<std::ptrdiff_t>(played), turns.end()));
            auto resumed = h.resume(twin.run_id, host);
            CHECK(resumed.state == "succeeded");
            CHECK(resumed.verified);
            CHECK(resumed.answer == twin.answer);
            CHECK(resumed.resumed);
            const auto after = read_back(twin.journal_path);
            CHECK(after.state() == "succeeded");
            // Every turn once, and the recorded ones were not generated again.
            CHECK(count_events<journal::model_turn_event>(after) == 4);
            CHECK(count_events<journal::final_event>(after) == 1);
            CHECK(count_events<journal::run_resume_event>(after) == 1);
            for (size_t i = 0; i < resumed.turns.size(); ++i) CHECK(resumed.turns[i].replayed == (i < played));
        }
    }
}

TEST_CASE("resume: a finished run cannot be resumed, and a running one is refused by its journal's lock") {
    harness h;
    auto out = h.run({call("error_summary", "{}"), k_answer_ok});
    REQUIRE(out.state == "succeeded");
    auto again = read_resumable(h.journal_dir.path, out.run_id, {});
    REQUIRE_FALSE(again.ok());
    CHECK(again.err().message == "run '" + out.run_id + "' ended (succeeded); only an interrupted run or one in needs_attention or awaiting_approval can be resumed");
    CHECK(read_resumable(h.journal_dir.path, "nope", {}).err().code == errc::not_found);

    auto w = journal::writer::create(h.journal_dir.path, "held-run");
    REQUIRE(w.ok());
    REQUIRE(w->run_start({"held-run", "a", "a.json", "m", {}, "task", "2026-11-30T01:22:33.123Z", {}}).ok());
    auto log = journal::read_journal(w->path());
    REQUIRE(log.ok());
    auto second = journal::writer::open_existing(*log);
    REQUIRE_FALSE(second.ok());
    CHECK(second.err().message.find("in use by another writer") != std::string::npos);
}

TEST_CASE("approval: a call of a tool that requires it parks the run, approved on resume it runs once and the run answers") {
    harness h;
    h.agent->tools.push_back({"deploy", {}, std::nullopt, {}, true});
    auto deploy = std::make_shared<effect_tool>();
    auto host = h.make_host({call("deploy", "{}"), k_answer_ok});
    auto parked = h.run({}, {}, {deploy}, nullptr, host);
    CHECK(parked.state == "awaiting_approval");
    CHECK(deploy->n_invoked == 0);
    REQUIRE(parked.pending.size() == 1);
    CHECK(parked.pending[0].call_id == "call_1_0");
    CHECK(parked.pending[0].reason == "approval");
    auto log = read_back(parked.journal_path);
    CHECK(log.state() == "awaiting_approval");
    CHECK(log.pending().size() == 1);
    CHECK(count_events<journal::final_event>(log) == 0);  // parked, not ended

    // A decision must name the call and fit it.
    auto wrong = read_resumable(h.journal_dir.path, parked.run_id, {{"call_9_9", "approve", ""}});
    REQUIRE_FALSE(wrong.ok());
    CHECK(wrong.err().message.find("call_id 'call_9_9': run '" + parked.run_id + "' is not waiting for a decision on it (waiting: call_1_0 (approval))") == 0);
    auto misfit = read_resumable(h.journal_dir.path, parked.run_id, {{"call_1_0", "retry", ""}});
    REQUIRE_FALSE(misfit.ok());
    CHECK(misfit.err().message == "action 'retry' for call call_1_0: expected approve or reject (it awaits approval)");

    auto done = h.resume(parked.run_id, host, {{"call_1_0", "approve", "looks fine"}}, {deploy});
    CHECK(done.state == "succeeded");
    CHECK(done.verified);
    CHECK(deploy->n_invoked == 1);
    REQUIRE(deploy->keys.size() == 1);
    CHECK(deploy->keys[0] == parked.run_id + ":1:0");
    auto after = read_back(parked.journal_path);
    CHECK(after.state() == "succeeded");
    CHECK(count_events<journal::model_turn_event>(after) == 2);
    CHECK(count_events<journal::decision_event>(after) == 1);
}

TEST_CASE("approval: a rejection is the error the model reads, the approval hook decides without parking") {
    harness h;
    h.agent->tools.push_back({"deploy", {}, std::nullopt, {}, true});
    auto deploy = std::make_shared<effect_tool>();
    std::vector<std::string> asked;
    h.approve = [&](const run_tool_call& c) {
        asked.push_back(c.call_id + " " + c.name);
        return std::optional<call_decision>(call_decision{{}, "reject", "not on a Friday"});
    };
    auto out = h.run({call("deploy", "{}"), k_answer_ok}, {}, {deploy});
    CHECK(out.state == "succeeded");
    CHECK(deploy->n_invoked == 0);
    CHECK(asked == std::vector<std::string>{"call_1_0 deploy"});
    REQUIRE(out.calls.size() >= 1);
    CHECK_FALSE(out.calls[0].ok);
    CHECK(out.calls[0].result == "deploy: rejected by a person: not on a Friday");
    auto log = read_back(out.journal_path);
    bool fed_back = false;
    for (const auto& e : log.events)
        if (const auto* f = std::get_if<journal::feedback_event>(&e.body)) fed_back = fed_back || f->text == "deploy: rejected by a person: not on a Friday";
    CHECK(fed_back);
    CHECK(count_events<journal::decision_event>(log) == 1);
}

TEST_CASE("attention: a call with side effects started before a crash parks the run, retry runs it again with the same key, skip tells the model") {
    for (const std::string action : {"retry", "skip"}) {
        CAPTURE(action);
        harness h;
        h.agent->tools.push_back({"deploy", {}, std::nullopt, {}});
        auto deploy = std::make_shared<effect_tool>();
        run_switches sw;
        sw.early_dispatch = false;  // the turn is journaled before its call starts
        auto twin = h.run({call("deploy", "{}"), k_answer_ok}, sw, {deploy});
        REQUIRE(twin.state == "succeeded");
        REQUIRE(deploy->n_invoked == 1);
        // Killed right after the call's intent reached the journal.
        const auto lines = journal_lines(twin.journal_path);
        size_t intent = 0;
        while (intent < lines.size() && lines[intent].find("\"type\":\"tool_start\"") == std::string::npos) ++intent;
        REQUIRE(intent < lines.size());
        CHECK(lines[intent].find("\"read_only\":false") != std::string::npos);
        CHECK(lines[intent].find("\"idempotency_key\":\"" + twin.run_id + ":1:0\"") != std::string::npos);
        cut_journal(twin.journal_path, lines, intent + 1);

        auto host = h.make_host({k_answer_ok});
        auto parked = h.resume(twin.run_id, host, {}, {deploy});
        CHECK(parked.state == "needs_attention");
        CHECK(deploy->n_invoked == 1);  // not run again on its own
        REQUIRE(parked.pending.size() == 1);
        CHECK(parked.pending[0].reason == "attention");
        CHECK(parked.error.find("call call_1_0 of deploy {} was started before the run's process stopped and may have run") == 0);

        auto done = h.resume(twin.run_id, host, {{"call_1_0", action, ""}}, {deploy});
        CHECK(done.state == "succeeded");
        REQUIRE(done.calls.size() >= 1);
        if (action == "retry") {
            CHECK(deploy->n_invoked == 2);
            REQUIRE(deploy->keys.size() == 2);
            CHECK(deploy->keys[0] == deploy->keys[1]);
            CHECK(done.calls[0].result == "deployed");
        } else {
            CHECK(deploy->n_invoked == 1);
            CHECK(done.calls[0].result == "deploy: not run: skipped by a person after an interruption");
        }
    }
}

TEST_CASE("attention: a read-only call started before a crash is run again without asking") {
    harness h;
    run_switches sw;
    sw.early_dispatch = false;
    auto twin = h.run({call("error_summary", "{}"), k_answer_ok}, sw);
    REQUIRE(twin.state == "succeeded");
    const auto lines = journal_lines(twin.journal_path);
    size_t intent = 0;
    while (intent < lines.size() && lines[intent].find("\"type\":\"tool_start\"") == std::string::npos) ++intent;
    REQUIRE(intent < lines.size());
    CHECK(lines[intent].find("\"read_only\":true") != std::string::npos);
    cut_journal(twin.journal_path, lines, intent + 1);
    auto done = h.resume(twin.run_id, h.make_host({k_answer_ok}));
    CHECK(done.state == "succeeded");
    CHECK(done.answer == twin.answer);
    CHECK(count_events<journal::tool_start_event>(read_back(twin.journal_path)) == 3);  // the call twice, the check once
}

namespace {

// A journal that holds its events in memory and, from event `refuse_from`
// on, refuses them as a database does once another process holds the run.
class fenced_sink : public journal::event_sink {
public:
    explicit fenced_sink(int64_t refuse_from, std::shared_ptr<std::vector<journal::event>> kept)
        : refuse_from_(refuse_from), kept_(std::move(kept)) {}
    result<journal::event> append(const journal::event_body& body) override {
        if (next_ >= refuse_from_) return make_error(errc::cancelled, "lease epoch 1 is stale");
        journal::event e{next_++, 0, body};
        kept_->push_back(e);
        return e;
    }
    int64_t n_events() const override { return next_; }
    std::chrono::steady_clock::time_point start() const override { return start_; }
    std::string location() const override { return "memory"; }

private:
    int64_t refuse_from_;
    int64_t next_ = 0;
    std::shared_ptr<std::vector<journal::event>> kept_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace

TEST_CASE("journal sink: a write refused by fencing stops the run before the tool whose intent it was and nothing after it is recorded") {
    harness h;
    h.agent->tools.push_back({"deploy", {}, std::nullopt, {}});
    auto deploy = std::make_shared<effect_tool>();
    // The twin, on a journal that takes everything: where deploy's intent goes.
    auto all = std::make_shared<std::vector<journal::event>>();
    auto run_on = [&](int64_t refuse_from, std::shared_ptr<std::vector<journal::event>> kept) {
        run_request req;
        req.agent = h.agent;
        req.task = "deploy it";
        req.inputs = {{"incident_dir", h.root.path.string()}};
        req.run_id = "run-fenced";
        req.custom_tools = {deploy};
        req.open_journal = [=](const std::string& id, const journal::run_log* resumed) -> result<std::unique_ptr<journal::event_sink>> {
            CHECK(id == "run-fenced");
            CHECK(resumed == nullptr);
            return std::unique_ptr<journal::event_sink>(std::make_unique<fenced_sink>(refuse_from, kept));
        };
        return h.drive(std::move(req), h.make_host({call("deploy", "{}"), k_answer_ok}));
    };
    auto twin = run_on(1000, all);
    REQUIRE(twin.state == "succeeded");
    CHECK(twin.journal_path == "memory");
    CHECK(deploy->n_invoked == 1);
    int64_t intent = -1;
    for (const auto& e : *all)
        if (const auto* s = std::get_if<journal::tool_start_event>(&e.body); s && s->name == "deploy") intent = e.seq;
    REQUIRE(intent > 0);

    // The same run, its journal refusing from deploy's intent on.
    auto kept = std::make_shared<std::vector<journal::event>>();
    auto fenced = run_on(intent, kept);
    CHECK(fenced.state == "cancelled");
    CHECK(deploy->n_invoked == 1);  // not again: its intent was refused
    CHECK(static_cast<int64_t>(kept->size()) == intent);
    for (const auto& e : *kept) CHECK_FALSE(std::holds_alternative<journal::run_end_event>(e.body));
}
