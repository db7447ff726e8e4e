// Writing a run's journal: the event names, one JSON line per event, and
// the file writer (one write() per line on an O_APPEND descriptor).
#include "runtime/journal/journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <utility>

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
        case run_state::needs_attention: return "needs_attention";
        case run_state::awaiting_approval: return "awaiting_approval";
    }
    return "failed";
}

bool is_parked(run_state s) { return s == run_state::needs_attention || s == run_state::awaiting_approval; }

result<run_state> parse_run_state(std::string_view text) {
    for (run_state s : {run_state::succeeded, run_state::failed, run_state::cancelled, run_state::budget_exhausted,
                        run_state::needs_attention, run_state::awaiting_approval})
        if (to_string(s) == text) return s;
    return make_error(errc::parse_error, "run state '" + std::string(text) +
                                             "': expected succeeded, failed, cancelled, budget_exhausted, "
                                             "needs_attention or awaiting_approval");
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
        std::string_view operator()(const call_pending_event&) const { return "call_pending"; }
        std::string_view operator()(const decision_event&) const { return "decision"; }
        std::string_view operator()(const run_resume_event&) const { return "run_resume"; }
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
        if (!e.switches.empty()) {
            b.key("switches");
            std::string sw;
            line_builder sb(sw);
            for (const auto& [k, v] : e.switches) sb.boolean(k, v);
            sb.close();
            b.raw_text(sw);
        }
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
        b.key("tokens");
        std::string ids = "[";
        for (size_t i = 0; i < e.tokens.size(); ++i) ids += (i ? "," : "") + std::to_string(e.tokens[i]);
        b.raw_text(ids + "]");
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
        b.boolean("read_only", e.read_only);
        b.str("idempotency_key", e.idempotency_key);
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
    void operator()(const call_pending_event& e) const {
        b.integer("step", e.step);
        b.str("call_id", e.call_id);
        b.str("name", e.name);
        b.raw("arguments", e.arguments_json);
        b.str("reason", e.reason);
        b.str("message", e.message);
    }
    void operator()(const decision_event& e) const {
        b.str("call_id", e.call_id);
        b.str("action", e.action);
        b.str("reason", e.reason);
    }
    void operator()(const run_resume_event& e) const {
        b.str("resumed_at", e.resumed_at);
        b.integer("from_seq", e.from_seq);
        b.str("note", e.note);
    }
};

}  // namespace

bool must_reach_disk(const event_body& body) {
    if (const auto* s = std::get_if<tool_start_event>(&body)) return !s->read_only;
    return std::holds_alternative<decision_event>(body);
}

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
        return open_fd(fd, std::move(path), std::move(run_id), options);
    }
    return make_error(errc::io_error, "journal directory '" + dir.string() + "': no free run id after 16 tries");
}

result<writer> writer::open_fd(int fd, fs::path path, std::string run_id, writer_options options) {
    // One writer per journal, across processes: a second resume of a run
    // still going fails here instead of interleaving two runs' lines. The
    // lock goes with the descriptor, so a killed writer leaves none behind.
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int e = errno;
        ::close(fd);
        return make_error(e == EWOULDBLOCK ? errc::resource_exhausted : errc::io_error,
                          "journal '" + path.string() + "': " +
                              (e == EWOULDBLOCK ? std::string("in use by another writer (the run is still going)") : std::strerror(e)));
    }
    writer w;
    w.fd_ = fd;
    w.run_id_ = std::move(run_id);
    w.path_ = std::move(path);
    w.start_ = std::chrono::steady_clock::now();
    w.options_ = options;
    return w;
}

result<writer> writer::open_existing(const run_log& log, writer_options options) {
    const int fd = ::open(log.path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd < 0) return make_error(errc::io_error, "journal '" + log.path.string() + "': " + std::strerror(errno));
    auto opened = open_fd(fd, log.path, log.run_id(), options);
    if (!opened) return opened.err();
    writer w = std::move(opened).value();
    // The last byte: anything but a newline is a line cut off by a crash
    // (or a complete one whose newline was). A newline ends it, so the next
    // line is whole; the reader skips the fragment before run_resume.
    struct stat st {};
    if (::fstat(w.fd_, &st) != 0) return make_error(errc::io_error, "journal '" + log.path.string() + "': " + std::strerror(errno));
    if (st.st_size > 0) {
        char last = '\n';
        if (::pread(w.fd_, &last, 1, st.st_size - 1) != 1)
            return make_error(errc::io_error, "journal '" + log.path.string() + "': " + std::strerror(errno));
        if (last != '\n') {
            w.had_cut_off_line_ = true;
            if (::write(w.fd_, "\n", 1) != 1)
                return make_error(errc::io_error, "journal '" + log.path.string() + "': write failed: " + std::strerror(errno));
        }
    }
    if (!log.events.empty()) {
        w.next_seq_ = log.events.back().seq + 1;
        // The run's clock goes on from its last event.
        w.start_ -= std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double, std::milli>(log.events.back().t_ms));
    }
    return w;
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
        had_cut_off_line_ = other.had_cut_off_line_;
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
    if ((options_.fsync_each_event || must_reach_disk(body)) && ::fdatasync(fd_) != 0)
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

}  // namespace tachyon::journal
