// One turn of the agent loop: the prompt it starts from, streaming
// generation with tool calls dispatched the moment they are complete, the
// wait for the turn's tools, and their results appended as the next turn's
// input. Part of the runner of agent_runner.h.
#include "runtime/agent/agent_runner.h"

#include <algorithm>
#include <boost/asio/post.hpp>

#include "base/log.h"
#include "runtime/prediction/call_drafts.h"
#include "runtime/agent/tool_catalog.h"
#include "runtime/common/async_flag.h"
#include "runtime/common/json_util.h"
#include "runtime/constrain/constraint.h"
#include "runtime/constrain/json_grammar.h"
#include "runtime/constrain/json_schema.h"
#include "runtime/constrain/schema_pattern.h"
#include "runtime/formats/tool_call_parser.h"

namespace tachyon::agent_detail {

// Tokens of predicted-call text drafted at once. Verifying a draft costs its
// tokens' compute whether or not the model keeps them, and a wrong argument
// value loses the rest of the call.
constexpr size_t max_call_draft = 16;

// The system prompt, the task and the tools, rendered and tokenized, and the
// session they are prefilled into: the first turn's input.
result<std::vector<int32_t>> runner::render_prompt() {
    const agent_definition& a = *agent_;
    if (env_.remote) {
        if (auto st = render_remote_prompt(); !st) return st.err();
        return std::vector<int32_t>{};
    }
    auto prompt = render_initial_prompt(a, *env_.host, req_.inputs, req_.task, req_.custom_tools, env_.mcp.get());
    if (!prompt) return prompt.err();
    rendered_ = *prompt;
    render_options_.tools = tool_definitions(tools_);
    parser_ = tool_call_parser(family_of(env_.host->format()).syntax);  // calls in the model family's syntax
    ground(req_.task);
    prev_text_ = req_.task;
    auto system = fill_placeholders(a.instructions, req_.inputs, a.file + ": instructions");
    if (!system) return system.err();
    messages_.push_back({"system", *system});
    messages_.push_back({"user", req_.task});
    const tokenizer& tok = env_.host->tok();
    if (tok.get_vocab().add_bos && tok.bos() != no_token) all_tokens_.push_back(tok.bos());
    auto body = env_.host->encode_scaffold(rendered_);
    all_tokens_.insert(all_tokens_.end(), body.begin(), body.end());
    n_prompt_tokens_ = static_cast<int>(all_tokens_.size());
    session_ = env_.host->eng().create_session();
    return all_tokens_;
}

// One model turn: prefill `append` (the whole conversation again without
// kv_retain), decode under the turn's constraint with predicted calls
// running, and dispatch each call as the parser completes it (on_token).
// Records the turn. Returns the end-of-turn token that closed it (-1: none,
// the turn was cut off), or the error that ends the run.
asio::awaitable<result<int32_t>> runner::generate_turn(int step, std::vector<int32_t> append) {
    // A resumed run's turn the journal holds whole is replayed, not generated.
    const journal::model_turn_event* recorded = replay_ ? replay_->turn(step) : nullptr;
    if (!recorded && !env_.remote && (!req_.switches.kv_retain || kv_behind_)) {
        // Stateless baseline, or the first new turn after replayed ones:
        // prefill the whole conversation (the prefix cache may hold some).
        env_.host->eng().truncate_session(session_, 0);
        append.assign(all_tokens_.begin(), all_tokens_.begin() + n_prompt_tokens_);
        kv_behind_ = false;
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
    turn_model_ids_.clear();
    turn_lead_text_.clear();
    turn_structured_calls_.clear();
    if (!env_.remote) detok_.emplace(env_.host->tok(), decode_options{.render_special = true, .strip_leading_space = false});
    record(journal::turn_start_event{step});
    if (env_.observer && !recorded) env_.observer->on_turn_start(step);

    constraint_.reset();
    if (req_.switches.constrain && !recorded && !env_.remote) {  // a remote server constrains on its side
        auto c = make_constraint();
        if (!c) co_return make_error(c.err().code, "constraint: " + c.err().message);
        constraint_ = std::move(c).value();
    }
    const size_t first_generated = all_tokens_.size();
    request_stats stats;
    if (recorded) {
        stats = replay_turn(*recorded, turn);
    } else {
        start_speculative_calls(step);
        const int max_tokens = agent_->budgets.max_tokens - generated_total_;
        // Two statements: GCC 12 miscompiles co_await in both arms of a conditional.
        if (env_.remote) stats = co_await generate_remote(max_tokens, turn);
        else stats = co_await generate(std::move(append), max_tokens, turn);
    }
    turn.tokens.assign(all_tokens_.begin() + static_cast<std::ptrdiff_t>(first_generated), all_tokens_.end());
    turn.end_ms = now_ms();
    turn_decode_end_ms_ = turn.end_ms;
    if (turn.generated_tokens == 0) turn.first_token_ms = turn.end_ms;
    std::string tail = detok_ ? detok_->flush() : std::string();
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
    if (recorded) {
        // As it happened the first time.
        turn.replayed = true;
        turn.reused_tokens = static_cast<int>(recorded->reused_tokens);
        turn.start_ms = recorded->prefill_start_ms;
        turn.first_token_ms = recorded->prefill_end_ms;
        turn.end_ms = recorded->decode_end_ms;
    }
    generated_total_ += stats.n_generated;
    out_.n_tool_calls += turn_calls_ + turn_call_errors_;
    out_.n_bad_calls += static_cast<int>(turn_errors_.size());
    out_.prefill_tokens += stats.n_prefilled;
    out_.reused_tokens += turn.reused_tokens;
    out_.generated_tokens += stats.n_generated;
    out_.drafted_tokens += stats.n_drafted;
    out_.draft_accepted_tokens += stats.n_draft_accepted;
    out_.steps = step;
    out_.turns.push_back(turn);
    journal_turn(turn);
    if (env_.observer && !recorded) env_.observer->on_turn_end(turn);
    if (stats.finish == finish_reason::error) co_return make_error(errc::internal, (env_.remote ? "" : "engine: ") + stats.error);
    if (env_.remote) co_return stats.finish == finish_reason::stop ? 0 : -1;
    const auto& eot = env_.host->end_of_turn();
    const bool ended = stats.finish == finish_reason::stop && !all_tokens_.empty() &&
                       std::find(eot.begin(), eot.end(), all_tokens_.back()) != eot.end();
    co_return ended ? all_tokens_.back() : -1;
}

// Starts the turn's calls that have not started (early dispatch off: all of
// them, one after the other without parallel_tools) and waits for every
// call of the turn; most have finished under decoding already. Counts the
// wait and the tool time hidden under decoding.
asio::awaitable<void> runner::await_tools() {
    for (const auto& slot : turn_slots_) {
        if (slot->rec.start_ms == 0 && !slot->finished) {
            start_call(slot);
            if (!req_.switches.parallel_tools) co_await slot->done.wait();
        }
    }
    const double wait_start = now_ms();
    co_await await_calls(turn_slots_);
    out_.tool_wait_ms += now_ms() - wait_start;
    for (const auto& slot : turn_slots_) {
        if (slot->rec.start_ms < turn_decode_end_ms_)
            out_.overlap_saved_ms += std::min(slot->rec.end_ms, turn_decode_end_ms_) - slot->rec.start_ms;
    }
}

// The turn's results as tool messages in call order (errors of malformed
// calls and bad arguments are results too), journaled; what they name
// becomes groundable, and the predictor learns the turn's calls.
std::vector<chat_message> runner::append_results(int step) {
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
        by_index[index] = {"error: " + message, call_id_of(step, index), "call"};
    std::vector<chat_message> feedback;
    for (const auto& [index, r] : by_index) {
        if (r.source) record(journal::feedback_event{step, r.call_id, r.source, r.text});
        chat_message result{"tool", r.text};
        const auto id = turn_model_ids_.find(index);
        result.tool_call_id = result_call_id(id != turn_model_ids_.end() ? id->second : std::string(), step, index);
        feedback.push_back(std::move(result));
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
    return feedback;
}

void runner::handle_events() {
    for (auto& ev : events_) {
        switch (ev.type) {
            case tool_call_event::kind::text:
                if (turn_calls_ + turn_call_errors_ == 0) turn_lead_text_ += ev.text;
                break;  // the turn's text is kept whole in turn_text_
            case tool_call_event::kind::reasoning: break;
            case tool_call_event::kind::call_error:
                ++turn_call_errors_;
                turn_errors_.emplace_back(ev.index, ev.message);
                record_rejected_call(call_id_of(turn_step_, ev.index), ev.name, {}, ev.message);
                break;
            case tool_call_event::kind::call_complete: {
                ++turn_calls_;
                if (!ev.id.empty()) turn_model_ids_[ev.index] = ev.id;
                turn_structured_calls_.push_back({result_call_id(ev.id, turn_step_, ev.index), ev.name, ev.arguments_json});
                auto it = tool_by_name_.find(ev.name);
                if (it == tool_by_name_.end()) {
                    std::string known;
                    for (const auto& t : tools_) known += (known.empty() ? "" : ", ") + std::string(t->name());
                    turn_errors_.emplace_back(ev.index, "unknown tool '" + ev.name + "' (available: " + known + ")");
                    record_rejected_call(call_id_of(turn_step_, ev.index), ev.name, ev.arguments_json, turn_errors_.back().second);
                    break;
                }
                const grounded_values gv = grounding();
                auto valid = it->second.second->validate(ev.arguments_json, req_.switches.grounding ? &gv : nullptr);
                if (!valid) {
                    turn_errors_.emplace_back(ev.index, valid.err().message);
                    record_rejected_call(call_id_of(turn_step_, ev.index), ev.name, ev.arguments_json, valid.err().message);
                    break;
                }
                if (auto spec = take_speculative(ev.name, ev.arguments_json, ev.index)) {
                    // Predicted and already running (or done): the model's call uses it.
                    turn_slots_.push_back(spec);
                    break;
                }
                // A call that needs approval is asked about once its turn has ended.
                const bool early = req_.switches.early_dispatch && !requires_approval(ev.name);
                auto slot = make_call(turn_step_, ev.index, ev.name, ev.arguments_json, early);
                turn_slots_.push_back(slot);
                if (early && req_.switches.parallel_tools) start_call(slot);
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
    on_text(detok_->push(token));
}

void runner::on_text(std::string_view piece) {
    if (piece.empty()) return;
    turn_text_ += piece;
    if (env_.observer && !replaying_) env_.observer->on_text(piece);
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
    auto grammar = json_grammar::build(std::move(tools), output_schema_, req_.switches.grounding ? grounding() : grounded_values{},
                                       family_of(env_.host->format()).syntax);
    if (!grammar) return grammar.err();
    return std::make_shared<turn_constraint>(env_.host->index(), std::move(grammar).value());
}

// A recorded turn of a resumed run: its tokens go through the stream
// handling as generated ones did (so the same calls are dispatched, served
// from their recorded results, and the same state is built), without the
// engine. The session's KV is behind from here: the next generated turn
// prefills the conversation.
request_stats runner::replay_turn(const journal::model_turn_event& recorded, run_turn& turn) {
    replaying_ = true;
    kv_behind_ = true;
    if (env_.remote) {
        // A remote turn has no tokens here: its text goes through the parser
        // (server-mode calls were journaled as <tool_call> blocks).
        on_text(recorded.text);
        turn.generated_tokens = static_cast<int>(recorded.generated_tokens);
    }
    for (int32_t t : recorded.tokens) on_token(t, turn);
    replaying_ = false;
    request_stats stats;
    stats.n_appended = static_cast<int>(recorded.prefill_tokens);
    stats.n_prefilled = static_cast<int>(recorded.prefill_tokens);
    stats.n_generated = static_cast<int>(recorded.generated_tokens);
    if (env_.remote || recorded.tokens.empty()) {
        stats.finish = finish_reason::stop;
        return stats;
    }
    const auto& eot = env_.host->end_of_turn();
    stats.finish = std::find(eot.begin(), eot.end(), recorded.tokens.back()) != eot.end() ? finish_reason::stop : finish_reason::length;
    return stats;
}

asio::awaitable<request_stats> runner::generate(std::vector<int32_t> append, int max_tokens, run_turn& turn) {
    struct shared {
        explicit shared(const asio::any_io_executor& ex) : ex(ex), done(ex) {}
        asio::any_io_executor ex;
        async_flag done;
        request_stats stats;
        std::atomic<bool> stop{false};
    };
    auto st = std::make_shared<shared>(ex_);
    request r;
    if (req_.forced_turns) {
        auto it = req_.forced_turns->find(turn.step);
        if (it == req_.forced_turns->end()) {
            st->stats.finish = finish_reason::error;
            st->stats.error = "replay: the recording has no turn " + std::to_string(turn.step);
            co_return st->stats;
        }
        r.forced = it->second;
    }
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
    if (req_.switches.call_drafts && !turn_predictions_.empty()) {
        auto texts = predicted_calls_texts(env_.host->format(), render_options_, turn_predictions_);
        text_codec codec{[host = env_.host](std::string_view text) { return host->encode_scaffold(text); },
                         [host = env_.host](std::span<const int32_t> tokens) {
                             return host->tok().decode(tokens, {.render_special = true, .strip_leading_space = false});
                         }};
        if (!texts.empty()) r.propose = predicted_call_drafts(std::move(texts), std::move(codec), std::move(r.propose), max_call_draft);
    }
    auto ex = ex_;
    r.on_token = [this, self = shared_from_this(), st, ex, &turn](int32_t t) {
        asio::post(ex, [this, self, t, &turn] { on_token(t, turn); });
        return !st->stop.load(std::memory_order_relaxed);
    };
    // The engine destroys this closure on its own thread right after the
    // call, maybe after the run ended and its event loop went: the shared
    // state (a timer of that loop) and its executor leave with the handler.
    r.on_done = [st](const request_stats& s) mutable {
        const asio::any_io_executor& where = st->ex;
        asio::post(where, [st = std::move(st), s] {
            st->stats = s;
            st->done.set();
        });
    };
    current_request_ = env_.host->eng().submit(std::move(r));
    co_await st->done.wait();
    current_request_ = 0;
    if (req_.forced_turns && st->stats.finish == finish_reason::error)
        st->stats.error = "replay diverged from the recording at turn " + std::to_string(turn.step) + ": " + st->stats.error;
    co_return st->stats;
}

// The tokens that continue the session after a turn: the rendered
// conversation with `new_messages` appended, minus what is already in the KV.
result<std::vector<int32_t>> runner::next_turn_tokens(int32_t end_token, const std::vector<chat_message>& new_messages) {
    if (env_.remote) {
        next_remote_messages(new_messages);
        return std::vector<int32_t>{};
    }
    const std::string& turn_text = turn_text_;
    chat_message reply{"assistant", turn_text};
    // Mistral's templates count an assistant turn without structured calls
    // as an answer (two in a row raise), and write a turn's calls themselves:
    // the turn goes back as its calls. Where the template writes them
    // otherwise than the model did, the turn is re-prefilled below.
    const tool_call_syntax syntax = family_of(env_.host->format()).syntax;
    const bool structured = syntax == tool_call_syntax::mistral || syntax == tool_call_syntax::mistral_named ||
                            syntax == tool_call_syntax::mistral_named_id;
    if (structured && !turn_structured_calls_.empty()) {
        reply.content = turn_lead_text_;
        reply.tool_calls = turn_structured_calls_;
    }
    messages_.push_back(std::move(reply));
    for (const auto& m : new_messages) messages_.push_back(m);
    auto full = render_chat(env_.host->format(), messages_, render_options_);
    if (!full) return full.err();
    const std::string end_text = end_token >= 0 ? env_.host->tok().token_text(end_token) : std::string();
    const std::string expected = rendered_ + turn_text + end_text;
    std::vector<int32_t> tokens;
    if (end_token >= 0 && full->compare(0, expected.size(), expected) == 0) {
        // The generated turn is already in the KV as generated: append the rest.
        tokens = env_.host->encode_scaffold(std::string_view(*full).substr(expected.size()));
        n_prompt_tokens_ = static_cast<int>(all_tokens_.size());
    } else {
        // The turn ended without its end marker (budget) or renders differently:
        // rewind to the turn's start and re-prefill it as the template writes it.
        TACHYON_LOG(debug, "run " << out_.run_id << ": turn " << turn_step_ << " re-prefilled as the template renders it");
        if (!kv_behind_) env_.host->eng().truncate_session(session_, n_prompt_tokens_);
        all_tokens_.resize(static_cast<size_t>(n_prompt_tokens_));
        tokens = env_.host->encode_scaffold(std::string_view(*full).substr(rendered_.size()));
    }
    rendered_ = std::move(full).value();
    all_tokens_.insert(all_tokens_.end(), tokens.begin(), tokens.end());
    n_prompt_tokens_ = static_cast<int>(all_tokens_.size());
    return tokens;
}

}  // namespace tachyon::agent_detail

