// Reading a journal back: every complete line, a cut-off last one dropped
// with a warning, and what a run's events say about its state.
#include "runtime/journal/journal.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <simdjson.h>

namespace tachyon::journal {

namespace fs = std::filesystem;

// --- reading -----------------------------------------------------------------

namespace {

// Field access on one line's object; errors name the file, line and key.
class line_reader {
public:
    line_reader(simdjson::dom::object obj, std::string where) : obj_(obj), where_(std::move(where)) {}

    error fail(std::string_view key, std::string_view what) const {
        return make_error(errc::parse_error, where_ + ": \"" + std::string(key) + "\": " + std::string(what));
    }
    bool has(std::string_view key) const {
        simdjson::dom::element el;
        return obj_.at_key(key).get(el) == simdjson::SUCCESS && !el.is_null();
    }
    result<std::string> str(std::string_view key) const {
        simdjson::dom::element el;
        if (obj_.at_key(key).get(el) != simdjson::SUCCESS) return fail(key, "missing");
        std::string_view v;
        if (el.get_string().get(v) != simdjson::SUCCESS) return fail(key, "expected a string");
        return std::string(v);
    }
    result<int64_t> integer(std::string_view key) const {
        simdjson::dom::element el;
        if (obj_.at_key(key).get(el) != simdjson::SUCCESS) return fail(key, "missing");
        int64_t v = 0;
        if (el.get_int64().get(v) != simdjson::SUCCESS) return fail(key, "expected an integer");
        return v;
    }
    result<double> number(std::string_view key) const {
        simdjson::dom::element el;
        if (obj_.at_key(key).get(el) != simdjson::SUCCESS) return fail(key, "missing");
        double v = 0;
        if (el.is_int64()) return static_cast<double>(int64_t(el));
        if (el.get_double().get(v) != simdjson::SUCCESS) return fail(key, "expected a number");
        return v;
    }
    result<bool> boolean(std::string_view key) const {
        simdjson::dom::element el;
        if (obj_.at_key(key).get(el) != simdjson::SUCCESS) return fail(key, "missing");
        bool v = false;
        if (el.get_bool().get(v) != simdjson::SUCCESS) return fail(key, "expected true or false");
        return v;
    }
    result<std::string> raw(std::string_view key) const {
        simdjson::dom::element el;
        if (obj_.at_key(key).get(el) != simdjson::SUCCESS) return fail(key, "missing");
        return simdjson::minify(el);
    }
    result<std::map<std::string, std::string>> string_map(std::string_view key) const {
        simdjson::dom::element el;
        if (obj_.at_key(key).get(el) != simdjson::SUCCESS) return fail(key, "missing");
        simdjson::dom::object o;
        if (el.get_object().get(o) != simdjson::SUCCESS) return fail(key, "expected an object");
        std::map<std::string, std::string> out;
        for (auto field : o) {
            std::string_view v;
            if (field.value.get_string().get(v) == simdjson::SUCCESS) {
                out.emplace(std::string(field.key), std::string(v));
            } else {
                out.emplace(std::string(field.key), simdjson::minify(field.value));
            }
        }
        return out;
    }
    result<std::map<std::string, bool>> bool_map(std::string_view key) const {
        simdjson::dom::element el;
        if (obj_.at_key(key).get(el) != simdjson::SUCCESS) return fail(key, "missing");
        simdjson::dom::object o;
        if (el.get_object().get(o) != simdjson::SUCCESS) return fail(key, "expected an object of true/false");
        std::map<std::string, bool> out;
        for (auto field : o) {
            bool v = false;
            if (field.value.get_bool().get(v) != simdjson::SUCCESS) return fail(key, "expected an object of true/false");
            out.emplace(std::string(field.key), v);
        }
        return out;
    }
    result<std::vector<int32_t>> int_array(std::string_view key) const {
        simdjson::dom::element el;
        if (obj_.at_key(key).get(el) != simdjson::SUCCESS) return fail(key, "missing");
        simdjson::dom::array a;
        if (el.get_array().get(a) != simdjson::SUCCESS) return fail(key, "expected an array of token ids");
        std::vector<int32_t> out;
        for (auto v : a) {
            int64_t id = 0;
            if (v.get_int64().get(id) != simdjson::SUCCESS || id < 0 || id > INT32_MAX) return fail(key, "expected an array of token ids");
            out.push_back(static_cast<int32_t>(id));
        }
        return out;
    }

private:
    simdjson::dom::object obj_;
    std::string where_;
};

#define TACHYON_GET(dst, expr)          \
    do {                                \
        auto r_ = (expr);               \
        if (!r_.ok()) return r_.err();  \
        dst = std::move(*r_);           \
    } while (false)

// Parses the body of an event of type `type`; nullopt-like not_found error for an unknown type.
result<event_body> read_body(const line_reader& r, std::string_view type) {
    if (type == "run_start") {
        run_start_event e;
        TACHYON_GET(e.run_id, r.str("run_id"));
        TACHYON_GET(e.agent, r.str("agent"));
        TACHYON_GET(e.agent_file, r.str("agent_file"));
        TACHYON_GET(e.model, r.str("model"));
        TACHYON_GET(e.inputs, r.string_map("inputs"));
        TACHYON_GET(e.task, r.str("task"));
        TACHYON_GET(e.started_at, r.str("started_at"));
        if (r.has("switches")) TACHYON_GET(e.switches, r.bool_map("switches"));
        return event_body{std::move(e)};
    }
    if (type == "model_turn") {
        model_turn_event e;
        TACHYON_GET(e.step, r.integer("step"));
        TACHYON_GET(e.prefill_tokens, r.integer("prefill_tokens"));
        TACHYON_GET(e.reused_tokens, r.integer("reused_tokens"));
        TACHYON_GET(e.generated_tokens, r.integer("generated_tokens"));
        TACHYON_GET(e.prefill_start_ms, r.number("prefill_start_ms"));
        TACHYON_GET(e.prefill_end_ms, r.number("prefill_end_ms"));
        TACHYON_GET(e.decode_end_ms, r.number("decode_end_ms"));
        TACHYON_GET(e.text, r.str("text"));
        if (r.has("tokens")) TACHYON_GET(e.tokens, r.int_array("tokens"));
        return event_body{std::move(e)};
    }
    if (type == "tool_call") {
        tool_call_event e;
        TACHYON_GET(e.step, r.integer("step"));
        TACHYON_GET(e.call_id, r.str("call_id"));
        TACHYON_GET(e.name, r.str("name"));
        TACHYON_GET(e.arguments_json, r.raw("arguments"));
        TACHYON_GET(e.start_ms, r.number("start_ms"));
        TACHYON_GET(e.end_ms, r.number("end_ms"));
        TACHYON_GET(e.ok, r.boolean("ok"));
        TACHYON_GET(e.result, r.str("result"));
        TACHYON_GET(e.error, r.str("error"));
        TACHYON_GET(e.early, r.boolean("early"));
        TACHYON_GET(e.speculative, r.boolean("speculative"));
        return event_body{std::move(e)};
    }
    if (type == "verify") {
        verify_event e;
        TACHYON_GET(e.attempt, r.integer("attempt"));
        TACHYON_GET(e.check, r.str("check"));
        TACHYON_GET(e.ok, r.boolean("ok"));
        TACHYON_GET(e.message, r.str("message"));
        return event_body{std::move(e)};
    }
    if (type == "final") {
        final_event e;
        TACHYON_GET(e.answer_json, r.raw("answer"));
        TACHYON_GET(e.verified, r.boolean("verified"));
        TACHYON_GET(e.steps, r.integer("steps"));
        TACHYON_GET(e.time_to_answer_ms, r.number("time_to_answer_ms"));
        TACHYON_GET(e.model_ms, r.number("model_ms"));
        TACHYON_GET(e.tool_ms, r.number("tool_ms"));
        TACHYON_GET(e.overlap_saved_ms, r.number("overlap_saved_ms"));
        return event_body{std::move(e)};
    }
    if (type == "run_end") {
        run_end_event e;
        std::string state;
        TACHYON_GET(state, r.str("state"));
        auto s = parse_run_state(state);
        if (!s.ok()) return r.fail("state", s.err().message);
        e.state = *s;
        TACHYON_GET(e.error, r.str("error"));
        return event_body{std::move(e)};
    }
    if (type == "turn_start") {
        turn_start_event e;
        TACHYON_GET(e.step, r.integer("step"));
        return event_body{std::move(e)};
    }
    if (type == "tool_start") {
        tool_start_event e;
        TACHYON_GET(e.step, r.integer("step"));
        TACHYON_GET(e.call_id, r.str("call_id"));
        TACHYON_GET(e.name, r.str("name"));
        TACHYON_GET(e.arguments_json, r.raw("arguments"));
        TACHYON_GET(e.start_ms, r.number("start_ms"));
        TACHYON_GET(e.early, r.boolean("early"));
        TACHYON_GET(e.speculative, r.boolean("speculative"));
        if (r.has("read_only")) TACHYON_GET(e.read_only, r.boolean("read_only"));
        if (r.has("idempotency_key")) TACHYON_GET(e.idempotency_key, r.str("idempotency_key"));
        return event_body{std::move(e)};
    }
    if (type == "call_rejected") {
        call_rejected_event e;
        TACHYON_GET(e.step, r.integer("step"));
        TACHYON_GET(e.call_id, r.str("call_id"));
        TACHYON_GET(e.name, r.str("name"));
        if (r.has("arguments")) TACHYON_GET(e.arguments_json, r.raw("arguments"));
        TACHYON_GET(e.error, r.str("error"));
        return event_body{std::move(e)};
    }
    if (type == "answer_rejected") {
        answer_rejected_event e;
        TACHYON_GET(e.step, r.integer("step"));
        TACHYON_GET(e.attempt, r.integer("attempt"));
        TACHYON_GET(e.answer, r.str("answer"));
        TACHYON_GET(e.error, r.str("error"));
        return event_body{std::move(e)};
    }
    if (type == "feedback") {
        feedback_event e;
        TACHYON_GET(e.step, r.integer("step"));
        TACHYON_GET(e.call_id, r.str("call_id"));
        TACHYON_GET(e.source, r.str("source"));
        TACHYON_GET(e.text, r.str("text"));
        return event_body{std::move(e)};
    }
    if (type == "call_pending") {
        call_pending_event e;
        TACHYON_GET(e.step, r.integer("step"));
        TACHYON_GET(e.call_id, r.str("call_id"));
        TACHYON_GET(e.name, r.str("name"));
        TACHYON_GET(e.arguments_json, r.raw("arguments"));
        TACHYON_GET(e.reason, r.str("reason"));
        TACHYON_GET(e.message, r.str("message"));
        return event_body{std::move(e)};
    }
    if (type == "decision") {
        decision_event e;
        TACHYON_GET(e.call_id, r.str("call_id"));
        TACHYON_GET(e.action, r.str("action"));
        TACHYON_GET(e.reason, r.str("reason"));
        return event_body{std::move(e)};
    }
    if (type == "run_resume") {
        run_resume_event e;
        TACHYON_GET(e.resumed_at, r.str("resumed_at"));
        TACHYON_GET(e.from_seq, r.integer("from_seq"));
        TACHYON_GET(e.note, r.str("note"));
        return event_body{std::move(e)};
    }
    return make_error(errc::not_found, "unknown event type '" + std::string(type) + "'");
}

// Whether the first non-empty line from `pos` is a run_resume event.
bool next_is_resume(const std::string& text, size_t pos, simdjson::dom::parser& parser) {
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        const std::string_view line(text.data() + pos, eol - pos);
        pos = eol + 1;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        simdjson::dom::element doc;
        std::string_view type;
        if (parser.parse(line.data(), line.size()).get(doc) != simdjson::SUCCESS) return false;
        return doc["type"].get_string().get(type) == simdjson::SUCCESS && type == "run_resume";
    }
    return false;
}

}  // namespace

