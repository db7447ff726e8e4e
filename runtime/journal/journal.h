// The run journal: every agent run appends one JSON object per event to
// <dir>/<run-id>.jsonl. Each line is written with a single write() on an
// O_APPEND descriptor, so a crash or `kill -9` loses at most the event being
// written; the reader keeps every complete line and reports a cut-off last
// line as a warning. The journal is the record of what the model saw and
// wrote: every turn, every call it wrote (run, rejected or cut off), every
// answer and every text the runtime gave it to read. An event is written
// before anything reports it (progress line, SSE event, SDK callback), so
// whatever a watcher saw is on disk.
//
// Every line holds "seq" (0, 1, ...), "t_ms" and "type", then the fields of
// its type:
//   run_start       run_id, agent, agent_file, model, inputs, task, started_at,
//                   switches (the run's speed and constraint switches; a resume
//                   runs with the same)
//   turn_start      step: a model turn begins
//   model_turn      step, token counts, prefill/decode times, text: the turn as
//                   generated, tokens: its token ids (what a resume prefills)
//   tool_start      step, call_id, name, arguments, start_ms, early, speculative,
//                   read_only, idempotency_key: a call that passed validation
//                   starts (a predicted call when the model's own call matches
//                   it; verify calls too). Written before the tool begins: the
//                   intent of a call that may have side effects, so that a
//                   resume tells "never started" (no tool_start) from "maybe
//                   ran" (tool_start without tool_call)
//   tool_call       ... ok, result, error: a call ended; the model read
//                   `result` (ok) or `error`
//   call_rejected   step, call_id, name, arguments, error: a call the model wrote
//                   that never reached its tool (malformed, unknown tool,
//                   arguments failing the schema or grounding, cut off by the
//                   end of the turn, or not started because the run stopped)
//   verify          attempt, check, ok, message: one verify check of an answer
//   answer_rejected step, attempt, answer, error: a final answer that was not
//                   accepted (not JSON, schema, a failed check)
//   feedback        step, call_id, source, text: a text the runtime gave the
//                   model to read in place of a tool's output: "call" (why a
//                   call was rejected), "tool" (a failed call's error),
//                   "answer" (why the answer was rejected)
//   final           answer, verified, steps, times: the run's last answer
//   run_end         state, error
//   call_pending    step, call_id, name, arguments, reason, message: the run
//                   stops on this call until a person decides: reason
//                   "approval" (a tool that requires approval) or "attention"
//                   (a call with side effects that may have run when the
//                   process died)
//   decision        call_id, action, reason: a person's decision on a pending
//                   call: approve or reject ("approval"), retry or skip
//                   ("attention")
//   run_resume      resumed_at, from_seq, note: a process continues the run
//                   from its journal; events before it are not done again
// Older journals lack turn_start, tool_start, call_rejected, answer_rejected,
// feedback, tokens and switches; readers take them as they are. A journal
// without run_end belongs to a run still going or one whose process died
// (run_log::state()). A resumed run writes run_end again when it ends: the
// last one is the run's state.
//
// Durability: every line is written whole with one write() on an O_APPEND
// descriptor and nothing is ever rewritten, so a process killed at any point
// leaves every complete line intact and at most one cut-off last line, which
// the reader drops with a warning (a resume appends a newline after it first:
// a cut-off line followed by run_resume is skipped the same way). A line in
// the page cache survives the death of the process, not a power loss; the
// intent of a call that is not read-only and a person's decision are
// fdatasync'ed before the writer returns (a power loss must not turn "maybe
// ran" into "never started"), every other line only with fsync_each_event.
//
// Times: "t_ms" of every event and the *_ms fields of turns and calls are
// milliseconds since the run started, on the writer's steady clock
// (writer::elapsed_ms()).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "base/result.h"

