#include "runtime/journal/journal.h"

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/common/json_util.h"

using namespace tachyon;
using namespace tachyon::journal;
namespace fs = std::filesystem;

namespace {

// The error message of a failed result, for a check's message (evaluated
// even when the check passes, so it must not touch err() on a value).
template <class T>
std::string why(const tachyon::result<T>& r) {
    return r.ok() ? std::string() : r.err().message;
}

// A fresh empty directory under the build tree, removed at the end of the test.
struct temp_dir {
    fs::path path;
    explicit temp_dir(const std::string& name) {
        path = fs::path(TACHYON_BINARY_DIR) / "test_tmp" / (name + "-" + std::to_string(::getpid()));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void spit(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
}

run_start_event sample_start(const std::string& id) {
    run_start_event s;
    s.run_id = id;
    s.agent = "triage";
    s.agent_file = "agents/triage.json";
    s.model = "models/tiny.gguf";
    s.inputs = {{"incident", "checkout 500s"}, {"tricky", "a \"quoted\"\nline\twith\x01control"}};
    s.task = "Find the root cause.";
    s.started_at = "2026-11-30T01:22:33.123Z";
    return s;
}

}  // namespace

TEST_CASE("json strings: control characters escaped and invalid UTF-8 replaced") {
    std::string out;
    json::append_quoted(out, std::string("a\"b\\c\n\t\x01\x7f", 9));
    CHECK(out == "\"a\\\"b\\\\c\\n\\t\\u0001\\u007f\"");
    out.clear();
    // valid 2/3/4-byte sequences kept; a stray continuation byte, an overlong
    // '/', a surrogate and a truncated sequence each become U+FFFD
    json::append_quoted(out, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80|\x80|\xC0\xAF|\xED\xA0\x80|\xE2\x82");
    CHECK(out == "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80|\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD|"
                 "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD\"");
}

TEST_CASE("journal: every event type survives a write/read round trip") {
    temp_dir dir("journal_round_trip");
    auto w = writer::create(dir.path / "runs", "run-a");
    REQUIRE(w.ok());
    CHECK(w->path() == dir.path / "runs" / "run-a.jsonl");

    const auto start = sample_start("run-a");
    model_turn_event turn;
    turn.step = 1;
    turn.prefill_tokens = 532;
    turn.reused_tokens = 400;
    turn.generated_tokens = 64;
    turn.prefill_start_ms = 0.5;
    turn.prefill_end_ms = 12.25;
    turn.decode_end_ms = 80.125;
    turn.text = "<tool_call>\n{\"name\": \"search_logs\"}\n</tool_call>";
    tool_call_event call;
    call.step = 1;
    call.call_id = "c1";
    call.name = "search_logs";
    call.arguments_json = R"({"service": "checkout", "level": "ERROR", "n": [1, 2.5, null]})";
    call.start_ms = 40;
    call.end_ms = 95.5;
    call.ok = true;
    call.result = "line 1\nline 2 \xff bad byte";
    call.early = true;
    call.speculative = false;
    tool_call_event failed = call;
    failed.call_id = "c2";
    failed.ok = false;
    failed.result = "";
    failed.error = "no such trace id 'x'";
    failed.arguments_json = "not json {";  // kept as a string, the line still parses
    failed.early = false;
    failed.speculative = true;
    verify_event v{2, "answer_schema", false, "missing key \"service\""};
    final_event fin;
    fin.answer_json = R"({"service":"payments","cause":"pool exhausted"})";
    fin.verified = true;
    fin.steps = 3;
    fin.time_to_answer_ms = 123.5;
    fin.model_ms = 90;
    fin.tool_ms = 60.25;
    fin.overlap_saved_ms = 30.75;
    run_end_event end{run_state::budget_exhausted, "max_steps 3 reached"};

    REQUIRE(w->run_start(start).ok());
    REQUIRE(w->model_turn(turn).ok());
    REQUIRE(w->tool_call(call).ok());
    REQUIRE(w->tool_call(failed).ok());
    REQUIRE(w->verify(v).ok());
    REQUIRE(w->final_answer(fin).ok());
    REQUIRE(w->run_end(end).ok());
    CHECK(w->n_events() == 7);

    auto log = read_journal(w->path());
    REQUIRE_MESSAGE(log.ok(), why(log));
    CHECK(log->warnings.empty());
    REQUIRE(log->events.size() == 7);
    for (size_t i = 0; i < 7; ++i) CHECK(log->events[i].seq == static_cast<int64_t>(i));
    for (size_t i = 1; i < 7; ++i) CHECK(log->events[i].t_ms >= log->events[i - 1].t_ms);

    const auto& s = std::get<run_start_event>(log->events[0].body);
    CHECK(s.run_id == "run-a");
    CHECK(s.agent == "triage");
    CHECK(s.agent_file == "agents/triage.json");
    CHECK(s.model == "models/tiny.gguf");
    CHECK(s.inputs == start.inputs);
    CHECK(s.task == start.task);
    CHECK(s.started_at == start.started_at);

    const auto& t = std::get<model_turn_event>(log->events[1].body);
    CHECK(t.step == 1);
    CHECK(t.prefill_tokens == 532);
    CHECK(t.reused_tokens == 400);
    CHECK(t.generated_tokens == 64);
    CHECK(t.prefill_start_ms == 0.5);
    CHECK(t.prefill_end_ms == 12.25);
    CHECK(t.decode_end_ms == 80.125);
    CHECK(t.text == turn.text);

    const auto& c = std::get<tool_call_event>(log->events[2].body);
    CHECK(c.call_id == "c1");
    CHECK(c.name == "search_logs");
    CHECK(c.arguments_json == R"({"service":"checkout","level":"ERROR","n":[1,2.5,null]})");
    CHECK(c.start_ms == 40);
    CHECK(c.end_ms == 95.5);
    CHECK(c.ok);
    CHECK(c.result == "line 1\nline 2 \xEF\xBF\xBD bad byte");
    CHECK(c.error.empty());
    CHECK(c.early);
    CHECK_FALSE(c.speculative);

    const auto& f2 = std::get<tool_call_event>(log->events[3].body);
    CHECK_FALSE(f2.ok);
    CHECK(f2.error == failed.error);
    CHECK(f2.arguments_json == "\"not json {\"");
    CHECK(f2.speculative);

    const auto& v2 = std::get<verify_event>(log->events[4].body);
    CHECK(v2.attempt == 2);
    CHECK(v2.check == "answer_schema");
    CHECK_FALSE(v2.ok);
    CHECK(v2.message == v.message);

    const auto& f = std::get<final_event>(log->events[5].body);
    CHECK(f.answer_json == fin.answer_json);
    CHECK(f.verified);
    CHECK(f.steps == 3);
    CHECK(f.time_to_answer_ms == 123.5);
    CHECK(f.model_ms == 90);
    CHECK(f.tool_ms == 60.25);
    CHECK(f.overlap_saved_ms == 30.75);

    const auto& e = std::get<run_end_event>(log->events[6].body);
    CHECK(e.state == run_state::budget_exhausted);
    CHECK(e.error == end.error);

    CHECK(log->start() == &s);
    CHECK(log->final_answer() == &f);
    CHECK(log->end() == &e);
    CHECK(log->run_id() == "run-a");
}

TEST_CASE("journal: every line is one JSON object ending in a newline") {
    temp_dir dir("journal_lines");
    auto w = writer::create(dir.path, "x");
    REQUIRE(w.ok());
    REQUIRE(w->run_start(sample_start("x")).ok());
    REQUIRE(w->run_end({run_state::succeeded, ""}).ok());
    const std::string text = slurp(w->path());
    CHECK(std::count(text.begin(), text.end(), '\n') == 2);
    CHECK(text.back() == '\n');
    CHECK(text.rfind("{\"seq\":0,\"t_ms\":", 0) == 0);
    CHECK(text.find("\"type\":\"run_end\"") != std::string::npos);
}

TEST_CASE("journal: tool results are capped at the configured size") {
    temp_dir dir("journal_cap");
    writer_options options;
    options.max_result_bytes = 100;
    auto w = writer::create(dir.path, "cap", options);
    REQUIRE(w.ok());
    tool_call_event call;
    call.name = "read_file";
    call.ok = true;
    call.result = std::string(5000, 'x');
    REQUIRE(w->tool_call(call).ok());
    auto log = read_journal(w->path());
    REQUIRE(log.ok());
    const auto& c = std::get<tool_call_event>(log->events[0].body);
    CHECK(c.result.size() < 200);
    CHECK(c.result.rfind(std::string(100, 'x'), 0) == 0);
    CHECK(c.result.find("4900 more bytes") != std::string::npos);
}

TEST_CASE("journal: run ids are sortable and unique, an existing journal is not overwritten") {
    const std::string id = make_run_id();
    CHECK(id.size() == 23);  // 20261130T012233Z-7f3a2b
    CHECK(id[8] == 'T');
    CHECK(id[15] == 'Z');
    CHECK(id[16] == '-');
    temp_dir dir("journal_ids");
    std::vector<std::string> ids;
    for (int i = 0; i < 20; ++i) {
        auto w = writer::create(dir.path);
        REQUIRE(w.ok());
        ids.push_back(w->run_id());
    }
    std::sort(ids.begin(), ids.end());
    CHECK(std::unique(ids.begin(), ids.end()) == ids.end());
    auto again = writer::create(dir.path, ids[0]);
    REQUIRE_FALSE(again.ok());
    CHECK(again.err().message.find(ids[0] + ".jsonl") != std::string::npos);
    auto listed = list_journals(dir.path);
    REQUIRE(listed.ok());
    CHECK(listed->size() == 20);
}

TEST_CASE("journal: a cut-off last line is dropped with a warning, the rest kept") {
    temp_dir dir("journal_truncated");
    auto w = writer::create(dir.path, "t");
    REQUIRE(w.ok());
    REQUIRE(w->run_start(sample_start("t")).ok());
    REQUIRE(w->verify({1, "schema", true, ""}).ok());
    const fs::path p = w->path();
    std::string text = slurp(p);
    text += R"({"seq":2,"t_ms":5.0,"type":"tool_call","step":1,"call_id":"c)";  // a write cut by a crash
    spit(p, text);
    auto log = read_journal(p);
    REQUIRE_MESSAGE(log.ok(), why(log));
    CHECK(log->events.size() == 2);
    REQUIRE(log->warnings.size() == 1);
    CHECK(log->warnings[0].find(p.string() + ":3") != std::string::npos);
    CHECK(log->warnings[0].find("incomplete") != std::string::npos);
}

TEST_CASE("journal: a corrupt line in the middle is an error naming the file and line") {
    temp_dir dir("journal_corrupt");
    auto w = writer::create(dir.path, "c");
    REQUIRE(w.ok());
    REQUIRE(w->run_start(sample_start("c")).ok());
    REQUIRE(w->verify({1, "schema", true, ""}).ok());
    REQUIRE(w->run_end({run_state::succeeded, ""}).ok());
    const fs::path p = w->path();
    std::string text = slurp(p);
    const size_t second = text.find('\n') + 1;
    text.insert(second, "{\"seq\": 1, garbage}\n");
    spit(p, text);
    auto log = read_journal(p);
    REQUIRE_FALSE(log.ok());
    CHECK(log.err().message.find(p.string() + ":2") != std::string::npos);
    CHECK(log.err().message.find("corrupt") != std::string::npos);

    // a well-formed line with a field of the wrong type names the key
    spit(p, "{\"seq\":0,\"t_ms\":1,\"type\":\"verify\",\"attempt\":\"one\",\"check\":\"x\",\"ok\":true,\"message\":\"\"}\n"
            "{\"seq\":1,\"t_ms\":2,\"type\":\"run_end\",\"state\":\"succeeded\",\"error\":\"\"}\n");
    log = read_journal(p);
    REQUIRE_FALSE(log.ok());
    CHECK(log.err().message.find(p.string() + ":1") != std::string::npos);
    CHECK(log.err().message.find("\"attempt\"") != std::string::npos);

    auto missing = read_journal(dir.path / "nope.jsonl");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.err().message.find("nope.jsonl") != std::string::npos);
}

TEST_CASE("journal: a process killed with SIGKILL mid-run leaves every completed line readable") {
    temp_dir dir("journal_kill");
    const fs::path path = dir.path / "k.jsonl";
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // Child: write events forever; tell the parent after the first 50.
        ::close(ready[0]);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a failed test
        auto w = writer::create(dir.path, "k");
        if (!w.ok()) ::_exit(2);
        if (!w->run_start(sample_start("k")).ok()) ::_exit(3);
        tool_call_event call;
        call.name = "shell";
        call.result = std::string(3000, 'r');  // long lines: a kill is likelier to land mid-write
        for (int64_t i = 0; i < 20000; ++i) {
            call.step = i;
            if (!w->tool_call(call).ok()) ::_exit(4);
            if (i == 50) {
                const char c = 'r';
                if (::write(ready[1], &c, 1) != 1) ::_exit(5);
            }
        }
        for (;;) ::pause();  // bounded file; wait for the kill
    }
    ::close(ready[1]);
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    ::close(ready[0]);
    REQUIRE(::kill(child, SIGKILL) == 0);
    int st = 0;
    REQUIRE(::waitpid(child, &st, 0) == child);
    REQUIRE(WIFSIGNALED(st));

