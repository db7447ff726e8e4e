#include "runtime/remote/remote_chat.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include <ctime>

#include "base/log.h"

namespace tachyon::remote {

std::shared_ptr<remote_chat> remote_chat::create(remote_model model, openai::chat_request request, std::string model_id,
                                                 boost::asio::any_io_executor ex, const openai::generation_limits& limits,
                                                 std::string session_id, std::string traceparent) {
    std::shared_ptr<remote_chat> c(new remote_chat());
    c->ex_ = ex;
    c->stream_ = chat_stream::create(ex, std::move(model));
    c->head_.id = openai::make_completion_id();
    c->head_.model = std::move(model_id);
    c->head_.created = static_cast<int64_t>(std::time(nullptr));
    turn_request& r = c->request_;
    for (const auto& m : request.messages) {
        remote_message rm{m.role, m.content, {}, m.tool_call_id};
        for (const auto& call : m.tool_calls) rm.tool_calls.push_back({call.id, call.name, call.arguments_json});
        r.messages.push_back(std::move(rm));
    }
    if (request.tool_choice != openai::tool_choice_mode::none) r.tools = openai::tool_lines(request.tools);
    if (request.response_format != openai::response_format_kind::text) r.response_schema_json = request.response_schema_json;
    r.sampling = openai::sampling_of(request);
    r.max_tokens = request.max_tokens.value_or(limits.default_max_tokens);
    r.session_id = std::move(session_id);
    r.request_id = c->head_.id;
    r.traceparent = std::move(traceparent);
    return c;
}

void remote_chat::start(openai::delta_callback on_delta, openai::completion_callback on_done) {
    auto self = shared_from_this();
    boost::asio::co_spawn(
        ex_,
        [self, on_delta = std::move(on_delta), on_done = std::move(on_done)]() -> boost::asio::awaitable<void> {
            openai::completion c = self->head_;
            if (on_delta) {
                openai::delta role;
                role.role = true;
                on_delta(role);
            }
            turn_callbacks cb;
            cb.on_content = [&](std::string_view text) {
                c.content += text;
                if (!on_delta) return;
                openai::delta d;
                d.content = std::string(text);
                on_delta(d);
            };
            const auto on_call = [&](const assembled_call& call) {
                openai::tool_call t{call.id.empty() ? openai::make_tool_call_id() : call.id, call.name, call.arguments_json};
                if (on_delta) {
                    openai::delta d;
                    d.tool_index = static_cast<int>(c.tool_calls.size());
                    d.tool_id = t.id;
                    d.tool_name = t.name;
                    d.arguments = t.arguments_json;
                    on_delta(d);
                }
                c.tool_calls.push_back(std::move(t));
            };
            cb.on_call = on_call;
            cb.on_call_error = [&](int, const std::string& name, const std::string& message) {
                // Not passed on: a call the client could not parse either.
                TACHYON_LOG(warn, "remote model " << self->stream_->model().describe() << ": dropped call '" << name << "': " << message);
            };
            auto r = co_await self->stream_->run(self->request_, std::move(cb));
            if (!r) {
                on_done(r.err());
                co_return;
            }
            c.finish_reason = r->finish_reason == "cancelled" ? "stop" : r->finish_reason;
            if (!c.tool_calls.empty() && c.finish_reason == "stop") c.finish_reason = "tool_calls";
            if (r->usage) {
                c.tokens.prompt_tokens = r->usage->prompt_tokens;
                c.tokens.completion_tokens = r->usage->completion_tokens;
                c.tokens.cached_tokens = r->usage->cached_tokens;
            }
            on_done(std::move(c));
        },
        boost::asio::detached);
}

void remote_chat::cancel() {
    boost::asio::post(ex_, [s = stream_] { s->cancel(); });
}

}  // namespace tachyon::remote
