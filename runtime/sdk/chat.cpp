#include "tachyon/chat.h"

#include <algorithm>

#include "base/log.h"
#include "runtime/formats/chat_format.h"
#include "runtime/sdk/bridge.h"

namespace tachyon::sdk {

result<model> model::open(const std::string& path, const model_options& options) {
    engine_options eo;
    eo.n_threads = std::max(1, options.n_threads);
    eo.n_ctx = options.n_ctx;
    eo.kv_f16 = !options.kv_f32;
    auto host = model_host::open(path, eo, options.chat_format);
    if (!host) return to_public(host.err());
    return model_access::make(std::move(host).value());
}

const std::string& model::path() const { return impl_->host->path(); }

std::string model::chat_format() const { return std::string(::tachyon::to_string(impl_->host->format())); }

result<chat_reply> model::chat(const std::vector<chat_message>& messages, const chat_options& options) const {
    model_host& host = *impl_->host;
    auto fail = [](errc code, const std::string& m) { return sdk::error{code, "chat: " + m}; };
    if (messages.empty()) return fail(errc::invalid_argument, "no messages");
    if (options.max_tokens < 1) return fail(errc::invalid_argument, "max_tokens must be at least 1, got " + std::to_string(options.max_tokens));
    const sampling_params sampling = to_internal(options.sampling);
    if (auto st = sampling.validate(); !st) return fail(errc::invalid_argument, st.err().message);

    // Prompt: the conversation in the model's chat format, ending with the
    // opening of the assistant's turn. Message text is encoded as the agent
    // loop encodes its prompt (control-token text is parsed).
    std::vector<::tachyon::chat_message> rendered_messages;
    for (const auto& m : messages) rendered_messages.push_back({m.role, m.content});
    auto text = render_chat(host.format(), rendered_messages);
    if (!text) return fail(to_public(text.err()).code, text.err().message);
    const tokenizer& tok = host.tok();
    std::vector<int32_t> prompt;
    if (tok.get_vocab().add_bos && tok.bos() != no_token) prompt.push_back(tok.bos());
    auto body = host.encode_scaffold(*text);
    prompt.insert(prompt.end(), body.begin(), body.end());
    const int n_ctx = host.eng().options().n_ctx;
    if (static_cast<int>(prompt.size()) + options.max_tokens > n_ctx) {
        return fail(errc::out_of_range, "the prompt (" + std::to_string(prompt.size()) + " tokens) and max_tokens (" +
                                            std::to_string(options.max_tokens) + ") exceed the context of " + std::to_string(n_ctx) +
                                            " positions (model_options::n_ctx)");
    }

    // Generate on a session of its own, streaming complete UTF-8 pieces.
    chat_reply reply;
    incremental_detokenizer detok(tok);
    bool callback_failed = false;
    auto deliver = [&](const std::string& piece) {
        if (piece.empty()) return true;
        reply.text += piece;
        if (!options.on_text) return true;
        try {
            return options.on_text(piece);
        } catch (const std::exception& e) {
            TACHYON_LOG(warn, __func__ << ": on_text threw: " << e.what());
        } catch (...) {
            TACHYON_LOG(warn, __func__ << ": on_text threw a non-standard exception");
        }
        callback_failed = true;
        return false;
    };
    const auto& end_of_turn = host.end_of_turn();
    const session_id session = host.eng().create_session();
    request r;
    r.session = session;
    r.append = std::move(prompt);
    r.max_tokens = options.max_tokens;
    r.sampling = sampling;
    r.stop_tokens = end_of_turn;
    r.on_token = [&](int32_t t) {
        if (std::find(end_of_turn.begin(), end_of_turn.end(), t) != end_of_turn.end()) return false;
        return deliver(detok.push(t));
    };
    const request_stats stats = host.eng().run(std::move(r));
    host.eng().close_session(session);
    if (stats.finish == finish_reason::error) return fail(errc::internal, stats.error);
    if (callback_failed) return fail(errc::internal, "the on_text callback threw (see the log)");
    deliver(detok.flush());

    reply.finish = stats.finish == finish_reason::length ? "length" : "stop";
    reply.prompt_tokens = stats.n_appended;
    reply.completion_tokens = stats.n_generated;
    reply.prefill_ms = stats.prefill_ms;
    reply.decode_ms = stats.decode_ms;
    return reply;
}

}  // namespace tachyon::sdk
