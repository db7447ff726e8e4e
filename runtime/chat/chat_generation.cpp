#include "runtime/chat/chat_generation.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include <boost/asio/post.hpp>

#include "base/log.h"
#include "runtime/constrain/constraint.h"
#include "runtime/constrain/json_grammar.h"
#include "runtime/constrain/json_schema.h"
#include "runtime/formats/tool_call_parser.h"

namespace tachyon::openai {
namespace asio = boost::asio;

namespace {

// The length of the longest prefix of `text` that ends on a UTF-8 character
// boundary, at most `n`.
size_t utf8_cut(std::string_view text, size_t n) {
    while (n > 0 && n < text.size() && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
    return n;
}

}  // namespace

struct chat_generation::impl {
    std::shared_ptr<model_host> host;
    chat_request req;
    asio::any_io_executor ex;
    generation_limits limits;
    int max_tokens = 0;
    bool parse_calls = false;           // tools active, or a thinking family: the output goes through the parser
    std::string forced_prefix;          // written into the prompt for the model, part of the answer
    std::shared_ptr<turn_constraint> constraint;

    // On the executor.
    delta_callback on_delta;
    completion_callback on_done;
    completion out;
    std::optional<incremental_detokenizer> detok;
    tool_call_parser parser;
    std::vector<tool_call_event> events;
    std::string held;                   // text held back while it may start a stop sequence
    bool stopped = false;               // a stop sequence matched or the one allowed call is complete
    std::atomic<bool> stop_engine{false};
    std::atomic<bool> cancelled{false};
    engine* eng = nullptr;
    session_id session = 0;
    std::atomic<request_id> request{0};

    void feed_raw(std::string_view piece);
    void emit_text(std::string_view text);
    // Streaming a call's arguments while it is written: the text since the
    // last <tool_call>, and how much of the arguments has gone out.
    std::string turn_text;        // everything fed to the parser this turn
    bool call_head_sent = false;  // id, type and name of the call being written
    std::string pending_call_id;  // the id sent in the head
    std::string streamed_args;    // the arguments sent so far