result<run_log> read_journal(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(errc::not_found, "journal '" + path.string() + "': cannot open");
    std::ostringstream buf;
    buf << in.rdbuf();
    return parse_journal(std::move(buf).str(), path);
}

result<run_log> parse_journal(const std::string& text, const fs::path& path) {
    run_log log;
    log.path = path;
    simdjson::dom::parser parser;
    size_t pos = 0;
    size_t line_no = 0;
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        const bool has_newline = eol != std::string::npos;
        if (!has_newline) eol = text.size();
        const std::string_view line(text.data() + pos, eol - pos);
        pos = has_newline ? eol + 1 : eol;
        ++line_no;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        const bool is_last = text.find_first_not_of(" \t\r\n", pos) == std::string::npos;
        const std::string where = path.string() + ":" + std::to_string(line_no);

        simdjson::dom::element doc;
        simdjson::dom::object obj;
        const auto err = parser.parse(line.data(), line.size()).get(doc);
        if (err != simdjson::SUCCESS || doc.get_object().get(obj) != simdjson::SUCCESS) {
            const std::string what = err != simdjson::SUCCESS ? simdjson::error_message(err) : "not a JSON object";
            if (is_last) {
                // A write cut off by a crash: keep everything before it.
                log.warnings.push_back(where + ": last line is incomplete (" + what + "); ignored");
                break;
            }
            if (next_is_resume(text, pos, parser)) {
                // Cut off by a crash, then the run was resumed: the resume starts after it.
                log.warnings.push_back(where + ": line cut off by a crash before the run resumed (" + what + "); ignored");
                continue;
            }
            return make_error(errc::parse_error, where + ": corrupt journal line (" + what + ")");
        }
        const line_reader r(obj, where);
        event e;
        TACHYON_GET(e.seq, r.integer("seq"));
        TACHYON_GET(e.t_ms, r.number("t_ms"));
        std::string type;
        TACHYON_GET(type, r.str("type"));
        auto body = read_body(r, type);
        if (!body.ok()) {
            if (body.err().code != errc::not_found) return body.err();
            log.warnings.push_back(where + ": unknown event type '" + type + "'; skipped");
            continue;
        }
        e.body = std::move(*body);
        const int64_t expected_seq = log.events.empty() ? 0 : log.events.back().seq + 1;
        if (e.seq != expected_seq)
            log.warnings.push_back(where + ": seq " + std::to_string(e.seq) + ", expected " + std::to_string(expected_seq));
        log.events.push_back(std::move(e));
    }
    return log;
}