    auto log = read_journal(path);
    REQUIRE_MESSAGE(log.ok(), why(log));
    CHECK(log->warnings.size() <= 1);
    REQUIRE(log->events.size() >= 52);
    CHECK(std::holds_alternative<run_start_event>(log->events[0].body));
    for (size_t i = 1; i < log->events.size(); ++i) {
        const auto& call = std::get<tool_call_event>(log->events[i].body);
        CHECK(call.step == static_cast<int64_t>(i - 1));
        CHECK(call.result.size() == 3000);
    }
}

TEST_CASE("journal: unknown run states and event types") {
    CHECK(parse_run_state("cancelled").ok());
    auto bad = parse_run_state("exploded");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("exploded") != std::string::npos);

    temp_dir dir("journal_unknown");
    const fs::path p = dir.path / "u.jsonl";
    spit(p, "{\"seq\":0,\"t_ms\":1,\"type\":\"heartbeat\"}\n"
            "{\"seq\":1,\"t_ms\":2,\"type\":\"run_end\",\"state\":\"succeeded\",\"error\":\"\"}\n");
    auto log = read_journal(p);
    REQUIRE_MESSAGE(log.ok(), why(log));
    CHECK(log->events.size() == 1);
    REQUIRE(log->warnings.size() >= 1);
    CHECK(log->warnings[0].find("heartbeat") != std::string::npos);
}

