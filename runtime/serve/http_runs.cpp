#include "runtime/serve/http_runs.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <thread>
#include <variant>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "base/log.h"
#include "runtime/common/async_flag.h"
#include "runtime/common/json_util.h"
#include "runtime/agent/run_report.h"
#include "runtime/agent/tool_catalog.h"
#include "runtime/db/db_journal.h"

namespace tachyon::http {
namespace asio = boost::asio;
namespace {

bool valid_agent_name(std::string_view name) {
    if (name.empty() || name.size() > 128) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.')) return false;
    return name.front() != '.';
}

// A run id as the server makes them (journal::make_run_id) or a client
// chose: it names one file in the journal directory and nothing else.
bool valid_run_id(std::string_view id) {
    if (id.empty() || id.size() > 128) return false;
    for (char c : id)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
    return true;
}

std::string result_json(std::string_view answer_json, bool verified, int64_t steps, std::string_view error, std::string_view journal) {
    return "{\"answer\":" + (answer_json.empty() ? std::string("null") : std::string(answer_json)) +
           ",\"verified\":" + (verified ? "true" : "false") + ",\"steps\":" + std::to_string(steps) +
           ",\"error\":" + (error.empty() ? std::string("null") : json::quote(error)) +
           ",\"journal\":" + (journal.empty() ? std::string("null") : json::quote(journal)) + "}";
}

// Seconds since the epoch of "2026-11-30T01:22:33.123Z"; 0 when it is not that.
int64_t epoch_seconds(const std::string& iso) {
    std::tm tm{};
    if (::strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return 0;
    return static_cast<int64_t>(::timegm(&tm));
}

std::string canonical(const std::string& path) {
    std::error_code ec;
    auto p = std::filesystem::weakly_canonical(path, ec);
    return ec ? path : p.string();
}

// An event as its journal line, without the newline: what /events serves.
// The journal's own cap, so the line reads as the writer wrote it.
std::string event_line(const journal::event& e) {
    std::string line = journal::to_json_line(e, journal::writer_options{}.max_result_bytes);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return line;
}

}  // namespace

run_record::run_record(std::string id, std::string agent, metrics* m)
    : id_(std::move(id)), agent_(std::move(agent)), metrics_(m) {
    created_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string run_record::state() const {
    std::lock_guard lock(mutex_);
    return state_;
}

bool run_record::finished() const {
    std::lock_guard lock(mutex_);
    return done_;
}

void run_record::cancel() { cancel_->store(true); }

int64_t run_record::created() const {
    std::lock_guard lock(mutex_);
    return created_;
}

std::string run_record::status_json() const {
    std::lock_guard lock(mutex_);
    std::string out = "{\"id\":" + json::quote(id_) + ",\"object\":\"run\",\"agent\":" + json::quote(agent_) +
                      ",\"state\":" + json::quote(state_) + ",\"created\":" + std::to_string(created_) +
                      ",\"n_events\":" + std::to_string(events_.size()) + ",\"pending\":" + pending_json_ +
                      ",\"result\":" + result_json_ + "}";
    return out;
}

std::shared_ptr<run_record> run_record::from_journal(const journal::run_log& log) {
    const journal::run_start_event* start = log.start();
    auto r = std::make_shared<run_record>(log.run_id(), start ? start->agent : std::string(), nullptr);
    if (start) r->created_ = epoch_seconds(start->started_at);
    for (const auto& e : log.events) r->events_.emplace_back(e.seq, event_line(e));
    r->state_ = log.state();
    const journal::final_event* fin = log.final_answer();
    const journal::run_end_event* end = log.end();
    int64_t steps = 0;
    for (const auto& e : log.events) steps += std::holds_alternative<journal::model_turn_event>(e.body) ? 1 : 0;
    const std::string error = end ? end->error : std::string("the run did not end: its process stopped before it finished");
    r->result_json_ = result_json(fin ? fin->answer_json : std::string(), fin && fin->verified, fin ? fin->steps : steps, error,
                                  log.path.string());
    if (auto parsed = journal::parse_run_state(r->state_); parsed && journal::is_parked(*parsed)) r->pending_json_ = pending_json(log.pending());
    r->done_ = true;
    return r;
}

std::shared_ptr<run_record> run_record::resumed(const journal::run_log& log, metrics* m) {
    const journal::run_start_event* start = log.start();
    auto r = std::make_shared<run_record>(log.run_id(), start ? start->agent : std::string(), m);
    if (start) r->created_ = epoch_seconds(start->started_at);
    for (const auto& e : log.events) r->events_.emplace_back(e.seq, event_line(e));
    return r;
}

void run_record::on_event(const journal::event& e) {
    std::string line = event_line(e);
    std::vector<std::function<void()>> wake;
    {
        std::lock_guard lock(mutex_);
        events_.emplace_back(e.seq, std::move(line));
        wake.swap(waiters_);
    }
    for (auto& w : wake) w();
}

void run_record::read_events(int64_t from, std::vector<std::pair<int64_t, std::string>>& out, bool& done, std::function<void()> wake) {
    std::lock_guard lock(mutex_);
    auto it = std::lower_bound(events_.begin(), events_.end(), from, [](const auto& ev, int64_t seq) { return ev.first < seq; });
    out.insert(out.end(), it, events_.end());
    done = done_;
    if (out.empty() && !done_ && wake) waiters_.push_back(std::move(wake));
}

void run_record::on_tool_end(const run_tool_call& c) {
    if (metrics_) metrics_->observe_tool(c.name, c.end_ms - c.start_ms);
}

void run_record::finished(const run_outcome& o) {
    // The run's events (run_end last) came through on_event already; done_
    // is set under the lock that guards them, so a reader that sees done_
    // has seen every event.
    std::string result = result_json(o.answer, o.verified, o.steps, o.error, o.journal_path);
    std::vector<std::function<void()>> wake;
    {
        std::lock_guard lock(mutex_);
        state_ = o.state;
        result_json_ = std::move(result);
        pending_json_ = pending_json(o.pending);
        done_ = true;
        wake.swap(waiters_);
    }
    for (auto& w : wake) w();
}

void run_record::update_from_db(const std::string& state, const std::string& result_json, const std::string& pending_json,
                                const std::vector<std::pair<int64_t, std::string>>& lines, bool ended) {
    std::vector<std::function<void()>> wake;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [seq, line] : lines)
            if (events_.empty() || seq > events_.back().first) events_.emplace_back(seq, line);
        state_ = state;
        result_json_ = result_json;
        pending_json_ = pending_json;
        done_ = ended;
        wake.swap(waiters_);
    }
    for (auto& w : wake) w();
}

int64_t run_record::next_seq() const {
    std::lock_guard lock(mutex_);
    return events_.empty() ? 0 : events_.back().first + 1;
}

run_registry::run_registry(agent_service& service, run_registry_options options, metrics* m)
    : service_(service), options_(std::move(options)), metrics_(m) {}

run_registry::~run_registry() {
    // Its listener and the refreshes it started call back into this
    // registry: they end first.
    close_database();
    db_.reset();
}

void run_registry::close_database() {
    if (db_) db_->close();
}

namespace {

// "queued" and "running" are the database's states of a run not yet ended.
bool db_run_ended(const std::string& state) { return state != "queued" && state != "running"; }

// The calls a parked run waits on, from its journal lines (all of them); [] otherwise.
std::string db_pending_json(const db::run_row& row, const std::vector<std::pair<int64_t, std::string>>& lines) {
    auto parsed = journal::parse_run_state(row.state);
    if (!parsed || !journal::is_parked(*parsed)) return "[]";
    auto log = db::journal_of_lines(row.id, lines);
    return log ? pending_json(log->pending()) : std::string("[]");
}

// A blocking call on a registry with a database: the caller's mistake, refused.
error needs_async(std::string_view what) {
    return make_error(errc::unsupported, "run_registry::" + std::string(what) + " with a database: use its awaitable form (async_" +
                                             std::string(what) + ")");
}

}  // namespace

status run_registry::open_database() {
    if (options_.db_url.empty()) return {};
    auto d = db::run_directory::open(options_.db_url, [this](const std::string& id) {
        // On the directory's thread, which must not wait: the refresh is a
        // coroutine of its own there. Runs changed before the directory
        // was handed over are not watched yet.
        if (!db_open_.load(std::memory_order_acquire)) return;
        asio::co_spawn(db_->executor(), refresh_from_db(id), [id](std::exception_ptr e) {
            if (e) TACHYON_LOG(error, "refreshing run " << id << " from the database: internal error");
        });
    });
    if (!d) return d.err();
    db_ = std::move(d).value();
    db_open_.store(true, std::memory_order_release);
    return {};
}

asio::awaitable<std::string> run_registry::pending_in_db(const db::run_row& row) const {
    auto parsed = journal::parse_run_state(row.state);
    if (!parsed || !journal::is_parked(*parsed)) co_return std::string("[]");
    auto all = co_await db_->snapshot(row.id, 0);
    if (!all || !*all) co_return std::string("[]");
    co_return db_pending_json(row, (*all)->events);
}

void run_registry::release_waiters(db_watch& w) const {
    if (w.done) asio::post(db_->executor(), [flag = std::move(w.done)] { flag->set(); });
    w.done.reset();
}

asio::awaitable<void> run_registry::refresh_in_db(std::string id) const {
    co_await asio::co_spawn(db_->executor(), refresh_from_db(std::move(id)), asio::use_awaitable);
}

asio::awaitable<void> run_registry::refresh_from_db(std::string id) const {
    std::shared_ptr<run_record> record;
    std::shared_ptr<async_flag> wait_for;
    {
        std::lock_guard lock(db_mutex_);
        auto it = watched_.find(id);
        if (it == watched_.end()) co_return;
        if (it->second.busy) {
            // The refresh going reads once more, then wakes this one.
            it->second.again = true;
            if (!it->second.done) it->second.done = std::make_shared<async_flag>(db_->executor());
            wait_for = it->second.done;
        } else {
            record = it->second.record.lock();
            if (!record) {
                watched_.erase(it);
                co_return;
            }
            it->second.busy = true;
        }
    }
    if (wait_for) {
        co_await wait_for->wait();
        co_return;
    }
    for (;;) {
        auto snap = co_await db_->snapshot(id, record->next_seq());
        if (!snap) TACHYON_LOG(warn, __func__ << ": " << snap.err().message);
        const bool found = snap && *snap;
        const bool ended = found && db_run_ended((*snap)->row.state);
        std::string pending = "[]";
        if (ended) pending = co_await pending_in_db((*snap)->row);
        std::lock_guard lock(db_mutex_);
        if (found) record->update_from_db((*snap)->row.state, (*snap)->row.result_json, pending, (*snap)->events, ended);
        auto it = watched_.find(id);
        // Resumed meanwhile: the watch is another record's now.
        if (it == watched_.end() || it->second.record.lock() != record) co_return;
        if (ended) {
            release_waiters(it->second);
            watched_.erase(it);  // nothing more to hear of it
            co_return;
        }
        // Not found or not read (an error): the next notification tries again.
        if (!found || !it->second.again) {
            it->second.busy = false;
            it->second.again = false;
            release_waiters(it->second);
            co_return;
        }
        it->second.again = false;
    }
}

asio::awaitable<void> run_registry::async_cancel(std::shared_ptr<run_record> run) {
    run->cancel();
    if (!db_) co_return;
    // The worker running it hears of it (run_store.h, request_cancel).
    auto asked = co_await db_->request_cancel(run->id());
    if (!asked) {
        TACHYON_LOG(warn, "cancelling run " << run->id() << ": " << asked.err().message);
        co_return;
    }
    if (*asked) co_await refresh_in_db(run->id());
}

asio::awaitable<result<std::shared_ptr<run_record>>> run_registry::resume_in_db(std::string id, std::vector<call_decision> decisions) {
    auto snap = co_await db_->snapshot(id, 0);
    if (!snap) co_return make_error(errc::internal, snap.err().message);
    if (!*snap) co_return make_error(errc::not_found, "run '" + id + "' not found");
    const db::run_row& row = (*snap)->row;
    if (!db_run_ended(row.state))
        co_return make_error(errc::unsupported, "run '" + id + "' is " + row.state +
                                                    "; it can be resumed once it stops (a run whose worker died is resumed by another worker without asking)");
    auto parked = journal::parse_run_state(row.state);
    if (!parked || !journal::is_parked(*parked))
        co_return make_error(errc::invalid_argument, "run '" + id + "' ended (" + row.state +
                                                         "); only a run in needs_attention or awaiting_approval can be resumed");
    auto log = db::journal_of_lines(id, (*snap)->events);
    if (!log) co_return make_error(errc::internal, log.err().message);
    if (auto st = check_resumable(*log, id, decisions); !st) co_return st.err();
    // Fenced by the epoch the journal was read at: a decision on what this
    // request did not see is refused.
    auto sent = co_await db_->request_resume(id, row.lease_epoch, decisions);
    if (!sent) co_return make_error(errc::internal, sent.err().message);
    if (!*sent) co_return make_error(errc::unsupported, "run '" + id + "' changed while this request decided (another request resumed it); read it again");
    {
        std::lock_guard lock(db_mutex_);
        if (auto it = watched_.find(id); it != watched_.end()) {
            release_waiters(it->second);
            watched_.erase(it);
        }
    }
    auto record = co_await find_in_db(id);
    if (!record) co_return make_error(errc::internal, "run '" + id + "': not readable from the database after it was queued");
    co_return record;
}

asio::awaitable<std::shared_ptr<run_record>> run_registry::find_in_db(std::string id) const {
    {
        std::lock_guard lock(db_mutex_);
        auto it = watched_.find(id);
        if (it != watched_.end())
            if (auto r = it->second.record.lock()) co_return r;
    }
    auto snap = co_await db_->snapshot(id, 0);
    if (!snap) {
        TACHYON_LOG(warn, __func__ << ": " << snap.err().message);
        co_return nullptr;
    }
    if (!*snap) co_return nullptr;
    const db::run_row& row = (*snap)->row;
    const bool ended = db_run_ended(row.state);
    auto record = std::make_shared<run_record>(id, row.agent, nullptr);
    {
        std::lock_guard lock(db_mutex_);
        // Another request read it meanwhile: one record per run.
        auto it = watched_.find(id);
        if (it != watched_.end())
            if (auto r = it->second.record.lock()) co_return r;
        record->update_from_db(row.state, row.result_json, ended ? db_pending_json(row, (*snap)->events) : std::string("[]"), (*snap)->events, ended);
        // Watched from now on; an event that landed since the read comes with the refresh below.
        if (!ended) watched_[id] = db_watch{record, false, false, nullptr};
    }
    if (!ended) co_await refresh_in_db(id);
    co_return record;
}

result<run_registry::start_request> run_registry::parse_start(std::string_view body) const {
    using simdjson::dom::element;
    using simdjson::dom::element_type;
    simdjson::dom::parser parser;
    element doc;
    if (auto err = parser.parse(simdjson::padded_string(body)).get(doc))
        return make_error(errc::invalid_argument, std::string("body: not valid JSON: ") + simdjson::error_message(err));
    if (doc.type() != element_type::OBJECT) return make_error(errc::invalid_argument, "body: expected a JSON object");
    for (auto field : doc.get_object()) {
        if (field.key != "agent" && field.key != "task" && field.key != "inputs")
            return make_error(errc::invalid_argument, std::string(field.key) + ": unrecognized argument (expected one of: agent, task, inputs)");
    }
    element x;
    if (doc["agent"].get(x)) return make_error(errc::invalid_argument, "agent: missing (required)");
    if (x.type() != element_type::STRING) return make_error(errc::invalid_argument, "agent: expected a string");
    const std::string name(x.get_string().value());
    if (!valid_agent_name(name)) return make_error(errc::invalid_argument, "agent: expected an agent name (letters, digits, '_', '-', '.'), got '" + name + "'");
    if (doc["task"].get(x)) return make_error(errc::invalid_argument, "task: missing (required)");
    if (x.type() != element_type::STRING) return make_error(errc::invalid_argument, "task: expected a string");
    run_request req;
    req.task = std::string(x.get_string().value());
    if (!doc["inputs"].get(x)) {
        if (x.type() != element_type::OBJECT) return make_error(errc::invalid_argument, "inputs: expected an object of strings");
        for (auto field : x.get_object()) {
            if (field.value.type() != element_type::STRING)
                return make_error(errc::invalid_argument, "inputs." + std::string(field.key) + ": expected a string");
            req.inputs[std::string(field.key)] = std::string(field.value.get_string().value());
        }
    }
    const std::string file = (std::filesystem::path(options_.agents_dir) / (name + ".json")).string();
    if (!std::filesystem::exists(file)) return make_error(errc::not_found, "agent '" + name + "' not found (no " + file + ")");
    auto agent = load_agent_file(file, builtin_tool_names());
    if (!agent) return make_error(errc::internal, agent.err().message);
    // A remote caller's inputs: declared by the agent file, path inputs inside the data roots.
    const input_confinement confinement{options_.data_roots};
    auto inputs = check_run_inputs(*agent, req.inputs, &confinement);
    if (!inputs) return make_error(errc::invalid_argument, inputs.err().message);
    req.inputs = std::move(inputs).value();
    // Share the engine of a model the server already serves.
    const std::string model = canonical(agent->model);
    for (const auto& path : options_.model_paths)
        if (canonical(path) == model) agent->model = path;
    req.agent = std::make_shared<agent_definition>(std::move(agent).value());
    return start_request{name, std::move(req)};
}

result<std::shared_ptr<run_record>> run_registry::start(std::string_view body, std::string traceparent) {
    if (db_) return needs_async("start");
    auto parts = parse_start(body);
    if (!parts) return parts.err();
    const std::string& name = parts->name;
    run_request& req = parts->req;
    if (active_.fetch_add(1) >= options_.max_active) {
        active_.fetch_sub(1);
        return make_error(errc::resource_exhausted, "too many agent runs in progress (at most " + std::to_string(options_.max_active) + ")");
    }
    std::string id;
    {
        std::lock_guard lock(mutex_);
        do id = journal::make_run_id();
        while (runs_.count(id) || std::filesystem::exists(std::filesystem::path(options_.journal_dir) / (id + ".jsonl")));
    }
    req.journal_dir = options_.journal_dir;
    req.run_id = id;
    req.traceparent = std::move(traceparent);
    auto record = std::make_shared<run_record>(id, name, metrics_);
    {
        std::lock_guard lock(mutex_);
        runs_.emplace(id, record);
    }
    launch(std::move(req), record);
    return record;
}

asio::awaitable<result<std::shared_ptr<run_record>>> run_registry::async_start(std::string body, std::string traceparent) {
    if (!db_) co_return start(body, std::move(traceparent));
    auto parts = parse_start(body);
    if (!parts) co_return parts.err();
    // Queued for the workers; any server answers for it from the database.
    for (int attempt = 0;; ++attempt) {
        const std::string id = journal::make_run_id();
        auto st = co_await db_->enqueue(id, parts->name, parts->req.task, parts->req.inputs, traceparent);
        if (!st && st.err().code == errc::invalid_argument && attempt < 16) continue;  // the id is taken: draw again
        if (!st) co_return make_error(errc::internal, st.err().message);
        auto record = std::make_shared<run_record>(id, parts->name, nullptr);
        record->update_from_db("queued", "null", "[]", {}, false);
        std::lock_guard lock(db_mutex_);
        watched_[id] = db_watch{record, false, false, nullptr};
        co_return record;
    }
}

bool run_registry::running(std::string_view id) const {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(id);
    return it != runs_.end() && !it->second->finished();
}

result<call_decision> run_registry::parse_decision(std::string_view body, std::string_view verb) {
    using simdjson::dom::element;
    using simdjson::dom::element_type;
    const bool decide = verb == "decide";
    const std::string keys = decide ? "call_id, action" : "call_id, reason";
    simdjson::dom::parser parser;
    element doc;
    if (auto err = parser.parse(simdjson::padded_string(body)).get(doc))
        return make_error(errc::invalid_argument, std::string("body: not valid JSON: ") + simdjson::error_message(err));
    if (doc.type() != element_type::OBJECT) return make_error(errc::invalid_argument, "body: expected a JSON object with " + keys);
    call_decision d;
    for (auto field : doc.get_object()) {
        const std::string key(field.key);
        if (key != "call_id" && key != (decide ? "action" : "reason"))
            return make_error(errc::invalid_argument, key + ": unrecognized argument (expected one of: " + keys + ")");
        if (field.value.type() != element_type::STRING) return make_error(errc::invalid_argument, key + ": expected a string");
        const std::string value(field.value.get_string().value());
        if (key == "call_id") d.call_id = value;
        else if (key == "action") d.action = value;
        else d.reason = value;
    }
    if (d.call_id.empty()) return make_error(errc::invalid_argument, "call_id: missing (required)");
    if (decide) {
        if (d.action != "retry" && d.action != "skip")
            return make_error(errc::invalid_argument, "action: expected \"retry\" or \"skip\", got \"" + d.action + "\"");
    } else {
        d.action = std::string(verb);  // approve or reject
    }
    return d;
}


result<std::shared_ptr<run_record>> run_registry::resume(std::string_view id, std::vector<call_decision> decisions) {
    if (db_) return needs_async("resume");
    if (!valid_run_id(id) || options_.journal_dir.empty()) return make_error(errc::not_found, "run '" + std::string(id) + "' not found");
    if (running(id)) return make_error(errc::unsupported, "run '" + std::string(id) + "' is running; it can be resumed once it stops");
    auto log = read_resumable(options_.journal_dir, std::string(id), decisions);
    if (!log) return log.err();
    auto record = run_record::resumed(*log, metrics_);
    auto req = resume_request(std::move(log).value(), std::move(decisions));
    if (!req) return make_error(errc::invalid_argument, req.err().message);
    // A remote run's inputs, checked again as when it started (the data roots may have changed).
    const input_confinement confinement{options_.data_roots};
    auto inputs = check_run_inputs(*req->agent, req->inputs, &confinement);
    if (!inputs) return make_error(errc::invalid_argument, inputs.err().message);
    req->inputs = std::move(inputs).value();
    // Share the engine of a model the server already serves.
    const std::string model = canonical(req->agent->model);
    for (const auto& path : options_.model_paths) {
        if (canonical(path) != model) continue;
        auto agent = std::make_shared<agent_definition>(*req->agent);
        agent->model = path;
        req->agent = std::move(agent);
    }
    if (active_.fetch_add(1) >= options_.max_active) {
        active_.fetch_sub(1);
        return make_error(errc::resource_exhausted, "too many agent runs in progress (at most " + std::to_string(options_.max_active) + ")");
    }
    {
        std::lock_guard lock(mutex_);
        auto it = runs_.find(id);
        if (it != runs_.end() && !it->second->finished()) {
            active_.fetch_sub(1);
            return make_error(errc::unsupported, "run '" + std::string(id) + "' is running; it can be resumed once it stops");
        }
        std::erase(finished_, std::string(id));
        runs_[std::string(id)] = record;
    }
    launch(std::move(req).value(), record);
    return record;
}

asio::awaitable<result<std::shared_ptr<run_record>>> run_registry::async_resume(std::string id, std::vector<call_decision> decisions) {
    if (!db_) co_return resume(id, std::move(decisions));
    if (!valid_run_id(id)) co_return make_error(errc::not_found, "run '" + id + "' not found");
    co_return co_await resume_in_db(std::move(id), std::move(decisions));
}

void run_registry::launch(run_request req, const std::shared_ptr<run_record>& record) {
    service_.start(std::move(req), record.get(), record->cancel_flag(), [this, record](run_outcome out) {
        record->finished(out);
        {
            // Memory stays bounded on a long-lived server: the oldest finished records go.
            std::lock_guard lock(mutex_);
            finished_.push_back(record->id());
            while (static_cast<int>(finished_.size()) > std::max(0, options_.max_finished)) {
                runs_.erase(finished_.front());
                finished_.pop_front();
            }
        }
        active_.fetch_sub(1);
    });
}

std::shared_ptr<run_record> run_registry::find(std::string_view id) const {
    {
        std::lock_guard lock(mutex_);
        auto it = runs_.find(id);
        if (it != runs_.end()) return it->second;
    }
    if (db_) return nullptr;  // async_find
    // Not in memory (an earlier server's run, or one dropped after
    // max_finished): its journal answers, read afresh on each request.
    if (!valid_run_id(id) || options_.journal_dir.empty()) return nullptr;
    const std::filesystem::path path = std::filesystem::path(options_.journal_dir) / (std::string(id) + ".jsonl");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return nullptr;
    auto log = journal::read_journal(path);
    if (!log) {
        TACHYON_LOG(warn, __func__ << ": " << log.err().message);
        return nullptr;
    }
    return run_record::from_journal(*log);
}


asio::awaitable<std::shared_ptr<run_record>> run_registry::async_find(std::string id) const {
    if (!db_) co_return find(id);
    if (!valid_run_id(id)) co_return nullptr;
    co_return co_await find_in_db(std::move(id));
}

namespace {

// A run of a list page as GET /v1/runs/{id} shows it (run_record::status_json).
std::string db_row_status_json(const db::run_row& row, const std::string& pending) {
    return "{\"id\":" + json::quote(row.id) + ",\"object\":\"run\",\"agent\":" + json::quote(row.agent) +
           ",\"state\":" + json::quote(row.state) + ",\"created\":" + std::to_string(row.created) +
           ",\"n_events\":" + std::to_string(row.n_events) + ",\"pending\":" + pending + ",\"result\":" + row.result_json + "}";
}

bool listable_state(std::string_view s) { return s == "queued" || s == "running" || s == "interrupted" || journal::parse_run_state(s).ok(); }

// {"object": "list", "data": [items...], "first_id", "last_id", "has_more"}.
std::string runs_page_json(const std::vector<std::string>& items, const std::vector<std::string>& ids, bool more) {
    std::string out = "{\"object\":\"list\",\"data\":[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
    out += "],\"first_id\":" + (ids.empty() ? std::string("null") : json::quote(ids.front()));
    out += ",\"last_id\":" + (ids.empty() ? std::string("null") : json::quote(ids.back()));
    return out + ",\"has_more\":" + (more ? "true" : "false") + "}";
}

}  // namespace

result<db::run_page_query> run_registry::parse_list_query(std::string_view query) {
    db::run_page_query q;
    for (size_t at = 0; at < query.size();) {
        const size_t amp = std::min(query.find('&', at), query.size());
        const std::string_view pair = query.substr(at, amp - at);
        at = amp + 1;
        if (pair.empty()) continue;
        const size_t eq = pair.find('=');
        const std::string key(pair.substr(0, eq));
        const std::string value(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
        if (key == "limit") {
            char* end = nullptr;
            const long n = std::strtol(value.c_str(), &end, 10);
            if (value.empty() || *end != '\0' || n < 1 || n > 1000)
                return make_error(errc::invalid_argument, "limit: expected an integer from 1 to 1000, got '" + value + "'");
            q.limit = static_cast<int>(n);
        } else if (key == "after") {
            if (!valid_run_id(value)) return make_error(errc::invalid_argument, "after: expected a run id (the last_id of the previous page), got '" + value + "'");
            q.after = value;
        } else if (key == "state") {
            if (!listable_state(value))
                return make_error(errc::invalid_argument, "state: expected queued, running, interrupted, succeeded, failed, cancelled, budget_exhausted, "
                                                          "needs_attention or awaiting_approval, got '" + value + "'");
            q.state = value;
        } else {
            return make_error(errc::invalid_argument, key + ": unrecognized parameter (expected one of: limit, after, state)");
        }
    }
    return q;
}

result<std::string> run_registry::list_json(std::string_view query) const {
    if (db_) return needs_async("list_json");
    auto parsed = parse_list_query(query);
    if (!parsed) return parsed.err();
    const db::run_page_query& q = *parsed;
    std::vector<std::string> items;
    std::vector<std::string> ids;
    bool more = false;
    auto all = list();
    std::vector<std::pair<int64_t, std::shared_ptr<run_record>>> sorted;
    for (auto& r : all) sorted.emplace_back(r->created(), std::move(r));
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second->id() > b.second->id();
    });
    bool past_cursor = q.after.empty();
    int64_t cursor_created = 0;
    for (const auto& entry : sorted)
        if (entry.second->id() == q.after) cursor_created = entry.first;
    for (const auto& entry : sorted) {
        const auto& r = entry.second;
        if (!past_cursor) {
            // Past the cursor: older, or as old with a smaller id (the order above).
            past_cursor = entry.first < cursor_created || (entry.first == cursor_created && r->id() < q.after);
            if (!past_cursor) continue;
        }
        if (!q.state.empty() && r->state() != q.state) continue;
        if (static_cast<int>(items.size()) == q.limit) {
            more = true;
            break;
        }
        items.push_back(r->status_json());
        ids.push_back(r->id());
    }
    return runs_page_json(items, ids, more);
}

