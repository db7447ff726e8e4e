#include "runtime/serve/http_runs.h"

#include <simdjson.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <thread>
#include <variant>

#include "base/log.h"
#include "runtime/common/json_util.h"
#include "runtime/agent/tool_catalog.h"

namespace tachyon::http {
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

std::string run_record::status_json() const {
    std::lock_guard lock(mutex_);
    std::string out = "{\"id\":" + json::quote(id_) + ",\"object\":\"run\",\"agent\":" + json::quote(agent_) +
                      ",\"state\":" + json::quote(state_) + ",\"created\":" + std::to_string(created_) +
                      ",\"n_events\":" + std::to_string(events_.size()) + ",\"result\":" + result_json_ + "}";
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
    r->done_ = true;
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
        done_ = true;
        wake.swap(waiters_);
    }
    for (auto& w : wake) w();
}

run_registry::run_registry(agent_service& service, run_registry_options options, metrics* m)
    : service_(service), options_(std::move(options)), metrics_(m) {}

result<std::shared_ptr<run_record>> run_registry::start(std::string_view body) {
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
    req.agent = std::make_shared<agent_definition>(std::move(agent).value());
    req.journal_dir = options_.journal_dir;
    req.run_id = id;
    auto record = std::make_shared<run_record>(id, name, metrics_);
    {
        std::lock_guard lock(mutex_);
        runs_.emplace(id, record);
    }
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
    return record;
}

std::shared_ptr<run_record> run_registry::find(std::string_view id) const {
    {
        std::lock_guard lock(mutex_);
        auto it = runs_.find(id);
        if (it != runs_.end()) return it->second;
    }
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