TEST_CASE("journal: the events of what the model wrote and read survive a round trip and append returns the event written") {
    temp_dir dir("journal_model_io");
    auto w = writer::create(dir.path, "run-io");
    REQUIRE(w.ok());
    REQUIRE(w->run_start(sample_start("run-io")).ok());
    auto ts = w->append(turn_start_event{1});
    REQUIRE(ts.ok());
    CHECK(ts->seq == 1);
    CHECK(std::holds_alternative<turn_start_event>(ts->body));
    tool_start_event start;
    start.step = 1;
    start.call_id = "call_1_0";
    start.name = "search_logs";
    start.arguments_json = R"({"service": "checkout"})";
    start.start_ms = 12.5;
    start.early = true;
    start.speculative = true;
    REQUIRE(w->append(start).ok());
    call_rejected_event bad{1, "call_1_1", "search_logs", R"({"limit": 500})", "argument 'limit': 500 is above the maximum 50"};
    call_rejected_event unreadable{1, "call_1_2", "", "", "malformed JSON at offset 3"};
    REQUIRE(w->append(bad).ok());
    REQUIRE(w->append(unreadable).ok());
    answer_rejected_event answer{2, 0, "{\"service\": \"payments\"}\n", "verify_root_cause: payments is healthy"};
    REQUIRE(w->append(answer).ok());
    feedback_event fb{2, "", "answer", "verify_root_cause: payments is healthy"};
    auto written = w->append(fb);
    REQUIRE(written.ok());
    CHECK(written->seq == 6);
    // What append gave back is what the file holds.
    const std::string text = slurp(w->path());
    CHECK(text.find(to_json_line(*written, 16 * 1024)) != std::string::npos);

    auto log = read_journal(w->path());
    REQUIRE_MESSAGE(log.ok(), why(log));
    CHECK(log->warnings.empty());
    REQUIRE(log->events.size() == 7);
    CHECK(std::get<turn_start_event>(log->events[1].body).step == 1);
    const auto& s = std::get<tool_start_event>(log->events[2].body);
    CHECK(s.call_id == "call_1_0");
    CHECK(s.arguments_json == R"({"service":"checkout"})");
    CHECK(s.start_ms == 12.5);
    CHECK(s.early);
    CHECK(s.speculative);
    const auto& r = std::get<call_rejected_event>(log->events[3].body);
    CHECK(r.call_id == "call_1_1");
    CHECK(r.arguments_json == R"({"limit":500})");
    CHECK(r.error == bad.error);
    const auto& u = std::get<call_rejected_event>(log->events[4].body);
    CHECK(u.name.empty());
    CHECK(u.arguments_json.empty());
    const auto& a = std::get<answer_rejected_event>(log->events[5].body);
    CHECK(a.step == 2);
    CHECK(a.attempt == 0);
    CHECK(a.answer == answer.answer);
    CHECK(a.error == answer.error);
    const auto& f = std::get<feedback_event>(log->events[6].body);
    CHECK(f.source == "answer");
    CHECK(f.call_id.empty());
    CHECK(f.text == fb.text);
}

