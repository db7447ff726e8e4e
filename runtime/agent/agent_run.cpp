#include "runtime/agent/agent_run.h"

#include <simdjson.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <cmath>
#include <random>
#include <set>

#include "base/log.h"
#include "runtime/agent/agent_runner.h"
#include "runtime/common/async_flag.h"
#include "runtime/constrain/constraint.h"
#include "runtime/constrain/json_grammar.h"
#include "runtime/journal/journal.h"
#include "runtime/constrain/json_schema.h"
#include "runtime/constrain/schema_pattern.h"
#include "runtime/common/json_util.h"
#include "runtime/chat/tool_call_parser.h"
#include "runtime/agent/tool_catalog.h"

namespace tachyon {
namespace agent_detail {

status runner::setup() {
    agent_ = req_.agent.get();
    const agent_definition& a = *agent_;
    auto made = make_agent_tools(a, req_.inputs, req_.custom_tools);
    if (!made) return made.err();
    tools_ = std::move(made).value();
    for (const auto& t : tools_) {
        auto schema = json_schema::parse(t->parameters_schema(), std::string(t->name()), "argument");
        if (!schema) return make_error(errc::internal, "tool " + std::string(t->name()) + " declares a bad schema: " + schema.err().message);
        tool_by_name_.emplace(std::string(t->name()), std::make_pair(t, std::make_shared<const json_schema>(std::move(schema).value())));
    }
    for (const auto& check : a.verify) {
        // A tool defined in code (SDK) verifies as it is; built-ins are made from the check's settings.
        auto custom = std::find_if(req_.custom_tools.begin(), req_.custom_tools.end(), [&](const auto& t) { return t->name() == check.tool; });
        if (custom != req_.custom_tools.end()) {
            verify_tools_.emplace_back(*custom, &check);
            continue;
        }
        tool_request r{check.tool, {}};
        for (const auto& [k, v] : check.settings) {
            auto filled = fill_placeholders(v, req_.inputs, a.file + ": verify." + check.tool + ".settings." + k);
            if (!filled) return filled.err();
            r.settings[k] = *filled;
        }
        auto vt = make_builtin_tools({r});
        if (!vt) return vt.err();
        verify_tools_.emplace_back(vt->front(), &check);
    }
    if (!a.output_schema.empty()) {
        auto s = json_schema::parse(a.output_schema, "final answer", "field");
        if (!s) return make_error(errc::invalid_argument, a.file + ": output_schema: " + s.err().message);
        output_schema_ = std::make_shared<const json_schema>(std::move(s).value());
    }
    if (!output_schema_) {
        // Without an output schema the agent answers in prose: no field to copy.
        for (size_t i = 0; i < a.verify.size(); ++i)
            for (const auto& [name, source] : a.verify[i].arguments)
                if (source.rfind("$.", 0) == 0)
                    return make_error(errc::invalid_argument,
                                      a.file + ": verify.checks[" + std::to_string(i) + "].arguments." + name + ": '" + source +
                                          "' reads a field of the answer, but the agent has no output_schema (it answers in prose); "
                                          "expected an output_schema, or fixed arguments");
    }
    return {};
}

void runner::record(journal::event_body body) {
    if (ended_) return;
    journal::event e;
    if (journal_) {
        auto written = journal_->append(body);
        if (written) {
            e = std::move(written).value();
        } else {
            // The run goes on; the gap shows as a missing seq to the reader.
            TACHYON_LOG(warn, __func__ << ": " << written.err().message);
            e.seq = journal_->n_events();
            e.t_ms = now_ms();
            e.body = std::move(body);
        }
    } else {
        e.seq = n_events_;
        e.t_ms = now_ms();
        e.body = std::move(body);
    }
    n_events_ = e.seq + 1;
    if (env_.observer) env_.observer->on_event(e);
}

void runner::record_rejected_call(int index, std::string name, std::string arguments, std::string error) {
    journal::call_rejected_event e;
    e.step = turn_step_;
    e.call_id = "call_" + std::to_string(turn_step_) + "_" + std::to_string(index);
    e.name = std::move(name);
    e.arguments_json = std::move(arguments);
    e.error = std::move(error);
    record(std::move(e));
}

// A failing check's words: those about the data (a line, a service the
// model should look at) become groundable; the model's own words it quotes
// back from the rejected answer do not, nor do the lines that quote them
// (for "x-grounded-with" pairs).
void runner::ground_check_text(const std::string& text, const std::string& answer) {
    const std::vector<std::string> quoted = identifiers_in(answer);
    const std::set<std::string> theirs(quoted.begin(), quoted.end());
    for (auto& id : identifiers_in(text))
        if (!theirs.count(id)) grounded_.insert(std::move(id));
    std::string kept;
    for (std::string_view rest = text; !rest.empty();) {
        const size_t nl = rest.find('\n');
        const std::string_view line = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
        const auto ids = identifiers_in(line);
        if (std::none_of(ids.begin(), ids.end(), [&](const std::string& id) { return theirs.count(id) > 0; }))
            kept.append(line).push_back('\n');
    }
    if (!kept.empty()) grounding_texts_.push_back(std::move(kept));
}

void runner::journal_turn(const run_turn& t) { record(journal_event(t)); }


void runner::handle_events() {
    for (auto& ev : events_) {
        switch (ev.type) {
            case tool_call_event::kind::text: break;
            case tool_call_event::kind::call_error:
                ++turn_call_errors_;
                turn_errors_.emplace_back(ev.index, ev.message);
                record_rejected_call(ev.index, ev.name, {}, ev.message);
                break;
            case tool_call_event::kind::call_complete: {
                ++turn_calls_;
                auto it = tool_by_name_.find(ev.name);
                if (it == tool_by_name_.end()) {
                    std::string known;
                    for (const auto& t : tools_) known += (known.empty() ? "" : ", ") + std::string(t->name());
                    turn_errors_.emplace_back(ev.index, "unknown tool '" + ev.name + "' (available: " + known + ")");
                    record_rejected_call(ev.index, ev.name, ev.arguments_json, turn_errors_.back().second);
                    break;
                }
                const grounded_values gv = grounding();
                auto valid = it->second.second->validate(ev.arguments_json, req_.switches.grounding ? &gv : nullptr);
                if (!valid) {
                    turn_errors_.emplace_back(ev.index, valid.err().message);
                    record_rejected_call(ev.index, ev.name, ev.arguments_json, valid.err().message);
                    break;
                }
                if (auto spec = take_speculative(ev.name, ev.arguments_json, ev.index)) {
                    // Predicted and already running (or done): the model's call uses it.
                    turn_slots_.push_back(spec);
                    break;
                }
                auto slot = make_call(turn_step_, ev.index, ev.name, ev.arguments_json, req_.switches.early_dispatch);
                turn_slots_.push_back(slot);
                if (req_.switches.early_dispatch && req_.switches.parallel_tools) start_call(slot);
                break;
            }
        }
    }
    events_.clear();
}

void runner::on_token(int32_t token, run_turn& turn) {
    if (turn.generated_tokens == 0) turn.first_token_ms = now_ms();
    ++turn.generated_tokens;
    all_tokens_.push_back(token);
    if (std::find(env_.host->end_of_turn().begin(), env_.host->end_of_turn().end(), token) != env_.host->end_of_turn().end()) return;
    std::string piece = detok_->push(token);
    if (piece.empty()) return;
    turn_text_ += piece;
    if (env_.observer) env_.observer->on_text(piece);
    parser_.feed(piece, events_);
    handle_events();
}

// The values grounded fields may take now: every identifier seen in the run,
// narrowed per field by a pattern where the agent gives one (tool
// "grounding") or the answer schema does ("pattern" on an x-grounded field).
grounded_values runner::grounding() const {
    grounded_values g;
    g.all.assign(grounded_.begin(), grounded_.end());
    g.texts = grounding_texts_;
    auto narrow = [&](const std::string& path, const schema_pattern& pattern) {
        auto& list = g.by_path[path];
        for (const auto& v : grounded_)
            if (pattern.search(v)) list.push_back(v);
    };
    for (const auto& t : agent_->tools) {
        for (const auto& [path, source] : t.grounding) {
            if (auto p = schema_pattern::compile(source)) narrow(path, *p);
        }
    }
    if (output_schema_) {
        const schema_node& root = output_schema_->root();
        for (const auto& [name, index] : root.properties) {
            const schema_node& n = output_schema_->node(index);
            if (n.grounded && n.pattern) narrow(name, *n.pattern);
            if (n.items >= 0) {
                const schema_node& item = output_schema_->node(n.items);
                if (item.grounded && item.pattern) narrow(name + "[]", *item.pattern);
            }
        }
    }
    return g;
}

// The grammar of this turn: the tools' argument schemas and the answer
// schema, with grounded values restricted to what the run has seen so far.
result<std::shared_ptr<turn_constraint>> runner::make_constraint() {
    std::vector<grammar_tool> tools;
    for (const auto& t : tools_) tools.push_back({std::string(t->name()), tool_by_name_.at(std::string(t->name())).second});
    auto grammar = json_grammar::build(std::move(tools), output_schema_, req_.switches.grounding ? grounding() : grounded_values{});
    if (!grammar) return grammar.err();
    return std::make_shared<turn_constraint>(env_.host->index(), std::move(grammar).value());
}

asio::awaitable<request_stats> runner::generate(std::vector<int32_t> append, int max_tokens, run_turn& turn) {
    struct shared {
        explicit shared(const asio::any_io_executor& ex) : done(ex) {}
        async_flag done;
        request_stats stats;
        std::atomic<bool> stop{false};
    };
    auto st = std::make_shared<shared>(ex_);
    request r;
    r.session = session_;
    r.append = std::move(append);
    r.max_tokens = max_tokens;
    r.sampling = agent_->sampling;
    r.stop_tokens = env_.host->end_of_turn();
    if (constraint_) r.constrain = [c = constraint_](std::span<const int32_t> generated, std::span<uint8_t> allowed) {
        c->as_mask_callback()(generated, allowed);
    };
    if (req_.switches.spec_decode) r.n_draft = 8;
    if (constraint_ && req_.switches.jump_forward) {
        // Jump-forward: where the grammar allows one continuation only (keys,
        // punctuation, the rest of a grounded value), its tokens are drafted
        // and verified in one forward instead of decoded one by one.
        r.propose = forced_text_drafts(constraint_, [host = env_.host](std::string_view text) { return host->encode_plain(text); });
    }
    auto ex = ex_;
    r.on_token = [this, self = shared_from_this(), st, ex, &turn](int32_t t) {
        asio::post(ex, [this, self, t, &turn] { on_token(t, turn); });
        return !st->stop.load(std::memory_order_relaxed);
    };
    r.on_done = [st, ex](const request_stats& s) {
        asio::post(ex, [st, s] {
            st->stats = s;
            st->done.set();
        });
    };
    current_request_ = env_.host->eng().submit(std::move(r));
    co_await st->done.wait();
    current_request_ = 0;
    co_return st->stats;
}

// The tokens that continue the session after a turn: the rendered
// conversation with `new_messages` appended, minus what is already in the KV.
result<std::vector<int32_t>> runner::next_turn_tokens(const std::string& turn_text, int32_t end_token,
                                                      const std::vector<chat_message>& new_messages, bool& rewound) {
    messages_.push_back({"assistant", turn_text});
    for (const auto& m : new_messages) messages_.push_back(m);
    auto full = render_chat(env_.host->format(), messages_, render_options_);
    if (!full) return full.err();
    const std::string end_text = end_token >= 0 ? env_.host->tok().token_text(end_token) : std::string();
    const std::string expected = rendered_ + turn_text + end_text;
    std::vector<int32_t> tokens;
    rewound = false;
    if (end_token >= 0 && full->compare(0, expected.size(), expected) == 0) {
        // The generated turn is already in the KV as generated: append the rest.
        tokens = env_.host->encode_scaffold(std::string_view(*full).substr(expected.size()));
        n_prompt_tokens_ = static_cast<int>(all_tokens_.size());
    } else {
        // The turn ended without its end marker (budget) or renders differently:
        // rewind to the turn's start and re-prefill it as the template writes it.
        rewound = true;
        env_.host->eng().truncate_session(session_, n_prompt_tokens_);
        all_tokens_.resize(static_cast<size_t>(n_prompt_tokens_));
        tokens = env_.host->encode_scaffold(std::string_view(*full).substr(rendered_.size()));
    }
    rendered_ = std::move(full).value();
    all_tokens_.insert(all_tokens_.end(), tokens.begin(), tokens.end());
    n_prompt_tokens_ = static_cast<int>(all_tokens_.size());
    return tokens;
}

asio::awaitable<runner::verdict> runner::verify(const std::string& answer) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    // A prose answer has no fields (setup() refused "$." arguments for it).
    if (output_schema_ && parser.parse(simdjson::padded_string(answer)).get(doc))
        co_return verdict{false, "final answer: not valid JSON", {}};
    for (auto& [tool, check] : verify_tools_) {
        std::string args = "{";
        bool first = true;
        for (const auto& [name, source] : check->arguments) {
            std::string value = source;
            if (source.rfind("$.", 0) == 0) {
                simdjson::dom::element field;
                if (!output_schema_ || doc.at_key(source.substr(2)).get(field)) {
                    co_return verdict{false, "final answer: missing field '" + source.substr(2) + "'", {}};
                }
                value = simdjson::minify(field);
            }
            args += (first ? "" : ",") + json::quote(name) + ":" + value;
            first = false;
        }
        args += "}";
        auto slot = make_call(0, 0, check->tool, args, false);
        slot->tool = tool;
        slot->rec.call_id = "verify_" + std::to_string(out_.verify_attempts);
        start_call(slot);
        co_await slot->done.wait();
        const bool ok = slot->rec.ok && slot->rec.result.rfind("verified", 0) == 0;
        journal::verify_event e;
        e.attempt = out_.verify_attempts;
        e.check = check->tool;
        e.ok = ok;
        e.message = slot->rec.result;
        record(std::move(e));
        if (env_.observer) env_.observer->on_verify(out_.verify_attempts, ok, slot->rec.result);
        if (!ok) co_return verdict{false, check->tool + ": " + slot->rec.result, slot->rec.ok ? slot->rec.result : std::string()};
    }
    co_return verdict{true, {}, {}};
}

void runner::finish(run_outcome& out, std::string state, std::string error) {
    // No call outlives the run: one still running (a call dispatched from the
    // last tokens of a cancelled turn, a prediction) is cut off and recorded
    // now, before run_end, and a result that comes back later is dropped.
    // A call the model wrote that never started (tools start after the turn
    // and the run stopped first) is journaled as one that never ran.
    for (const auto& slot : turn_slots_) {
        if (slot->rec.start_ms != 0 || slot->finished) continue;
        slot->finished = true;
        const int index = std::stoi(slot->rec.call_id.substr(slot->rec.call_id.rfind('_') + 1));
        record_rejected_call(index, slot->rec.name, slot->rec.arguments, "not run: the run stopped (" + (error.empty() ? state : error) + ")");
        slot->done.set();
    }
    stop_work();
    out.state = std::move(state);
    out.error = std::move(error);
    out.total_ms = now_ms();
    for (const auto& t : out.turns) out.model_ms += t.end_ms - t.start_ms;
    for (const auto& c : out.calls) out.tool_ms += c.end_ms - c.start_ms;
    {
        journal::final_event f;
        f.answer_json = out.answer.empty() ? "null" : out.answer;
        f.verified = out.verified;
        f.steps = out.steps;
        f.time_to_answer_ms = out.time_to_answer_ms;
        f.model_ms = out.model_ms;
        f.tool_ms = out.tool_ms;
        f.overlap_saved_ms = out.overlap_saved_ms;
        record(std::move(f));
        journal::run_end_event e;
        auto parsed = journal::parse_run_state(out.state);
        e.state = parsed ? *parsed : journal::run_state::failed;
        e.error = out.error;
        record(std::move(e));
    }
    ended_ = true;
    if (session_ != 0) env_.host->eng().close_session(session_);
}

asio::awaitable<run_outcome> runner::run() {
    run_outcome& out = out_;
    agent_ = req_.agent.get();
    const agent_definition& a = *agent_;
    // The journal first: a run that cannot start is recorded too.
    if (!req_.journal_dir.empty()) {
        auto w = journal::writer::create(req_.journal_dir, req_.run_id);
        if (!w) {
            finish(out, "failed", w.err().message);
            co_return out;
        }
        journal_.emplace(std::move(w).value());
        t0_ = journal_->start();
        out.run_id = journal_->run_id();
        out.journal_path = journal_->path().string();
    } else {
        out.run_id = req_.run_id.empty() ? journal::make_run_id() : req_.run_id;
    }
    {
        journal::run_start_event e;
        e.run_id = out.run_id;
        e.agent = a.name;
        e.agent_file = a.file;
        e.model = a.model;
        e.inputs = req_.inputs;
        e.task = req_.task;
        e.started_at = journal::iso_utc(std::chrono::system_clock::now());
        record(std::move(e));
    }
    if (auto st = setup(); !st) {
        finish(out, "failed", st.err().message);
        co_return out;
    }

    deadline_.expires_after(std::chrono::milliseconds(a.budgets.deadline_ms));
    deadline_.async_wait([this, self = shared_from_this()](boost::system::error_code ec) {
        if (ec) return;
        deadline_hit_ = true;
        stop_work();
    });
    watch_cancel();
    struct timers_guard {
        runner& r;
        ~timers_guard() {
            r.done_ = true;
            r.deadline_.cancel();
            r.watch_.cancel();
        }
    } guard{*this};

    auto prompt = render_initial_prompt(a, *env_.host, req_.inputs, req_.task, req_.custom_tools);
    if (!prompt) {
        finish(out, "failed", prompt.err().message);
        co_return out;
    }
    rendered_ = *prompt;
    render_options_.tools = tool_definitions(tools_);
    ground(req_.task);
    prev_text_ = req_.task;
    auto system = fill_placeholders(a.instructions, req_.inputs, a.file + ": instructions");
    messages_.push_back({"system", *system});
    messages_.push_back({"user", req_.task});
    {
        const tokenizer& tok = env_.host->tok();
        if (tok.get_vocab().add_bos && tok.bos() != no_token) all_tokens_.push_back(tok.bos());
        auto body = env_.host->encode_scaffold(rendered_);
        all_tokens_.insert(all_tokens_.end(), body.begin(), body.end());
    }
    n_prompt_tokens_ = static_cast<int>(all_tokens_.size());
    std::vector<int32_t> append = all_tokens_;
    session_ = env_.host->eng().create_session();

    for (int step = 1;; ++step) {
        if (stopping()) {
            finish(out, deadline_hit_ ? "budget_exhausted" : "cancelled", deadline_hit_ ? "deadline of " + std::to_string(a.budgets.deadline_ms) + " ms passed" : "cancelled");
            co_return out;
        }
        if (step > a.budgets.max_steps) {
            finish(out, "budget_exhausted", "max_steps (" + std::to_string(a.budgets.max_steps) + ") reached without a verified answer");
            co_return out;
        }
        const int remaining = a.budgets.max_tokens - generated_total_;
        if (remaining <= 0) {
            finish(out, "budget_exhausted", "max_tokens (" + std::to_string(a.budgets.max_tokens) + ") spent without a verified answer");
            co_return out;
        }
        if (!req_.switches.kv_retain) {
            // Stateless baseline: forget the KV and prefill the whole conversation again.
            env_.host->eng().truncate_session(session_, 0);
            append.assign(all_tokens_.begin(), all_tokens_.begin() + n_prompt_tokens_);
        }
        run_turn turn;
        turn.step = step;
        turn.start_ms = now_ms();
        turn.prefill_tokens = static_cast<int>(append.size());
        turn.reused_tokens = n_prompt_tokens_ - static_cast<int>(append.size());
        turn_step_ = step;
        turn_text_.clear();
        turn_calls_ = 0;
        turn_call_errors_ = 0;
        turn_slots_.clear();
        turn_errors_.clear();
        detok_.emplace(env_.host->tok(), decode_options{.render_special = true, .strip_leading_space = false});
        record(journal::turn_start_event{step});
        if (env_.observer) env_.observer->on_turn_start(step);

        constraint_.reset();
        if (req_.switches.constrain) {
            auto c = make_constraint();
            if (!c) {
                finish(out, "failed", "constraint: " + c.err().message);
                co_return out;
            }
            constraint_ = std::move(c).value();
        }
        start_speculative_calls(step);
        auto stats = co_await generate(std::move(append), remaining, turn);
        turn.end_ms = now_ms();
        turn_decode_end_ms_ = turn.end_ms;
        if (turn.generated_tokens == 0) turn.first_token_ms = turn.end_ms;
        std::string tail = detok_->flush();
        if (!tail.empty()) {
            turn_text_ += tail;
            parser_.feed(tail, events_);
        }
        parser_.finish(events_);
        handle_events();
        discard_speculative();
        turn.text = turn_text_;
        // What the engine really computed: the prefix cache may have supplied part of the append.
        turn.reused_tokens = std::max(0, turn.reused_tokens + turn.prefill_tokens - stats.n_prefilled);
        turn.prefill_tokens = stats.n_prefilled;
        generated_total_ += stats.n_generated;
        out.n_tool_calls += turn_calls_ + turn_call_errors_;
        out.n_bad_calls += static_cast<int>(turn_errors_.size());
        out.prefill_tokens += stats.n_prefilled;
        out.reused_tokens += turn.reused_tokens;
        out.generated_tokens += stats.n_generated;
        out.drafted_tokens += stats.n_drafted;
        out.draft_accepted_tokens += stats.n_draft_accepted;
        out.steps = step;
        out.turns.push_back(turn);
        journal_turn(turn);
        if (env_.observer) env_.observer->on_turn_end(turn);
        if (stats.finish == finish_reason::error) {
            finish(out, "failed", "engine: " + stats.error);
            co_return out;
        }
        if (stopping()) continue;  // reported at the top of the loop
        const int32_t end_token = stats.finish == finish_reason::stop && !all_tokens_.empty() &&
                                          std::find(env_.host->end_of_turn().begin(), env_.host->end_of_turn().end(), all_tokens_.back()) !=
                                              env_.host->end_of_turn().end()
                                      ? all_tokens_.back()
                                      : -1;

        std::vector<chat_message> feedback;
        if (turn_calls_ + turn_call_errors_ > 0) {
            // Calls not yet started (early dispatch off, or sequential tools) start now.
            for (const auto& slot : turn_slots_) {
                if (slot->rec.start_ms == 0 && !slot->finished) {
                    start_call(slot);
                    if (!req_.switches.parallel_tools) co_await slot->done.wait();
                }
            }
            const double wait_start = now_ms();
            co_await await_calls(turn_slots_);
            out.tool_wait_ms += now_ms() - wait_start;
            for (const auto& slot : turn_slots_) {
                if (slot->rec.start_ms < turn_decode_end_ms_)
                    out.overlap_saved_ms += std::min(slot->rec.end_ms, turn_decode_end_ms_) - slot->rec.start_ms;
            }
            // Results in call order; errors (malformed calls, bad arguments) are results too.
            struct reply {
                std::string text;
                std::string call_id;
                const char* source = nullptr;  // the feedback's source; null: a tool's own result
            };
            std::map<int, reply> by_index;
            for (const auto& slot : turn_slots_) {
                const int index = std::stoi(slot->rec.call_id.substr(slot->rec.call_id.rfind('_') + 1));
                by_index[index] = {slot->rec.result, slot->rec.call_id, slot->rec.ok ? nullptr : "tool"};
                if (slot->rec.ok) ground(slot->rec.result);
            }
            for (const auto& [index, message] : turn_errors_)
                by_index[index] = {"error: " + message, "call_" + std::to_string(step) + "_" + std::to_string(index), "call"};
            for (const auto& [index, r] : by_index) {
                if (r.source) record(journal::feedback_event{step, r.call_id, r.source, r.text});
                feedback.push_back({"tool", r.text});
            }
            // What this turn teaches the predictor, and what the next prediction starts from.
            std::string kind, results;
            for (const auto& slot : turn_slots_) {
                auto args = json::minify(slot->rec.arguments, "call");
                if (env_.predictor && args) {
                    env_.predictor->learn(prev_kind_, prev_text_, slot->rec.name, *args);
                    if (!back_kind_.empty())
                        env_.predictor->learn(call_predictor::two_ahead(back_kind_), back_text_, slot->rec.name, *args);
                }
                kind += (kind.empty() ? "" : "+") + slot->rec.name;
            }
            for (const auto& [index, r] : by_index) results += r.text + "\n";
            back_kind_ = std::move(prev_kind_);
            back_text_ = std::move(prev_text_);
            prev_kind_ = kind.empty() ? "<errors>" : kind;
            prev_text_ = std::move(results);
        } else {
            // A final answer. With an output schema: one JSON object valid
            // for it; without one the agent answers in prose: the turn's
            // text, whatever it is. Then the verify checks, if any.
            std::string answer = turn_text_;
            while (!answer.empty() && std::isspace(static_cast<unsigned char>(answer.back()))) answer.pop_back();
            while (!answer.empty() && std::isspace(static_cast<unsigned char>(answer.front()))) answer.erase(answer.begin());
            std::string problem;
            std::string accepted;  // the answer as one JSON value
            if (output_schema_) {
                auto minified = json::minify(answer, "final answer");
                if (!minified || answer.empty() || answer.front() != '{') {
                    problem = "final answer: expected one JSON object";
                } else if (auto valid = output_schema_->validate(answer); !valid) {
                    problem = valid.err().message;
                } else {
                    accepted = *minified;
                }
            } else if (answer.empty()) {
                problem = "final answer: empty; expected the answer as text, or a tool call";
            } else {
                accepted = json::quote(answer);
            }
            if (problem.empty()) {
                out.answer = accepted;
                const double wait_start = now_ms();
                verdict v = co_await verify(answer);
                out.tool_wait_ms += now_ms() - wait_start;
                ++out.verify_attempts;
                if (v.ok) {
                    out.verified = !verify_tools_.empty();  // only a check that ran can vouch for it
                    out.time_to_answer_ms = now_ms();
                    finish(out, "succeeded");
                    co_return out;
                }
                problem = v.message;
                // A check's result is a tool result, but it may quote the
                // rejected answer: only its own words become groundable.
                if (!v.check_text.empty()) ground_check_text(v.check_text, answer);
            }
            // The runtime's own words (schema errors) are never grounded: they quote the model.
            record(journal::answer_rejected_event{step, n_rejected_answers_++, answer, problem});
            back_kind_ = std::move(prev_kind_);
            back_text_ = std::move(prev_text_);
            prev_kind_ = "<verify>";
            prev_text_ = problem;
            if (out.verify_attempts > a.max_verify_retries || (problem.rfind("final answer", 0) == 0 && step >= a.budgets.max_steps)) {
                out.time_to_answer_ms = now_ms();
                finish(out, "failed", "the answer did not pass verification: " + problem);
                co_return out;
            }
            record(journal::feedback_event{step, {}, "answer", problem});
            feedback.push_back({"tool", problem});
        }
        bool rewound = false;
        auto next = next_turn_tokens(turn_text_, end_token, feedback, rewound);
        if (!next) {
            finish(out, "failed", next.err().message);
            co_return out;
        }
        append = std::move(next).value();
        if (rewound) TACHYON_LOG(debug, "run " << out.run_id << ": turn " << step << " re-prefilled as the template renders it");
    }
}

}  // namespace agent_detail