namespace tachyon::journal {

// needs_attention and awaiting_approval: the run is parked on a pending call
// (call_pending) and goes on when resumed with a decision.
enum class run_state { succeeded, failed, cancelled, budget_exhausted, needs_attention, awaiting_approval };
// A run in this state can be resumed (the others ended for good).
bool is_parked(run_state s);
std::string_view to_string(run_state s);
result<run_state> parse_run_state(std::string_view text);

struct run_start_event {
    std::string run_id;
    std::string agent;       // the agent's name
    std::string agent_file;  // path of its definition
    std::string model;
    std::map<std::string, std::string> inputs;  // the run's --input K=V
    std::string task;        // the rendered user task
    std::string started_at;  // ISO 8601 UTC, "2026-11-30T01:22:33.123Z"
    std::map<std::string, bool> switches;  // run_switches by name; empty in older journals
};

struct model_turn_event {
    int64_t step = 0;
    int64_t prefill_tokens = 0;    // tokens this turn had to prefill
    int64_t reused_tokens = 0;     // tokens whose KV was already resident
    int64_t generated_tokens = 0;
    double prefill_start_ms = 0;
    double prefill_end_ms = 0;     // = the first generated token
    double decode_end_ms = 0;
    std::string text;              // the turn's text as generated
    std::vector<int32_t> tokens;   // the generated token ids (end of turn included); empty in older journals
};

struct tool_call_event {
    int64_t step = 0;
    std::string call_id;
    std::string name;
    std::string arguments_json = "{}";  // a JSON object (written raw; a non-JSON text is written as a string)
    double start_ms = 0;
    double end_ms = 0;
    bool ok = false;
    std::string result;  // the text the model read, capped by the writer
    std::string error;   // empty when ok
    bool early = false;        // dispatched before its turn ended
    bool speculative = false;  // started ahead of the real call
};

struct turn_start_event {
    int64_t step = 0;
};

struct tool_start_event {
    int64_t step = 0;
    std::string call_id;
    std::string name;
    std::string arguments_json = "{}";
    double start_ms = 0;
    bool early = false;
    bool speculative = false;
    bool read_only = true;         // false: the tool may have side effects (older journals: true)
    std::string idempotency_key;   // what the tool received (tools::call_context)
};

struct call_rejected_event {
    int64_t step = 0;
    std::string call_id;
    std::string name;            // empty when it could not be read
    std::string arguments_json;  // as written (raw JSON when it parses, else a string); empty: none readable
    std::string error;           // why; the model reads "error: " + this
};

struct answer_rejected_event {
    int64_t step = 0;
    int64_t attempt = 0;  // answers rejected before this one
    std::string answer;   // the answer's text as the model wrote it
    std::string error;
};

struct feedback_event {
    int64_t step = 0;       // the turn the feedback answers
    std::string call_id;    // the call it stands for; empty for an answer
    std::string source;     // "call", "tool" or "answer"
    std::string text;       // exactly what the model read
};

struct verify_event {
    int64_t attempt = 0;
    std::string check;
    bool ok = false;
    std::string message;
};

struct final_event {
    std::string answer_json = "null";  // the answer (JSON value)
    bool verified = false;
    int64_t steps = 0;
    double time_to_answer_ms = 0;
    double model_ms = 0;
    double tool_ms = 0;
    double overlap_saved_ms = 0;  // tool time hidden under decoding
};

struct run_end_event {
    run_state state = run_state::failed;
    std::string error;
};

struct call_pending_event {
    int64_t step = 0;
    std::string call_id;
    std::string name;
    std::string arguments_json = "{}";
    std::string reason;   // "approval" or "attention"
    std::string message;  // what the person is asked
};

struct decision_event {
    std::string call_id;
    std::string action;  // "approve", "reject" (approval); "retry", "skip" (attention)
    std::string reason;  // optional words of the person; a rejection's reach the model
};

struct run_resume_event {
    std::string resumed_at;  // ISO 8601 UTC
    int64_t from_seq = 0;    // the first seq this process writes (this event's)
    std::string note;        // e.g. the cut-off line that was skipped
};

using event_body = std::variant<run_start_event, model_turn_event, tool_call_event, verify_event, final_event, run_end_event,
                                turn_start_event, tool_start_event, call_rejected_event, answer_rejected_event, feedback_event,
                                call_pending_event, decision_event, run_resume_event>;

struct event {
    int64_t seq = 0;
    double t_ms = 0;
    event_body body;
};

// Lines whose loss in a power cut would mislead a resume, flushed to disk
// before any sink returns: the intent of a call with side effects, and a
// person's decision.
bool must_reach_disk(const event_body& body);

// "run_start", "model_turn", ... (the "type" field).
std::string_view type_name(const event_body& body);

// One JSON line (with its '\n') for `e`. Exposed for tests and for streaming
// the same text over SSE.
std::string to_json_line(const event& e, size_t max_result_bytes);

// "20261130T012233Z-7f3a2b": UTC second, then 24 random bits. Ids sort by
// start time (to the second); the writer makes them unique on disk.
std::string make_run_id();
// "2026-11-30T01:22:33.123Z" for `t`.
std::string iso_utc(std::chrono::system_clock::time_point t);

struct writer_options {
    size_t max_result_bytes = 16 * 1024;  // tool results beyond this are cut (marked)
    bool fsync_each_event = false;  // survive power loss, not only a crash (costs a disk flush per event)
};

struct run_log;

// Where a run's events are written: the journal files (writer, the
// default) or a database (runtime/db/). Thread-safe like the writer. An
// append refused with errc::cancelled (fencing: the run's lease went to
// another process) means the run must stop here: nothing it writes from
// then on is kept, and its tools must not start.
class event_sink {
public:
    virtual ~event_sink() = default;
    // Writes the event stamped with the next seq and the run's clock, and
    // gives it back as written, before anything reports it.
    virtual result<event> append(const event_body& body) = 0;
    virtual int64_t n_events() const = 0;
    // When the run's clock started (t_ms 0).
    virtual std::chrono::steady_clock::time_point start() const = 0;
    // Where the journal is, for messages and reports: a file path, or
    // "postgresql:<run id>".
    virtual std::string location() const = 0;
};

// Appends the events of one run to <dir>/<run-id>.jsonl. Thread-safe: tool
// completions may be recorded from worker threads while the loop records
// turns. Move-only.
class writer final : public event_sink {
public:
    // Creates `dir` if needed and <dir>/<run_id>.jsonl (which must not exist).
    // An empty `run_id` makes one with make_run_id(). The run's clock starts now.
    // The file is locked (flock) while the writer lives: one writer per run.
    static result<writer> create(const std::filesystem::path& dir, std::string run_id = {},
                                 writer_options options = {});
    // Continues the journal `log` was read from: seq goes on after its last
    // event, and so does the clock (from its last t_ms; the time no process
    // ran the run is not counted). A cut-off last line gets its newline
    // first, so that the next line starts clean. Fails when another writer
    // holds the file.
    static result<writer> open_existing(const run_log& log, writer_options options = {});
    writer(writer&& other) noexcept;
    writer& operator=(writer&& other) noexcept;
    writer(const writer&) = delete;
    writer& operator=(const writer&) = delete;
    ~writer();

