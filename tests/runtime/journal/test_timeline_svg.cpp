#include "runtime/journal/timeline_svg.h"

#include <doctest/doctest.h>

#include <vector>

#include "runtime/journal/timeline.h"

using namespace tachyon;
using namespace tachyon::journal;

namespace {

event ev(int64_t seq, double t_ms, event_body body) { return event{seq, t_ms, std::move(body)}; }

// A run: one turn that dispatches two calls early (one speculative), a second
// turn after an idle gap, a verify, the answer.
run_log sample_log() {
    run_log log;
    log.path = "runs/r1.jsonl";
    run_start_event s;
    s.run_id = "r1";
    s.agent = "tri<age>";
    s.model = "m & m";
    s.task = "find \"it\"";
    model_turn_event t1{1, 500, 0, 60, 0, 20, 100, "turn one"};
    tool_call_event c1;
    c1.step = 1;
    c1.call_id = "c1";
    c1.name = "search_logs";
    c1.start_ms = 50;
    c1.end_ms = 150;
    c1.ok = true;
    c1.early = true;
    tool_call_event c2 = c1;
    c2.call_id = "c2";
    c2.name = "get_trace<&>";
    c2.start_ms = 60;
    c2.end_ms = 120;
    c2.speculative = true;
    c2.ok = false;
    c2.error = "no such trace";
    model_turn_event t2{2, 40, 500, 30, 200, 210, 260, "final"};
    final_event f;
    f.time_to_answer_ms = 262;
    log.events = {ev(0, 0, s), ev(1, 100, t1), ev(2, 120, c2), ev(3, 150, c1), ev(4, 260, t2),
                  ev(5, 261, verify_event{1, "schema", true, ""}), ev(6, 262, f),
                  ev(7, 263, run_end_event{run_state::succeeded, ""})};
    return log;
}

// Minimal XML well-formedness: every tag closed in order, attributes quoted,
// no raw '&' or '<' in text. Returns the first problem, empty when none.
std::string check_xml(const std::string& doc, size_t* n_elements) {
    std::vector<std::string> open;
    size_t i = 0;
    *n_elements = 0;
    while (i < doc.size()) {
        if (doc[i] == '&') {
            const size_t semi = doc.find(';', i);
            if (semi == std::string::npos) return "unterminated entity";
            const std::string ent = doc.substr(i, semi - i + 1);
            if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;")
                return "bad entity " + ent;
            i = semi + 1;
            continue;
        }
        if (doc[i] == '>') return "stray '>' at " + std::to_string(i);
        if (doc[i] != '<') {
            ++i;
            continue;
        }
        const size_t close = doc.find('>', i);
        if (close == std::string::npos) return "unterminated tag";
        const std::string tag = doc.substr(i + 1, close - i - 1);
        if (tag.find('<') != std::string::npos) return "'<' inside a tag";
        size_t quotes = 0;
        for (char c : tag) quotes += c == '"';
        if (quotes % 2 != 0) return "unbalanced quotes in <" + tag + ">";
        if (tag.empty()) return "empty tag";
        if (tag[0] == '/') {
            const std::string name = tag.substr(1);
            if (open.empty() || open.back() != name) return "</" + name + "> closes nothing open";
            open.pop_back();
        } else if (tag.back() != '/') {
            open.push_back(tag.substr(0, tag.find_first_of(" \n")));
            ++*n_elements;
        } else {
            ++*n_elements;
        }
        i = close + 1;
    }
    if (!open.empty()) return "<" + open.back() + "> never closed";
    return {};
}

size_t count(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("timeline svg: well-formed XML with labels escaped") {
    const std::string svg = render_timeline_svg(sample_log());
    CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
    size_t n_elements = 0;
    CHECK(check_xml(svg, &n_elements) == "");
    CHECK(n_elements > 20);
    CHECK(svg.find("get_trace&lt;&amp;&gt;") != std::string::npos);
    CHECK(svg.find("tri&lt;age&gt;") != std::string::npos);
    CHECK(svg.find("get_trace<&>") == std::string::npos);
}

TEST_CASE("timeline svg: one lane per tool call, model segments, marks, axis and legend") {
    const std::string svg = render_timeline_svg(sample_log());
    CHECK(count(svg, "class=\"lane tool-lane\"") == 2);
    CHECK(count(svg, "data-call-id=\"c1\"") == 1);
    CHECK(count(svg, "data-call-id=\"c2\"") == 1);
    CHECK(count(svg, "class=\"prefill\"") == 2);
    CHECK(count(svg, "class=\"decode\"") == 2);
    CHECK(count(svg, "class=\"lane verify-lane\"") == 1);
    CHECK(svg.find("[early]") != std::string::npos);
    CHECK(svg.find("[spec]") != std::string::npos);
    CHECK(svg.find("class=\"legend\"") != std::string::npos);
    CHECK(svg.find("class=\"axis\"") != std::string::npos);
    CHECK(svg.find(">ms</text>") != std::string::npos);
    CHECK(count(svg, "class=\"idle\"") == 2);  // 150..200 and 260..263
}

TEST_CASE("timeline: idle gaps are where neither model nor tool is busy") {
    const auto gaps = idle_gaps(sample_log());
    REQUIRE(gaps.size() == 2);
    CHECK(gaps[0].begin_ms == 150);
    CHECK(gaps[0].end_ms == 200);
    CHECK(gaps[1].begin_ms == 260);
    CHECK(gaps[1].end_ms == 263);
    CHECK(run_span_ms(sample_log()) == 263);
}

TEST_CASE("timeline text: rows in time order with lanes and durations") {
    const std::string text = render_timeline_text(sample_log());
    const size_t turn1 = text.find("turn 1");
    const size_t call1 = text.find("search_logs");
    const size_t call2 = text.find("get_trace<&>");
    const size_t idle = text.find("idle");
    const size_t turn2 = text.find("turn 2");
    REQUIRE(turn1 != std::string::npos);
    REQUIRE(call1 != std::string::npos);
    REQUIRE(call2 != std::string::npos);
    REQUIRE(idle != std::string::npos);
    REQUIRE(turn2 != std::string::npos);
    CHECK(turn1 < call1);
    CHECK(call1 < call2);
    CHECK(call2 < idle);
    CHECK(idle < turn2);
    CHECK(text.find("early") != std::string::npos);
    CHECK(text.find("FAILED early speculative") != std::string::npos);
    CHECK(text.find("100.0") != std::string::npos);  // c1 lasted 100 ms
}

TEST_CASE("timeline svg: an empty journal still draws a valid picture") {
    run_log log;
    log.path = "runs/empty.jsonl";
    const std::string svg = render_timeline_svg(log);
    size_t n = 0;
    CHECK(check_xml(svg, &n) == "");
    CHECK(count(svg, "tool-lane") == 0);
}

namespace {

// A run cut off mid-call: a rejected call, a rejected answer and its
// feedback, then a call that started and has no result, and no run_end.
run_log interrupted_log() {
    run_log log;
    log.path = "runs/r2.jsonl";
    run_start_event s;
    s.run_id = "r2";
    s.agent = "triage";
    log.events.push_back(ev(0, 0, s));
    log.events.push_back(ev(1, 0.1, turn_start_event{1}));
    log.events.push_back(ev(2, 30, call_rejected_event{1, "call_1_0", "search_logs", R"({"limit":500})", "limit above 50"}));
    log.events.push_back(ev(3, 50, model_turn_event{1, 100, 0, 20, 0.1, 10, 50, "turn one"}));
    log.events.push_back(ev(4, 51, answer_rejected_event{1, 0, "{\"service\": \"x\"}", "verify_root_cause: x is healthy"}));
    log.events.push_back(ev(5, 51.5, feedback_event{1, "", "answer", "verify_root_cause: x is healthy"}));
    log.events.push_back(ev(6, 52, turn_start_event{2}));
    log.events.push_back(ev(7, 60, model_turn_event{2, 30, 100, 20, 52, 55, 60, "<tool_call>..."}));
    tool_start_event st;
    st.step = 2;
    st.call_id = "call_2_0";
    st.name = "get_trace";
    st.arguments_json = R"({"trace_id":"t1"})";
    st.start_ms = 58;
    st.early = true;
    log.events.push_back(ev(8, 58, st));
    return log;
}

}  // namespace

TEST_CASE("timeline text: rejected calls and answers, feedback, and where an interrupted run stopped") {
    const std::string text = render_timeline_text(interrupted_log(), 200);
    CHECK(text.find("REJECTED {\"limit\":500} -> limit above 50") != std::string::npos);
    CHECK(text.find("answer rejected") != std::string::npos);
    CHECK(text.find("verify_root_cause: x is healthy") != std::string::npos);
    CHECK(text.find("feedback") != std::string::npos);
    CHECK(text.find("started, no result recorded") != std::string::npos);
    // The turns that ended show once, as their model_turn rows.
    CHECK(text.find("started; no end recorded") == std::string::npos);
    CHECK(interrupted_log().state() == "interrupted");
}

TEST_CASE("timeline svg: rejected calls and answers are marked, an interrupted run says so") {
    const std::string svg = render_timeline_svg(interrupted_log());
    size_t n_marks = 0;
    for (size_t at = svg.find("class=\"rejected\""); at != std::string::npos; at = svg.find("class=\"rejected\"", at + 1)) ++n_marks;
    CHECK(n_marks == 2);
    CHECK(svg.find("rejected call call_1_0 search_logs: limit above 50") != std::string::npos);
    CHECK(svg.find("interrupted") != std::string::npos);
    // An older journal, without any of the new events, draws as before.
    const std::string old = render_timeline_svg(sample_log());
    CHECK(old.find("class=\"rejected\"") == std::string::npos);
}
