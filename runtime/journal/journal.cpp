#include "runtime/journal/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>

#include <simdjson.h>

#include "runtime/common/json_util.h"

namespace tachyon::journal {

namespace fs = std::filesystem;

std::string_view to_string(run_state s) {
    switch (s) {
        case run_state::succeeded: return "succeeded";
        case run_state::failed: return "failed";
        case run_state::cancelled: return "cancelled";
        case run_state::budget_exhausted: return "budget_exhausted";
    }
    return "failed";
}

result<run_state> parse_run_state(std::string_view text) {
    for (run_state s : {run_state::succeeded, run_state::failed, run_state::cancelled, run_state::budget_exhausted})
        if (to_string(s) == text) return s;
    return make_error(errc::parse_error, "run state '" + std::string(text) +
                                             "': expected succeeded, failed, cancelled or budget_exhausted");
}

std::string_view type_name(const event_body& body) {
    struct namer {
        std::string_view operator()(const run_start_event&) const { return "run_start"; }
        std::string_view operator()(const model_turn_event&) const { return "model_turn"; }
        std::string_view operator()(const tool_call_event&) const { return "tool_call"; }
        std::string_view operator()(const verify_event&) const { return "verify"; }
        std::string_view operator()(const final_event&) const { return "final"; }
        std::string_view operator()(const run_end_event&) const { return "run_end"; }
        std::string_view operator()(const turn_start_event&) const { return "turn_start"; }
        std::string_view operator()(const tool_start_event&) const { return "tool_start"; }
        std::string_view operator()(const call_rejected_event&) const { return "call_rejected"; }
        std::string_view operator()(const answer_rejected_event&) const { return "answer_rejected"; }
        std::string_view operator()(const feedback_event&) const { return "feedback"; }
    };
    return std::visit(namer{}, body);
}

// --- writing -----------------------------------------------------------------

namespace {

// Builds one object's text field by field: `"key":value` pairs separated by commas.
class line_builder {
public:
    explicit line_builder(std::string& out) : out_(out) { out_.push_back('{'); }
    void key(std::string_view k) {
        if (!first_) out_.push_back(',');
        first_ = false;
        json::append_quoted(out_, k);
        out_.push_back(':');
    }
    void str(std::string_view k, std::string_view v) { key(k); json::append_quoted(out_, v); }
    void integer(std::string_view k, int64_t v) { key(k); out_.append(std::to_string(v)); }
    void ms(std::string_view k, double v) { key(k); json::append_ms(out_, v); }
    void boolean(std::string_view k, bool v) { key(k); out_.append(v ? "true" : "false"); }
    // Raw JSON when `json` is one valid JSON value, else the text as a string:
    // a malformed value never makes the line unreadable.
    void raw(std::string_view k, std::string_view json) {
        key(k);
        simdjson::dom::parser parser;
        simdjson::dom::element doc;
        if (!json.empty() && parser.parse(json.data(), json.size()).get(doc) == simdjson::SUCCESS) {
            out_.append(simdjson::minify(doc));
        } else {
            json::append_quoted(out_, json);
        }
    }
    void raw_text(std::string_view json) { out_.append(json); }  // after key(); `json` known valid
    void close() { out_.push_back('}'); }

private:
    std::string& out_;
    bool first_ = true;
};

std::string capped(std::string_view text, size_t max_bytes) {
    if (text.size() <= max_bytes) return std::string(text);
    // Cut on a UTF-8 boundary so the kept part stays readable.
    size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return std::string(text.substr(0, cut)) + "\n[... " + std::to_string(text.size() - cut) + " more bytes not journaled]";
}

struct body_writer {
    line_builder& b;
    size_t max_result_bytes;