#undef TACHYON_GET

const run_start_event* run_log::start() const {
    for (const auto& e : events)
        if (auto* p = std::get_if<run_start_event>(&e.body)) return p;
    return nullptr;
}

const final_event* run_log::final_answer() const {
    for (auto it = events.rbegin(); it != events.rend(); ++it)
        if (auto* p = std::get_if<final_event>(&it->body)) return p;
    return nullptr;
}

const run_end_event* run_log::end() const {
    for (auto it = events.rbegin(); it != events.rend(); ++it)
        if (auto* p = std::get_if<run_end_event>(&it->body)) return p;
    return nullptr;
}

std::string run_log::run_id() const {
    if (const auto* s = start(); s != nullptr && !s->run_id.empty()) return s->run_id;
    return path.stem().string();
}

std::string run_log::state() const {
    // The last run_end, unless a resume came after it.
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
        if (std::holds_alternative<run_resume_event>(it->body)) return "interrupted";
        if (const auto* e = std::get_if<run_end_event>(&it->body)) return std::string(to_string(e->state));
    }
    return "interrupted";
}

std::vector<call_pending_event> run_log::pending() const {
    std::vector<call_pending_event> out;
    for (const auto& e : events) {
        if (std::holds_alternative<run_resume_event>(e.body)) out.clear();
        if (const auto* p = std::get_if<call_pending_event>(&e.body)) {
            std::erase_if(out, [&](const call_pending_event& q) { return q.call_id == p->call_id; });
            out.push_back(*p);
        }
        if (const auto* d = std::get_if<decision_event>(&e.body))
            std::erase_if(out, [&](const call_pending_event& q) { return q.call_id == d->call_id; });
    }
    return out;
}

result<std::vector<fs::path>> list_journals(const fs::path& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return make_error(errc::not_found, "runs directory '" + dir.string() + "' does not exist");
    std::vector<fs::path> out;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.path().extension() == ".jsonl" && entry.is_regular_file(ec)) out.push_back(entry.path());
    }
    if (ec) return make_error(errc::io_error, "runs directory '" + dir.string() + "': " + ec.message());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace tachyon::journal
