#include "runtime/agent/agent_run_replay.h"

#include <algorithm>
#include <variant>

#include "runtime/agent/agent_run.h"
#include "runtime/agent/tool_catalog.h"
#include "runtime/common/json_util.h"

namespace tachyon {

namespace {

// One call: a verify check's calls share their id, their tools differ.
std::string call_key(const std::string& call_id, const std::string& name) { return call_id + "\n" + name; }

std::string minified(const std::string& json) {
    auto m = json::minify(json, "arguments");
    return m ? *m : json;
}

// The key of an event the loop writes again when it replays what led to it;
// empty for events that are never written twice this way (calls, run_start,
// run_end, decisions are handled by the runner).
struct event_keyer {
    std::string operator()(const journal::turn_start_event& e) const { return "turn_start/" + std::to_string(e.step); }
    std::string operator()(const journal::model_turn_event& e) const { return "model_turn/" + std::to_string(e.step); }
    std::string operator()(const journal::call_rejected_event& e) const { return "call_rejected/" + e.call_id; }
    std::string operator()(const journal::feedback_event& e) const {
        return "feedback/" + std::to_string(e.step) + "/" + e.call_id + "/" + e.source;
    }
    std::string operator()(const journal::answer_rejected_event& e) const {
        return "answer_rejected/" + std::to_string(e.step) + "/" + std::to_string(e.attempt);
    }
    std::string operator()(const journal::verify_event& e) const { return "verify/" + std::to_string(e.attempt) + "/" + e.check; }
    std::string operator()(const journal::final_event&) const { return "final"; }
    template <class other_event>
    std::string operator()(const other_event&) const { return {}; }
};

std::string event_key(const journal::event_body& body) { return std::visit(event_keyer{}, body); }

// The journal's cap on results leaves this mark: such a text is not what the model read.
bool cut_by_journal(const journal::tool_call_event& e) {
    const std::string& text = e.ok ? e.result : e.error;
    constexpr std::string_view mark = " more bytes not journaled]";
    return text.size() >= mark.size() && text.compare(text.size() - mark.size(), mark.size(), mark) == 0;
}

}  // namespace

run_replay::run_replay(journal::run_log log) : log_(std::move(log)) {
    for (const auto& e : log_.events) {
        const std::string key = event_key(e.body);
        if (!key.empty()) recorded_.insert(key);
        if (const auto* t = std::get_if<journal::model_turn_event>(&e.body)) {
            if (!t->tokens.empty()) turns_[t->step] = t;
        } else if (const auto* s = std::get_if<journal::tool_start_event>(&e.body)) {
            const std::string k = call_key(s->call_id, s->name);
            started_[k] = s;
            results_.erase(k);
            // A retry or skip was for the start before this one.
            auto d = decisions_.find(s->call_id);
            if (d != decisions_.end() && (d->second.action == "retry" || d->second.action == "skip")) decisions_.erase(d);
        } else if (const auto* c = std::get_if<journal::tool_call_event>(&e.body)) {
            const std::string k = call_key(c->call_id, c->name);
            results_[k] = c;
            started_.erase(k);
        } else if (const auto* d = std::get_if<journal::decision_event>(&e.body)) {
            decisions_[d->call_id] = call_decision{d->call_id, d->action, d->reason};
        }
    }
}

const journal::model_turn_event* run_replay::turn(int64_t step) const {
    auto it = turns_.find(step);
    return it == turns_.end() ? nullptr : it->second;
}

const journal::tool_call_event* run_replay::result(const std::string& call_id, const std::string& name,
                                                   const std::string& arguments_json) const {
    auto it = results_.find(call_key(call_id, name));
    if (it == results_.end() || cut_by_journal(*it->second)) return nullptr;
    if (minified(it->second->arguments_json) != minified(arguments_json)) return nullptr;
    return it->second;
}

bool run_replay::maybe_ran(const std::string& call_id, const std::string& name, const std::string& arguments_json) const {
    auto it = started_.find(call_key(call_id, name));
    return it != started_.end() && minified(it->second->arguments_json) == minified(arguments_json);
}

const call_decision* run_replay::decision(const std::string& call_id) const {
    auto it = decisions_.find(call_id);
    return it == decisions_.end() ? nullptr : &it->second;
}

void run_replay::add_decision(const call_decision& d) { decisions_[d.call_id] = d; }

bool run_replay::holds(const journal::event_body& body) {
    const std::string key = event_key(body);
    if (key.empty()) return false;
    auto it = recorded_.find(key);
    if (it == recorded_.end()) return false;
    recorded_.erase(it);
    return true;
}

std::map<std::string, bool> switches_to_map(const run_switches& s) {
    return {{"early_dispatch", s.early_dispatch}, {"parallel_tools", s.parallel_tools}, {"kv_retain", s.kv_retain},
            {"spec_decode", s.spec_decode},       {"jump_forward", s.jump_forward},     {"speculative_tools", s.speculative_tools},
            {"call_drafts", s.call_drafts},       {"constrain", s.constrain},           {"grounding", s.grounding}};
}

run_switches switches_from_map(const std::map<std::string, bool>& m) {
    run_switches s;
    const auto take = [&](const char* name, bool& into) {
        if (auto it = m.find(name); it != m.end()) into = it->second;
    };
    take("early_dispatch", s.early_dispatch);
    take("parallel_tools", s.parallel_tools);
    take("kv_retain", s.kv_retain);
    take("spec_decode", s.spec_decode);
    take("jump_forward", s.jump_forward);
    take("speculative_tools", s.speculative_tools);
    take("call_drafts", s.call_drafts);
    take("constrain", s.constrain);
    take("grounding", s.grounding);
    return s;
}

result<journal::run_log> read_resumable(const std::filesystem::path& dir, const std::string& run_id,
                                        const std::vector<call_decision>& decisions) {
    if (run_id.empty() || run_id.find('/') != std::string::npos || run_id == "." || run_id == "..")
        return make_error(errc::invalid_argument, "run id '" + run_id + "': expected a run id (see `tachyon runs list`)");
    const std::filesystem::path path = dir / (run_id + ".jsonl");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        return make_error(errc::not_found, "run '" + run_id + "': no journal " + path.string());
    auto log = journal::read_journal(path);
    if (!log) return log.err();
    if (auto st = check_resumable(*log, run_id, decisions); !st) return st.err();
    return log;
}

status check_resumable(const journal::run_log& log, const std::string& run_id, const std::vector<call_decision>& decisions) {
    if (log.start() == nullptr)
        return make_error(errc::invalid_argument, "run '" + run_id + "': its journal has no run_start; nothing to resume from");
    const std::string state = log.state();
    auto parsed = journal::parse_run_state(state);
    if (state != "interrupted" && !(parsed && journal::is_parked(*parsed)))
        return make_error(errc::invalid_argument, "run '" + run_id + "' ended (" + state +
                                                      "); only an interrupted run or one in needs_attention or awaiting_approval can be resumed");
    const auto pending = log.pending();
    std::string pending_list;
    for (const auto& p : pending) pending_list += (pending_list.empty() ? "" : ", ") + p.call_id + " (" + p.reason + ")";
    for (const auto& d : decisions) {
        auto it = std::find_if(pending.begin(), pending.end(), [&](const auto& p) { return p.call_id == d.call_id; });
        if (it == pending.end() || state == "interrupted")
            return make_error(errc::invalid_argument, "call_id '" + d.call_id + "': run '" + run_id + "' is not waiting for a decision on it (" +
                                                          (pending_list.empty() ? std::string("it waits for none") : "waiting: " + pending_list) + ")");
        const bool approval = it->reason == "approval";
        const bool fits = approval ? (d.action == "approve" || d.action == "reject") : (d.action == "retry" || d.action == "skip");
        if (!fits)
            return make_error(errc::invalid_argument, "action '" + d.action + "' for call " + d.call_id + ": expected " +
                                                          (approval ? "approve or reject (it awaits approval)" : "retry or skip (it needs attention)"));
    }
    return {};
}

result<run_request> resume_request(journal::run_log log, std::vector<call_decision> decisions) {
    const journal::run_start_event* start = log.start();
    if (start == nullptr) return make_error(errc::invalid_argument, "journal '" + log.path.string() + "': no run_start; nothing to resume from");
    auto agent = load_agent_file(start->agent_file, builtin_tool_names());
    if (!agent) return make_error(agent.err().code, "resuming run '" + log.run_id() + "': " + agent.err().message);
    run_request req;
    req.task = start->task;
    req.inputs = start->inputs;
    req.switches = switches_from_map(start->switches);
    req.run_id = log.run_id();
    req.journal_dir = log.path.parent_path().string();
    req.agent = std::make_shared<agent_definition>(std::move(agent).value());
    req.decisions = std::move(decisions);
    req.resume = std::make_shared<run_replay>(std::move(log));
    return req;
}

}  // namespace tachyon