    void operator()(const run_start_event& e) const {
        b.str("run_id", e.run_id);
        b.str("agent", e.agent);
        b.str("agent_file", e.agent_file);
        b.str("model", e.model);
        b.key("inputs");
        std::string inputs;
        line_builder ib(inputs);
        for (const auto& [k, v] : e.inputs) ib.str(k, v);
        ib.close();
        b.raw_text(inputs);
        b.str("task", e.task);
        b.str("started_at", e.started_at);
    }
    void operator()(const model_turn_event& e) const {
        b.integer("step", e.step);
        b.integer("prefill_tokens", e.prefill_tokens);
        b.integer("reused_tokens", e.reused_tokens);
        b.integer("generated_tokens", e.generated_tokens);
        b.ms("prefill_start_ms", e.prefill_start_ms);
        b.ms("prefill_end_ms", e.prefill_end_ms);
        b.ms("decode_end_ms", e.decode_end_ms);
        b.str("text", e.text);
    }
    void operator()(const tool_call_event& e) const {
        b.integer("step", e.step);
        b.str("call_id", e.call_id);
        b.str("name", e.name);
        b.raw("arguments", e.arguments_json);
        b.ms("start_ms", e.start_ms);
        b.ms("end_ms", e.end_ms);
        b.boolean("ok", e.ok);
        b.str("result", capped(e.result, max_result_bytes));
        b.str("error", capped(e.error, max_result_bytes));
        b.boolean("early", e.early);
        b.boolean("speculative", e.speculative);
    }
    void operator()(const verify_event& e) const {
        b.integer("attempt", e.attempt);
        b.str("check", e.check);
        b.boolean("ok", e.ok);
        b.str("message", e.message);
    }
    void operator()(const final_event& e) const {
        b.raw("answer", e.answer_json);
        b.boolean("verified", e.verified);
        b.integer("steps", e.steps);
        b.ms("time_to_answer_ms", e.time_to_answer_ms);
        b.ms("model_ms", e.model_ms);
        b.ms("tool_ms", e.tool_ms);
        b.ms("overlap_saved_ms", e.overlap_saved_ms);
    }
    void operator()(const run_end_event& e) const {
        b.str("state", to_string(e.state));
        b.str("error", e.error);
    }
    void operator()(const turn_start_event& e) const { b.integer("step", e.step); }
    void operator()(const tool_start_event& e) const {
        b.integer("step", e.step);
        b.str("call_id", e.call_id);
        b.str("name", e.name);
        b.raw("arguments", e.arguments_json);
        b.ms("start_ms", e.start_ms);
        b.boolean("early", e.early);
        b.boolean("speculative", e.speculative);
    }
    void operator()(const call_rejected_event& e) const {
        b.integer("step", e.step);
        b.str("call_id", e.call_id);
        b.str("name", e.name);
        if (e.arguments_json.empty()) {
            b.key("arguments");
            b.raw_text("null");
        } else {
            b.raw("arguments", capped(e.arguments_json, max_result_bytes));
        }
        b.str("error", capped(e.error, max_result_bytes));
    }
    void operator()(const answer_rejected_event& e) const {
        b.integer("step", e.step);
        b.integer("attempt", e.attempt);
        b.str("answer", capped(e.answer, max_result_bytes));
        b.str("error", capped(e.error, max_result_bytes));
    }
    void operator()(const feedback_event& e) const {
        b.integer("step", e.step);
        b.str("call_id", e.call_id);
        b.str("source", e.source);
        b.str("text", capped(e.text, max_result_bytes));
    }
};

}  // namespace

std::string to_json_line(const event& e, size_t max_result_bytes) {
    std::string out;
    line_builder b(out);
    b.integer("seq", e.seq);
    b.ms("t_ms", e.t_ms);
    b.str("type", type_name(e.body));
    std::visit(body_writer{b, max_result_bytes}, e.body);
    b.close();
    out.push_back('\n');
    return out;
}

std::string iso_utc(std::chrono::system_clock::time_point t) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
    return buf;
}