asio::awaitable<result<std::string>> run_registry::async_list_json(std::string query) const {
    if (!db_) co_return list_json(query);
    auto q = parse_list_query(query);
    if (!q) co_return q.err();
    auto page = co_await db_->list(*q);
    if (!page) co_return make_error(errc::internal, page.err().message);
    std::vector<std::string> items;
    std::vector<std::string> ids;
    for (const auto& row : page->first) {
        // Only a parked run waits on calls: its journal names them.
        std::string pending = co_await pending_in_db(row);
        items.push_back(db_row_status_json(row, pending));
        ids.push_back(row.id);
    }
    co_return runs_page_json(items, ids, page->second);
}

std::vector<std::shared_ptr<run_record>> run_registry::list() const {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<run_record>> out;
    for (const auto& [id, r] : runs_) out.push_back(r);
    return out;
}

run_state_counts run_registry::counts() const {
    run_state_counts out{{"running", 0}, {"succeeded", 0}, {"failed", 0}, {"cancelled", 0}, {"budget_exhausted", 0}};
    for (const auto& r : list()) ++out[r->state()];
    return out;
}

void run_registry::cancel_all() {
    for (const auto& r : list()) r->cancel();
}

bool run_registry::wait_idle(std::chrono::milliseconds timeout) const {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (active_.load() > 0) {
        if (std::chrono::steady_clock::now() >= end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

}  // namespace tachyon::http
