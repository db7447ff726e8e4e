#include "runtime/journal/timeline.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>
#include <variant>

namespace tachyon {

namespace {

using namespace journal;

std::vector<time_span> busy_spans(const run_log& log) {
    std::vector<time_span> spans;
    for (const auto& e : log.events) {
        if (const auto* t = std::get_if<model_turn_event>(&e.body)) {
            spans.push_back({t->prefill_start_ms, t->decode_end_ms});
        } else if (const auto* c = std::get_if<journal::tool_call_event>(&e.body)) {
            spans.push_back({c->start_ms, c->end_ms});
        }
    }
    return spans;
}

// One line of text: newlines and tabs shown as spaces, cut to `width` bytes
// (on a UTF-8 boundary) with "...".
std::string one_line(std::string_view text, size_t width) {
    std::string out;
    for (char c : text) out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
    if (out.size() > width) {
        size_t cut = width > 3 ? width - 3 : 0;
        while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
        out = out.substr(0, cut) + "...";
    }
    return out;
}

struct row {
    double time_ms = 0;
    int64_t seq = 0;
    std::string lane, what, duration, detail;
};

std::string fmt_ms(double ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", ms);
    return buf;
}

}  // namespace

double run_span_ms(const run_log& log) {
    double end = 0;
    for (const auto& e : log.events) end = std::max(end, e.t_ms);
    for (const auto& s : busy_spans(log)) end = std::max(end, s.end_ms);
    return end;
}

std::vector<time_span> idle_gaps(const run_log& log) {
    auto spans = busy_spans(log);
    std::sort(spans.begin(), spans.end(), [](const time_span& a, const time_span& b) { return a.begin_ms < b.begin_ms; });
    std::vector<time_span> gaps;
    double covered = 0;  // busy up to here
    for (const auto& s : spans) {
        if (s.begin_ms > covered) gaps.push_back({covered, s.begin_ms});
        covered = std::max(covered, s.end_ms);
    }
    const double end = run_span_ms(log);
    if (end > covered) gaps.push_back({covered, end});
    return gaps;
}

std::string render_timeline_text(const run_log& log, size_t width) {
    // A turn or call that started and has no end: the run was interrupted
    // there (the ended ones show as their model_turn / tool_call rows).
    std::set<int64_t> ended_turns;
    std::set<std::string> ended_calls;
    for (const auto& e : log.events) {
        if (const auto* t = std::get_if<model_turn_event>(&e.body)) ended_turns.insert(t->step);
        if (const auto* c = std::get_if<journal::tool_call_event>(&e.body)) ended_calls.insert(c->call_id);
    }
    std::vector<row> rows;
    for (const auto& e : log.events) {
        row r;
        r.time_ms = e.t_ms;
        r.seq = e.seq;
        if (const auto* s = std::get_if<run_start_event>(&e.body)) {
            r.lane = "run";
            r.what = "start";
            r.detail = "agent=" + s->agent + " model=" + s->model + " task=\"" + s->task + "\"";
        } else if (const auto* t = std::get_if<model_turn_event>(&e.body)) {
            r.time_ms = t->prefill_start_ms;
            r.lane = "model";
            r.what = "turn " + std::to_string(t->step);
            r.duration = fmt_ms(t->decode_end_ms - t->prefill_start_ms);
            r.detail = "prefill " + std::to_string(t->prefill_tokens) + " tok (reused " + std::to_string(t->reused_tokens) +
                       ") " + fmt_ms(t->prefill_end_ms - t->prefill_start_ms) + " ms, decode " +
                       std::to_string(t->generated_tokens) + " tok " + fmt_ms(t->decode_end_ms - t->prefill_end_ms) +
                       " ms: " + t->text;
        } else if (const auto* c = std::get_if<journal::tool_call_event>(&e.body)) {
            r.time_ms = c->start_ms;
            r.lane = "tool " + c->call_id;
            r.what = c->name;
            r.duration = fmt_ms(c->end_ms - c->start_ms);
            r.detail = std::string(c->ok ? "ok" : "FAILED") + (c->early ? " early" : "") +
                       (c->speculative ? " speculative" : "") + " " + c->arguments_json + " -> " +
                       (c->ok ? c->result : c->error);
        } else if (const auto* v = std::get_if<verify_event>(&e.body)) {
            r.lane = "verify";
            r.what = v->check;
            r.detail = std::string(v->ok ? "pass" : "FAIL") + " (attempt " + std::to_string(v->attempt) + ")" +
                       (v->message.empty() ? "" : ": " + v->message);
        } else if (const auto* f = std::get_if<final_event>(&e.body)) {
            r.lane = "run";
            r.what = "final";
            r.detail = std::string(f->verified ? "verified" : "unverified") + " after " + std::to_string(f->steps) +
                       " steps, answer in " + fmt_ms(f->time_to_answer_ms) + " ms (model " + fmt_ms(f->model_ms) +
                       ", tools " + fmt_ms(f->tool_ms) + ", overlap saved " + fmt_ms(f->overlap_saved_ms) +
                       "): " + f->answer_json;
        } else if (const auto* end = std::get_if<run_end_event>(&e.body)) {
            r.lane = "run";
            r.what = "end";
            r.detail = std::string(to_string(end->state)) + (end->error.empty() ? "" : ": " + end->error);
        } else if (const auto* ts = std::get_if<turn_start_event>(&e.body)) {
            if (ended_turns.count(ts->step)) continue;
            r.lane = "model";
            r.what = "turn " + std::to_string(ts->step);
            r.detail = "started; no end recorded";
        } else if (const auto* cs = std::get_if<tool_start_event>(&e.body)) {
            if (ended_calls.count(cs->call_id)) continue;
            r.time_ms = cs->start_ms;
            r.lane = "tool " + cs->call_id;
            r.what = cs->name;
            r.detail = "started, no result recorded: " + cs->arguments_json;
        } else if (const auto* rc = std::get_if<call_rejected_event>(&e.body)) {
            r.lane = "tool " + rc->call_id;
            r.what = rc->name.empty() ? "(unreadable)" : rc->name;
            r.detail = "REJECTED " + (rc->arguments_json.empty() ? std::string() : rc->arguments_json + " ") + "-> " + rc->error;
        } else if (const auto* ra = std::get_if<answer_rejected_event>(&e.body)) {
            r.lane = "verify";
            r.what = "answer rejected";
            r.detail = "(turn " + std::to_string(ra->step) + ") " + ra->error + " <- " + ra->answer;
        } else if (const auto* fb = std::get_if<feedback_event>(&e.body)) {
            r.lane = "feedback";
            r.what = fb->source + (fb->call_id.empty() ? "" : " " + fb->call_id);
            r.detail = "(to turn " + std::to_string(fb->step + 1) + ") " + fb->text;
        } else if (const auto* rs = std::get_if<run_resume_event>(&e.body)) {
            r.lane = "run";
            r.what = "resume";
            r.detail = "a new process continues the run (" + rs->resumed_at + ")" + (rs->note.empty() ? "" : ": " + rs->note);
        } else if (const auto* p = std::get_if<call_pending_event>(&e.body)) {
            r.lane = "tool " + p->call_id;
            r.what = p->name;
            r.detail = "WAITS for a person (" + p->reason + "): " + p->message;
        } else if (const auto* d = std::get_if<decision_event>(&e.body)) {
            r.lane = "tool " + d->call_id;
            r.what = "decision";
            r.detail = d->action + (d->reason.empty() ? "" : ": " + d->reason);
        } else {
            continue;  // nothing to draw
        }
        r.detail = one_line(r.detail, width);
        rows.push_back(std::move(r));
    }
    for (const auto& gap : idle_gaps(log)) {
        if (gap.length() <= 0.05) continue;  // below the printed resolution
        rows.push_back({gap.begin_ms, INT64_MAX, "idle", "-", fmt_ms(gap.length()), "neither model nor tool busy"});
    }
    std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) {
        return a.time_ms != b.time_ms ? a.time_ms < b.time_ms : a.seq < b.seq;
    });

    std::string out;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%10s  %-14s %-18s %9s  %s\n", "time_ms", "lane", "event", "dur_ms", "detail");
    out += buf;
    for (const auto& r : rows) {
        std::snprintf(buf, sizeof buf, "%10.1f  %-14s %-18s %9s  ", r.time_ms, one_line(r.lane, 14).c_str(),
                      one_line(r.what, 18).c_str(), r.duration.c_str());
        out += buf;
        out += r.detail;
        out += '\n';
    }
    return out;
}

}  // namespace tachyon