TEST_CASE("journal: a run without run_end reads as interrupted") {
    temp_dir dir("journal_interrupted");
    auto w = writer::create(dir.path, "run-cut");
    REQUIRE(w.ok());
    REQUIRE(w->run_start(sample_start("run-cut")).ok());
    REQUIRE(w->append(turn_start_event{1}).ok());
    auto log = read_journal(w->path());
    REQUIRE(log.ok());
    CHECK(log->end() == nullptr);
    CHECK(log->state() == "interrupted");
    REQUIRE(w->run_end(run_end_event{run_state::cancelled, "cancelled"}).ok());
    log = read_journal(w->path());
    REQUIRE(log.ok());
    CHECK(log->state() == "cancelled");
}

TEST_CASE("journal: the events of durable runs survive a round trip (tokens, intent, pending calls, decisions, resumes)") {
    temp_dir dir("journal_durable");
    auto w = writer::create(dir.path, "d");
    REQUIRE(w.ok());
    run_start_event s = sample_start("d");
    s.switches = {{"constrain", true}, {"early_dispatch", false}};
    REQUIRE(w->run_start(s).ok());
    model_turn_event t;
    t.step = 1;
    t.text = "<tool_call>...";
    t.tokens = {5, 2047, 0, 17};
    REQUIRE(w->model_turn(t).ok());
    tool_start_event ts;
    ts.step = 1;
    ts.call_id = "call_1_0";
    ts.name = "deploy";
    ts.read_only = false;
    ts.idempotency_key = "d:1:0";
    REQUIRE(w->append(ts).ok());
    REQUIRE(w->append(call_pending_event{1, "call_1_0", "deploy", R"({"service":"checkout"})", "attention", "may have run"}).ok());
    REQUIRE(w->run_end({run_state::needs_attention, "may have run"}).ok());
    REQUIRE(w->append(run_resume_event{"2026-11-30T01:30:00.000Z", 6, ""}).ok());
    REQUIRE(w->append(decision_event{"call_1_0", "retry", "checked: it did not run"}).ok());

    auto log = read_journal(w->path());
    REQUIRE_MESSAGE(log.ok(), why(log));
    REQUIRE(log->events.size() == 7);
    CHECK(log->start()->switches == s.switches);
    CHECK(std::get<model_turn_event>(log->events[1].body).tokens == t.tokens);
    const auto& start = std::get<tool_start_event>(log->events[2].body);
    CHECK_FALSE(start.read_only);
    CHECK(start.idempotency_key == "d:1:0");
    const auto& pending = std::get<call_pending_event>(log->events[3].body);
    CHECK(pending.arguments_json == R"({"service":"checkout"})");
    CHECK(pending.reason == "attention");
    CHECK(std::get<run_resume_event>(log->events[5].body).from_seq == 6);
    CHECK(std::get<decision_event>(log->events[6].body).reason == "checked: it did not run");
    // Resumed after its run_end: going again, and the decision answered the pending call.
    CHECK(log->state() == "interrupted");
    CHECK(log->pending().empty());
    CHECK(parse_run_state("awaiting_approval").ok());
    CHECK(is_parked(run_state::needs_attention));
    CHECK_FALSE(is_parked(run_state::failed));
}