std::string make_run_id() {
    const std::time_t secs = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&secs, &tm);
    std::random_device rd;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d%02d%02dT%02d%02d%02dZ-%06x", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<unsigned>(rd() & 0xFFFFFF));
    return buf;
}

result<writer> writer::create(const fs::path& dir, std::string run_id, writer_options options) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error(errc::io_error, "journal directory '" + dir.string() + "': " + ec.message());
    const bool generated = run_id.empty();
    // A generated id that collides (two runs in one second drawing the same
    // 24 bits) is drawn again; O_EXCL makes the check and the creation one step.
    for (int attempt = 0; attempt < 16; ++attempt) {
        if (generated) run_id = make_run_id();
        if (run_id.find('/') != std::string::npos || run_id == "." || run_id == "..")
            return make_error(errc::invalid_argument, "run id '" + run_id + "': must be a plain file name");
        fs::path path = dir / (run_id + ".jsonl");
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            if (errno == EEXIST && generated) continue;
            return make_error(errno == EEXIST ? errc::invalid_argument : errc::io_error,
                              "journal '" + path.string() + "': " + std::strerror(errno));
        }
        writer w;
        w.fd_ = fd;
        w.run_id_ = std::move(run_id);
        w.path_ = std::move(path);
        w.start_ = std::chrono::steady_clock::now();
        w.options_ = options;
        return w;
    }
    return make_error(errc::io_error, "journal directory '" + dir.string() + "': no free run id after 16 tries");
}

writer::writer(writer&& other) noexcept { *this = std::move(other); }

writer& writer::operator=(writer&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
        run_id_ = std::move(other.run_id_);
        path_ = std::move(other.path_);
        start_ = other.start_;
        options_ = other.options_;
        next_seq_ = other.next_seq_;
        mutex_ = std::move(other.mutex_);
    }
    return *this;
}

writer::~writer() {
    if (fd_ >= 0) ::close(fd_);
}

double writer::elapsed_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
}

result<event> writer::append(const event_body& body) {
    TACHYON_ASSERT(fd_ >= 0, "journal writer used after a move");
    std::lock_guard lock(*mutex_);
    event e{next_seq_, elapsed_ms(), body};
    const std::string line = to_json_line(e, options_.max_result_bytes);
    // One write() per line: the kernel appends it whole at the end of the file
    // (O_APPEND), and it is in the page cache, safe from a crash of this
    // process, once write() returns. A short write (disk full) is retried for
    // the rest; the reader drops a line left incomplete.
    size_t done = 0;
    while (done < line.size()) {
        const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            return make_error(errc::io_error, "journal '" + path_.string() + "': write failed: " + std::strerror(errno));
        }
        done += static_cast<size_t>(n);
    }
    if (options_.fsync_each_event && ::fdatasync(fd_) != 0)
        return make_error(errc::io_error, "journal '" + path_.string() + "': fdatasync failed: " + std::strerror(errno));
    ++next_seq_;
    return e;
}

namespace {
status written(const result<event>& r) {
    if (!r.ok()) return r.err();
    return {};
}
}  // namespace

status writer::run_start(const run_start_event& e) { return written(append(e)); }
status writer::model_turn(const model_turn_event& e) { return written(append(e)); }
status writer::tool_call(const tool_call_event& e) { return written(append(e)); }
status writer::verify(const verify_event& e) { return written(append(e)); }
status writer::final_answer(const final_event& e) { return written(append(e)); }
status writer::run_end(const run_end_event& e) { return written(append(e)); }

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
    return make_error(errc::not_found, "unknown event type '" + std::string(type) + "'");
}

}  // namespace

result<run_log> read_journal(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(errc::not_found, "journal '" + path.string() + "': cannot open");
    std::ostringstream buf;
    buf << in.rdbuf();
    const std::string text = std::move(buf).str();

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
    if (const auto* e = end()) return std::string(to_string(e->state));
    return "interrupted";
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
