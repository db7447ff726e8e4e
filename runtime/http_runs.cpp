#include "runtime/http_runs.h"

#include <simdjson.h>

#include <filesystem>
#include <thread>

#include "runtime/json_util.h"
#include "runtime/tool_catalog.h"

namespace tachyon::http {
namespace {

bool valid_agent_name(std::string_view name) {
    if (name.empty() || name.size() > 128) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.')) return false;
    return name.front() != '.';
}

std::string canonical(const std::string& path) {
    std::error_code ec;
    auto p = std::filesystem::weakly_canonical(path, ec);
    return ec ? path : p.string();
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

void run_record::add_event(journal::event_body body) {
    std::vector<std::function<void()>> wake;
    {
        std::lock_guard lock(mutex_);
        journal::event e;
        e.seq = static_cast<int64_t>(events_.size());
        e.t_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
        e.body = std::move(body);
        std::string line = journal::to_json_line(e, 16 * 1024);
        if (!line.empty() && line.back() == '\n') line.pop_back();
        events_.push_back(std::move(line));
        wake.swap(waiters_);
    }
    for (auto& w : wake) w();
}

void run_record::read_events(int64_t from, std::vector<std::pair<int64_t, std::string>>& out, bool& done, std::function<void()> wake) {
    std::lock_guard lock(mutex_);
    for (int64_t i = std::max<int64_t>(0, from); i < static_cast<int64_t>(events_.size()); ++i) out.emplace_back(i, events_[static_cast<size_t>(i)]);
    done = done_;
    if (out.empty() && !done_ && wake) waiters_.push_back(std::move(wake));
}

void run_record::started(const run_request& request) {
    journal::run_start_event e;
    e.run_id = id_;
    e.agent = request.agent->name;
    e.agent_file = request.agent->file;
    e.model = request.agent->model;
    e.inputs = request.inputs;
    e.task = request.task;
    e.started_at = journal::iso_utc(std::chrono::system_clock::now());
    add_event(std::move(e));
}

void run_record::on_turn_end(const run_turn& t) { add_event(journal_event(t)); }

void run_record::on_tool_end(const run_tool_call& c) {
    if (metrics_) metrics_->observe_tool(c.name, c.end_ms - c.start_ms);
    add_event(journal_event(c));
}

void run_record::on_verify(int attempt, bool ok, const std::string& message) {
    journal::verify_event e;
    e.attempt = attempt;
    e.ok = ok;
    e.message = message;
    add_event(std::move(e));
}

void run_record::finished(const run_outcome& o) {
    journal::final_event f;
    f.answer_json = o.answer.empty() ? "null" : o.answer;
    f.verified = o.verified;
    f.steps = o.steps;
    f.time_to_answer_ms = o.time_to_answer_ms;
    f.model_ms = o.model_ms;
    f.tool_ms = o.tool_ms;
    f.overlap_saved_ms = o.overlap_saved_ms;
    add_event(std::move(f));
    journal::run_end_event e;
    auto parsed = journal::parse_run_state(o.state);
    e.state = parsed ? *parsed : journal::run_state::failed;
    e.error = o.error;
    std::string result = "{\"answer\":" + (o.answer.empty() ? std::string("null") : o.answer) +
                         ",\"verified\":" + (o.verified ? "true" : "false") + ",\"steps\":" + std::to_string(o.steps) +
                         ",\"error\":" + (o.error.empty() ? std::string("null") : json::quote(o.error)) +
                         ",\"journal\":" + (o.journal_path.empty() ? std::string("null") : json::quote(o.journal_path)) + "}";
    {
        std::lock_guard lock(mutex_);
        state_ = o.state;
        result_json_ = std::move(result);
    }
    // run_end last, with done_ set under the same lock as its append, so a
    // reader that sees done_ has seen every event.
    std::vector<std::function<void()>> wake;
    {
        std::lock_guard lock(mutex_);
        journal::event ev;
        ev.seq = static_cast<int64_t>(events_.size());
        ev.t_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
        ev.body = std::move(e);
        std::string line = journal::to_json_line(ev, 16 * 1024);
        if (!line.empty() && line.back() == '\n') line.pop_back();
        events_.push_back(std::move(line));
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
    for (const auto& p : agent->placeholders())
        if (!req.inputs.count(p)) return make_error(errc::invalid_argument, "inputs." + p + ": missing (agent '" + name + "' uses {" + p + "})");
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
    record->started(req);
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
    std::lock_guard lock(mutex_);
    auto it = runs_.find(id);
    return it == runs_.end() ? nullptr : it->second;
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