TEST_CASE("journal: a parked run reads as parked with its pending calls") {
    temp_dir dir("journal_parked");
    auto w = writer::create(dir.path, "p");
    REQUIRE(w.ok());
    REQUIRE(w->run_start(sample_start("p")).ok());
    REQUIRE(w->append(call_pending_event{2, "call_2_0", "shell", "{}", "approval", "requires approval"}).ok());
    REQUIRE(w->run_end({run_state::awaiting_approval, "requires approval"}).ok());
    auto log = read_journal(w->path());
    REQUIRE_MESSAGE(log.ok(), why(log));
    CHECK(log->state() == "awaiting_approval");
    REQUIRE(log->pending().size() == 1);
    CHECK(log->pending()[0].call_id == "call_2_0");
}

TEST_CASE("journal: open_existing continues seq and clock after a cut-off line, which the reader then skips with a warning") {
    temp_dir dir("journal_reopen");
    fs::path p;
    {
        auto w = writer::create(dir.path, "r");
        REQUIRE(w.ok());
        REQUIRE(w->run_start(sample_start("r")).ok());
        REQUIRE(w->verify({0, "schema", true, ""}).ok());
        p = w->path();
    }
    spit(p, slurp(p) + R"({"seq":2,"t_ms":9.5,"type":"tool_call","step":1,"call_)");  // killed mid-write
    auto before = read_journal(p);
    REQUIRE_MESSAGE(before.ok(), why(before));
    REQUIRE(before->events.size() == 2);
    const double last_t = before->events.back().t_ms;
    {
        auto w = writer::open_existing(*before);
        REQUIRE_MESSAGE(w.ok(), why(w));
        CHECK(w->had_cut_off_line());
        CHECK(w->n_events() == 2);
        CHECK(w->elapsed_ms() >= last_t);  // the run's clock goes on
        auto e = w->append(run_resume_event{"2026-11-30T01:30:00.000Z", 2, "cut-off line"});
        REQUIRE(e.ok());
        CHECK(e->seq == 2);
        REQUIRE(w->run_end({run_state::succeeded, ""}).ok());
        // One writer per journal: a second is refused while this one lives.
        auto second = writer::open_existing(*before);
        REQUIRE_FALSE(second.ok());
        CHECK(second.err().message == "journal '" + p.string() + "': in use by another writer (the run is still going)");
    }
    const std::string text = slurp(p);
    CHECK(text.find(R"("call_)" "\n" R"({"seq":2)") != std::string::npos);  // the fragment ended by a newline
    auto after = read_journal(p);
    REQUIRE_MESSAGE(after.ok(), why(after));
    REQUIRE(after->events.size() == 4);
    CHECK(after->events[2].seq == 2);
    CHECK(after->state() == "succeeded");
    REQUIRE(after->warnings.size() == 1);
    CHECK(after->warnings[0].rfind(p.string() + ":3: line cut off by a crash before the run resumed (", 0) == 0);
    // Without the resume after it, a bad line in the middle stays an error.
    std::string broken = text;
    const size_t resume_line = broken.rfind('\n', broken.find("\"run_resume\"")) + 1;
    broken.erase(resume_line, broken.find('\n', resume_line) + 1 - resume_line);
    spit(p, broken);
    auto corrupt = read_journal(p);
    REQUIRE_FALSE(corrupt.ok());
    CHECK(corrupt.err().message.find(p.string() + ":3: corrupt journal line") == 0);
}

TEST_CASE("journal: a journal's text held elsewhere parses as its file does and is named by the path given") {
    temp_dir dir("journal_text");
    auto w = writer::create(dir.path, "t");
    REQUIRE(w.ok());
    // The file writer is one of the event sinks a run can write to.
    event_sink& sink = *w;
    REQUIRE(sink.append(sample_start("t")).ok());
    REQUIRE(sink.append(turn_start_event{1}).ok());
    CHECK(sink.n_events() == 2);
    CHECK(sink.location() == w->path().string());
    const std::string text = slurp(w->path());
    auto from_file = read_journal(w->path());
    auto from_text = parse_journal(text, "postgresql:t");
    REQUIRE_MESSAGE(from_text.ok(), why(from_text));
    REQUIRE(from_file.ok());
    CHECK(from_text->path == fs::path("postgresql:t"));
    REQUIRE(from_text->events.size() == from_file->events.size());
    for (size_t i = 0; i < from_text->events.size(); ++i)
        CHECK(to_json_line(from_text->events[i], 1 << 20) == to_json_line(from_file->events[i], 1 << 20));
    auto bad = parse_journal(text + "{not json\n" + text, "postgresql:t");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("postgresql:t:3: corrupt journal line") == 0);
}