    void handle_events();
    void stream_call_progress();
    void finish(const request_stats& stats);
};

chat_generation::chat_generation(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

chat_generation::~chat_generation() {
    if (impl_ && impl_->eng && impl_->session != 0) impl_->eng->close_session(impl_->session);
}

result<std::shared_ptr<chat_generation>> chat_generation::create(std::shared_ptr<model_host> host, chat_request request,
                                                                 std::string model_id, asio::any_io_executor ex,
                                                                 const generation_limits& limits) {
    auto p = std::make_unique<impl>();
    impl& g = *p;
    g.host = host;
    g.ex = ex;
    g.limits = limits;
    g.eng = &host->eng();
    for (const auto& s : request.stop)
        if (static_cast<int>(s.size()) > limits.max_stop_bytes)
            return make_error(errc::invalid_argument, "stop: a stop sequence is longer than " + std::to_string(limits.max_stop_bytes) + " bytes");

    if (!request.forced_tokens.empty() && !limits.allow_forced_tokens)
        return make_error(errc::invalid_argument, "tachyon_forced_tokens: this server does not replay forced tokens (a benchmark's field)");
    auto text = render_prompt(request, host->format());
    if (!text) return text.err();
    const bool tools_active = request.tool_choice != tool_choice_mode::none && !request.tools.empty();
    // Calls are parsed and constrained in the syntax of the model's family.
    const tool_call_syntax syntax = family_of(host->format()).syntax;
    if (tools_active && syntax == tool_call_syntax::none)
        return make_error(errc::invalid_argument, "tools: the model's chat format " + std::string(to_string(host->format())) +
                                                      " has no tool calls (its template defines none)");
    // Qwen3's think block goes out as reasoning_content, with or without tools.
    g.parse_calls = tools_active || syntax == tool_call_syntax::qwen3;
    g.parser = tool_call_parser(tools_active ? syntax : tool_call_syntax::qwen3);

    // The constraint: tool calls valid for their schemas, the answer valid
    // for the response format.
    std::vector<grammar_tool> gtools;
    if (tools_active) {
        for (const auto& t : request.tools) {
            if (request.tool_choice == tool_choice_mode::named && t.name != request.tool_choice_name) continue;
            auto schema = json_schema::parse(t.parameters_json, t.name, "argument");
            if (!schema) return make_error(errc::invalid_argument, "tools: " + schema.err().message);
            gtools.push_back({t.name, std::make_shared<const json_schema>(std::move(schema).value())});
        }
    }
    std::shared_ptr<const json_schema> answer;
    if (request.response_format != response_format_kind::text) {
        auto schema = json_schema::parse(request.response_schema_json, "response", "field");
        if (!schema) return make_error(errc::invalid_argument, "response_format: " + schema.err().message);
        answer = std::make_shared<const json_schema>(std::move(schema).value());
    }
    if (!gtools.empty() || answer) {
        auto grammar = json_grammar::build(std::move(gtools), answer, grounded_values{}, syntax);
        if (!grammar) return make_error(errc::invalid_argument, (answer ? "response_format: " : "tools: ") + grammar.err().message);
        g.constraint = std::make_shared<turn_constraint>(host->index(), std::move(grammar).value());
    }
    // Forced openings: a call when one is required, '{' when the answer is
    // JSON and no tool may be called instead.
    if (tools_active && (request.tool_choice == tool_choice_mode::required || request.tool_choice == tool_choice_mode::named)) {
        g.forced_prefix = std::string(call_trigger_of(syntax));
    } else if (answer && !tools_active) {
        g.forced_prefix = "{";
    }
    if (g.constraint && !g.forced_prefix.empty()) g.constraint->accept_text(g.forced_prefix);

    std::vector<int32_t> prompt;
    const tokenizer& tok = host->tok();
    if (tok.get_vocab().add_bos && tok.bos() != no_token) prompt.push_back(tok.bos());
    // The whole conversation is scaffold: assistant turns hold <tool_call>
    // markers that must be the control tokens the model was trained on.
    auto body = host->encode_scaffold(*text + g.forced_prefix);
    prompt.insert(prompt.end(), body.begin(), body.end());

    const int n_ctx_train = host->eng().get_model().hparams().n_ctx_train;
    const int n_ctx = std::min(host->eng().options().n_ctx, limits.cap_at_training_context && n_ctx_train > 0 ? n_ctx_train : 1 << 30);
    const int room = n_ctx - static_cast<int>(prompt.size());
    if (room <= 0)
        return make_error(errc::invalid_argument, "messages: the prompt has " + std::to_string(prompt.size()) +
                                                      " tokens; the model's context holds " + std::to_string(n_ctx));
    if (request.max_tokens && *request.max_tokens > room)
        return make_error(errc::invalid_argument, "max_tokens: " + std::to_string(*request.max_tokens) + " plus the prompt's " +
                                                      std::to_string(prompt.size()) + " tokens exceed the model's context of " +
                                                      std::to_string(n_ctx));
    g.max_tokens = request.max_tokens ? *request.max_tokens : std::min(limits.default_max_tokens, room);
    g.req = std::move(request);

    std::shared_ptr<chat_generation> gen(new chat_generation(std::move(p)));
    gen->prompt_ = std::move(prompt);
    gen->head_.id = make_completion_id();
    gen->head_.model = std::move(model_id);
    gen->head_.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    return gen;
}

void chat_generation::start(delta_callback on_delta, completion_callback on_done) {
    impl& g = *impl_;
    g.on_delta = std::move(on_delta);
    g.on_done = std::move(on_done);
    g.out = head_;
    g.out.tokens.prompt_tokens = static_cast<int>(prompt_.size());
    g.detok.emplace(g.host->tok(), decode_options{.render_special = true, .strip_leading_space = false});
    if (g.on_delta) {
        delta d;
        d.role = true;
        g.on_delta(d);
    }
    // The forced opening is part of what the model wrote.
    if (!g.forced_prefix.empty()) g.feed_raw(g.forced_prefix);

    request r;
    g.session = g.eng->create_session();
    r.session = g.session;
    r.append = prompt_;
    r.max_tokens = g.max_tokens;
    r.sampling = sampling_of(g.req);
    r.stop_tokens = g.host->end_of_turn();
    if (g.constraint) r.constrain = [c = g.constraint](std::span<const int32_t> generated, std::span<uint8_t> allowed) {
        c->as_mask_callback()(generated, allowed);
    };
    // Speculative decoding and jump-forward: the same tokens (greedy) or the
    // same distribution (sampled), in fewer forward steps.
    r.n_draft = 8;
    r.forced = g.req.forced_tokens;
    if (g.constraint) r.propose = forced_text_drafts(g.constraint, [host = g.host](std::string_view text) { return host->encode_plain(text); });
    auto self = shared_from_this();
    r.on_token = [self](int32_t token) {
        impl& g = *self->impl_;
        asio::post(g.ex, [self, token] {
            impl& g = *self->impl_;
            if (g.stopped) return;
            const auto& eot = g.host->end_of_turn();
            if (std::find(eot.begin(), eot.end(), token) != eot.end()) return;
            std::string piece = g.detok->push(token);
            if (!piece.empty()) g.feed_raw(piece);
        });
        return !g.stop_engine.load(std::memory_order_relaxed) && !g.cancelled.load(std::memory_order_relaxed);
    };
    // Destroyed on the engine's thread right after the call: the
    // generation (its timers, its executor) leaves with the handler.
    r.on_done = [self](const request_stats& stats) mutable {
        const auto& where = self->impl_->ex;
        asio::post(where, [self = std::move(self), stats] { self->impl_->finish(stats); });
    };
    g.request.store(g.eng->submit(std::move(r)));
    if (g.cancelled.load()) g.eng->cancel(g.request.load());
}

void chat_generation::cancel() {
    impl_->cancelled.store(true);
    if (request_id id = impl_->request.load(); id != 0) impl_->eng->cancel(id);
}

// Raw model text: stop sequences are matched here, before tool-call parsing.
void chat_generation::impl::feed_raw(std::string_view piece) {
    if (stopped) return;
    if (req.stop.empty()) {
        emit_text(piece);
        return;
    }
    held += piece;
    size_t cut = std::string::npos;
    for (const auto& s : req.stop) cut = std::min(cut, held.find(s));
    if (cut != std::string::npos) {
        emit_text(std::string_view(held).substr(0, cut));
        held.clear();
        stopped = true;
        stop_engine.store(true);
        return;
    }
    size_t longest = 0;
    for (const auto& s : req.stop) longest = std::max(longest, s.size());
    if (held.size() >= longest) {
        const size_t n = utf8_cut(held, held.size() - (longest - 1));
        emit_text(std::string_view(held).substr(0, n));
        held.erase(0, n);
    }
}

void chat_generation::impl::emit_text(std::string_view text) {
    if (text.empty()) return;
    if (!parse_calls) {
        out.content += text;
        if (on_delta) {
            delta d;
            d.content = std::string(text);
            on_delta(d);
        }
        return;
    }
    turn_text += text;
    parser.feed(text, events);
    handle_events();
    if (on_delta && !stopped && parser.in_call()) stream_call_progress();
}

// While a call is being written in the trained format
// (`\n{"name": "...", "arguments": ...`), sends its head once the name is
// complete, then the arguments as they grow, holding back the bytes that may
// be the call's closing `}\n</tool_call>`. A call in another layout goes out
// whole when it completes.
void chat_generation::impl::stream_call_progress() {
    constexpr std::string_view open = "\n{\"name\": \"";
    constexpr std::string_view args_key = "\", \"arguments\": ";
    constexpr size_t hold = 16;
    constexpr std::string_view call_open = "<tool_call>";
    if (parser.syntax() != tool_call_syntax::hermes && parser.syntax() != tool_call_syntax::qwen3) return;
    const size_t at = turn_text.rfind(call_open);
    if (at == std::string::npos) return;
    const std::string_view body = std::string_view(turn_text).substr(at + call_open.size());
    if (body.size() < open.size() || body.substr(0, open.size()) != open) return;
    const size_t name_end = body.find(args_key, open.size());
    if (name_end == std::string_view::npos) return;
    const std::string_view name = body.substr(open.size(), name_end - open.size());
    if (name.find_first_of("\"\\") != std::string_view::npos) return;
    const std::string_view args = body.substr(name_end + args_key.size());
    const int index = static_cast<int>(out.tool_calls.size());
    if (!call_head_sent) {
        call_head_sent = true;
        streamed_args.clear();
        pending_call_id = make_tool_call_id(parser.syntax());
        delta head;
        head.tool_index = index;
        head.tool_id = pending_call_id;
        head.tool_name = std::string(name);
        on_delta(head);
    }
    const size_t sent = streamed_args.size();
    if (args.size() > sent + hold) {
        const size_t end = utf8_cut(args, args.size() - hold);
        if (end > sent) {
            delta d;
            d.tool_index = index;
            d.arguments = std::string(args.substr(sent, end - sent));
            streamed_args += d.arguments;
            on_delta(d);
        }
    }
}

void chat_generation::impl::handle_events() {
    for (auto& ev : events) {
        if (stopped) break;
        switch (ev.type) {
            case tool_call_event::kind::text:
                out.content += ev.text;
                if (on_delta) {
                    delta d;
                    d.content = ev.text;
                    on_delta(d);
                }
                break;
            case tool_call_event::kind::reasoning:
                out.reasoning_content += ev.text;
                if (on_delta) {
                    delta d;
                    d.reasoning_content = ev.text;
                    on_delta(d);
                }
                break;
            case tool_call_event::kind::call_error:
                // Only without a constraint, or cut by max_tokens: the call is dropped
                // (a streamed part of it stays with the client, as when a stream is cut).
                TACHYON_LOG(debug, "chat " << out.id << ": malformed tool call dropped: " << ev.message);
                call_head_sent = false;
                streamed_args.clear();
                break;
            case tool_call_event::kind::call_complete: {
                tool_call c;
                c.name = ev.name;
                c.arguments_json = ev.arguments_json;
                c.id = call_head_sent ? pending_call_id : !ev.id.empty() ? ev.id : make_tool_call_id(parser.syntax());
                if (on_delta) {
                    // id, type and name first, then the arguments as string fragments.
                    const int index = static_cast<int>(out.tool_calls.size());
                    if (!call_head_sent) {
                        delta head;
                        head.tool_index = index;
                        head.tool_id = c.id;
                        head.tool_name = c.name;
                        on_delta(head);
                    }
                    if (c.arguments_json.compare(0, streamed_args.size(), streamed_args) != 0) {
                        TACHYON_LOG(warn, "chat " << out.id << ": streamed arguments of call " << index << " differ from the parsed ones");
                    } else if (c.arguments_json.size() > streamed_args.size()) {
                        delta args;
                        args.tool_index = index;
                        args.arguments = c.arguments_json.substr(streamed_args.size());
                        on_delta(args);
                    }
                }
                call_head_sent = false;
                streamed_args.clear();
                out.tool_calls.push_back(std::move(c));
                if (!req.parallel_tool_calls) {
                    stopped = true;
                    stop_engine.store(true);
                }
                break;
            }
        }
    }
    events.clear();
}

void chat_generation::impl::finish(const request_stats& stats) {
    if (!stopped) {
        std::string tail = detok->flush();
        if (!tail.empty()) feed_raw(tail);
        if (!held.empty() && !stopped) emit_text(held);
        held.clear();
    }
    if (parse_calls) {
        parser.finish(events);
        handle_events();
    }
    if (eng && session != 0) {
        eng->close_session(session);
        session = 0;
    }
    out.tokens.completion_tokens = stats.n_generated;
    out.tokens.cached_tokens = stats.n_cached;  // prompt tokens the prefix cache supplied
    if (!out.tool_calls.empty()) out.finish_reason = "tool_calls";
    else if (stats.finish == finish_reason::length && !stopped) out.finish_reason = "length";
    else out.finish_reason = "stop";
    auto done = std::move(on_done);
    on_done = nullptr;
    on_delta = nullptr;
    if (!done) return;
    if (stats.finish == finish_reason::error) {
        done(make_error(errc::internal, "engine: " + stats.error));
        return;
    }
    done(std::move(out));
}

}  // namespace tachyon::openai