journal::model_turn_event journal_event(const run_turn& t) {
    journal::model_turn_event e;
    e.step = t.step;
    e.prefill_tokens = t.prefill_tokens;
    e.reused_tokens = t.reused_tokens;
    e.generated_tokens = t.generated_tokens;
    e.prefill_start_ms = t.start_ms;
    e.prefill_end_ms = t.first_token_ms;
    e.decode_end_ms = t.end_ms;
    e.text = t.text;
    return e;
}

journal::tool_call_event journal_event(const run_tool_call& c) {
    journal::tool_call_event e;
    e.step = c.step;
    e.call_id = c.call_id;
    e.name = c.name;
    e.arguments_json = c.arguments;
    e.start_ms = c.start_ms;
    e.end_ms = c.end_ms;
    e.ok = c.ok;
    e.result = c.ok ? c.result : std::string();
    e.error = c.ok ? std::string() : c.result;
    e.early = c.early;
    e.speculative = c.speculative;
    return e;
}

boost::asio::awaitable<run_outcome> run_agent(run_environment env, run_request request) {
    auto ex = co_await boost::asio::this_coro::executor;
    auto r = std::make_shared<agent_detail::runner>(std::move(env), std::move(request), ex);
    try {
        co_return co_await r->run();
    } catch (const std::exception& e) {
        run_outcome out;
        out.state = "failed";
        out.error = std::string("internal error: ") + e.what();
        TACHYON_LOG(error, __func__ << ": " << out.error);
        co_return out;
    }
}

}  // namespace tachyon