    const std::string& run_id() const { return run_id_; }
    const std::filesystem::path& path() const { return path_; }
    std::chrono::steady_clock::time_point start() const override { return start_; }
    double elapsed_ms() const;  // since start()
    int64_t n_events() const override { return next_seq_; }
    std::string location() const override { return path_.string(); }

    // Each appends one line stamped with the next seq and elapsed_ms().
    status run_start(const run_start_event& e);
    status model_turn(const model_turn_event& e);
    status tool_call(const tool_call_event& e);
    status verify(const verify_event& e);
    status final_answer(const final_event& e);
    status run_end(const run_end_event& e);
    // Writes the line (handed to the OS before it returns) and gives back
    // the event as written, with its seq and t_ms, for whoever reports it.
    result<event> append(const event_body& body) override;
    // True when the tail of the file was a cut-off line (open_existing).
    bool had_cut_off_line() const { return had_cut_off_line_; }

private:
    writer() = default;
    static result<writer> open_fd(int fd, std::filesystem::path path, std::string run_id, writer_options options);
    bool had_cut_off_line_ = false;
    int fd_ = -1;
    std::string run_id_;
    std::filesystem::path path_;
    std::chrono::steady_clock::time_point start_;
    writer_options options_;
    int64_t next_seq_ = 0;
    std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();  // boxed: the writer moves
};

// A journal read back.
struct run_log {
    std::filesystem::path path;
    std::vector<event> events;
    std::vector<std::string> warnings;  // "runs/x.jsonl:7: last line is cut off (...); ignored"

    const run_start_event* start() const;
    const final_event* final_answer() const;
    const run_end_event* end() const;
    std::string run_id() const;  // from run_start, else the file name
    // run_end's state, else "interrupted": the run was still going when its
    // journal was read, or its process died. A run_end followed by
    // run_resume (a parked run resumed) counts only once the run ends again.
    std::string state() const;
    // The calls the run is parked on (call_pending events after the last
    // run_resume, without a decision), when state() is a parked one.
    std::vector<call_pending_event> pending() const;
};

// Parses a journal. A last line that does not parse (a write cut off by a
// crash) is dropped with a warning, and so is one followed by run_resume
// (the crash before a resume); any other bad line is an error naming the
// file, the line number and what was wrong. Unknown event types are
// skipped with a warning (newer writers may add some).
result<run_log> read_journal(const std::filesystem::path& path);
// The same for a journal's text held elsewhere (a database's events, one
// line each); `path` names it in messages and becomes run_log::path.
result<run_log> parse_journal(const std::string& text, const std::filesystem::path& path);

// Journals in `dir` (*.jsonl), sorted by run id.
result<std::vector<std::filesystem::path>> list_journals(const std::filesystem::path& dir);

}  // namespace tachyon::journal
