// A turn of the agent loop on a remote model (runtime/remote/): the seam
// is the turn's stream of text and calls. The local engine's tokens become
// text through the detokenizer; a remote server's content deltas are that
// text already, and go the same way (on_text: the observer, the tool-call
// parser in text mode); in server mode its tool_calls deltas, assembled
// until their arguments close, become the same call events the parser
// writes (handle_events). Dispatch, grounding, speculative calls, verify
// and the journal after that do not know where the turn came from.
// Part of the runner of agent_runner.h.
#include "runtime/agent/agent_runner.h"

#include <algorithm>

#include "base/assert.h"
#include "runtime/agent/tool_catalog.h"
#include "runtime/common/json_util.h"

#include <simdjson.h>

namespace tachyon::agent_detail {
namespace {

// `schema` with an "enum" of the values grounded so far on each x-grounded
// field of the answer (and the items of an x-grounded array): what the
// local grammar restricts grounded fields to, in the one form every
// JSON-constraining server understands. The response format is not part of
// the prompt, so the prefix stays byte-stable while the values grow.
std::string with_grounded_enums(const std::string& schema, const grounded_values& g) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (parser.parse(simdjson::padded_string(schema)).get(doc) != simdjson::SUCCESS || !doc.is_object()) return schema;
    const auto grounded = [](simdjson::dom::element node) {
        bool flag = false;
        return node.is_object() && node["x-grounded"].get(flag) == simdjson::SUCCESS && flag;
    };
    // A node with "enum" added when it is grounded and values exist.
    const auto node_text = [&](simdjson::dom::element node, const std::string& path) {
        const auto& values = g.for_path(path);
        if (!grounded(node) || values.empty()) return std::string(simdjson::minify(node));
        std::string out = "{";
        for (auto field : node.get_object()) {
            if (field.key == "enum") continue;
            out += json::quote(field.key) + ":" + std::string(simdjson::minify(field.value)) + ",";
        }
        out += "\"enum\":[";
        for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + json::quote(values[i]);
        return out + "]}";
    };
    std::string out = "{";
    bool first = true;
    for (auto field : doc.get_object()) {
        out += std::string(first ? "" : ",") + json::quote(field.key) + ":";
        first = false;
        if (field.key != "properties" || !field.value.is_object()) {
            out += std::string(simdjson::minify(field.value));
            continue;
        }
        out += "{";
        bool first_property = true;
        for (auto property : field.value.get_object()) {
            const std::string name(property.key);
            out += std::string(first_property ? "" : ",") + json::quote(name) + ":";
            first_property = false;
            simdjson::dom::element items;
            if (property.value.is_object() && property.value["items"].get(items) == simdjson::SUCCESS && grounded(items)) {
                std::string p = "{";
                for (auto f : property.value.get_object())
                    p += json::quote(f.key) + ":" + (f.key == "items" ? node_text(items, name + "[]") : std::string(simdjson::minify(f.value))) + ",";
                p.back() = '}';
                out += p;
            } else {
                out += node_text(property.value, name);
            }
        }
        out += "}";
    }
    return out + "}";
}

}  // namespace

// The first request's messages: the system prompt (in text mode with the
// tool list written into it, as the ChatML families render it) and the task.
status runner::render_remote_prompt() {
    const agent_definition& a = *agent_;
    auto system = fill_placeholders(a.instructions, req_.inputs, a.file + ": instructions");
    if (!system) return system.err();
    render_options_.tools = tool_definitions(tools_);
    ground(req_.task);
    prev_text_ = req_.task;
    messages_.push_back({"system", *system});
    messages_.push_back({"user", req_.task});
    std::string system_text = *system;
    if (env_.remote->tools == remote::tool_mode::text && !env_.remote->chat_format.empty()) {
        // The call syntax of the model's family (the model object's chat_format).
        if (auto f = chat_format_from_name(env_.remote->chat_format)) parser_ = tool_call_parser(family_of(*f).syntax);
    }
    if (env_.remote->tools == remote::tool_mode::text && !render_options_.tools.empty()) {
        auto with_tools = system_prompt_with_tools(*system, render_options_.tools);
        if (!with_tools) return with_tools.err();
        system_text = std::move(with_tools).value();
    }
    remote_messages_.push_back({"system", std::move(system_text), {}, {}});
    remote_messages_.push_back({"user", req_.task, {}, {}});
    return {};
}

asio::awaitable<request_stats> runner::generate_remote(int max_tokens, run_turn& turn) {
    // Reached only on a remote run: g++ 12 evaluates both awaits of a
    // conditional expression, which is why generate_turn picks with an if.
    TACHYON_ASSERT(env_.remote != nullptr, "generate_remote: the run has no remote model");
    const remote::remote_model& m = *env_.remote;
    const bool server_tools = m.tools == remote::tool_mode::server;
    remote::turn_request r;
    if (req_.forced_turns) {
        // Replay through a server (bench agents --replay): the recorded tokens travel with the request.
        auto it = req_.forced_turns->find(turn.step);
        if (it == req_.forced_turns->end()) {
            request_stats missing;
            missing.finish = finish_reason::error;
            missing.error = "replay: the recording has no turn " + std::to_string(turn.step);
            co_return missing;
        }
        r.forced_tokens = it->second;
    }
    r.messages = remote_messages_;
    if (server_tools) {
        r.tools = render_options_.tools;
        // The answer's schema where the server constrains JSON; grounding is
        // checked here after the fact (handle_events, verify).
        if (req_.switches.constrain && output_schema_)
            r.response_schema_json = req_.switches.grounding ? with_grounded_enums(agent_->output_schema, grounding()) : agent_->output_schema;
    }
    r.sampling = agent_->sampling;
    r.max_tokens = std::min(max_tokens, m.max_turn_tokens);
    // A replayed turn needs exactly its recorded tokens (fewer would cut it, the server's context may not hold more).
    if (!r.forced_tokens.empty()) r.max_tokens = std::min<int>(max_tokens, static_cast<int>(r.forced_tokens.size()));
    r.session_id = out_.run_id;
    r.request_id = out_.run_id + "-" + std::to_string(turn.step);
    r.traceparent = turn_traceparent();
    remote_content_.clear();
    remote_calls_.clear();

    const auto first = [this, &turn] {
        if (turn.generated_tokens == 0) turn.first_token_ms = now_ms();
        ++turn.generated_tokens;  // events until the usage says how many tokens
    };
    // A call as the turn's text holds it: the Hermes block, so the journal
    // shows it and a resumed run's replay parses the same call back.
    const auto append_call_text = [this](const std::string& name, const std::string& args) {
        // A line of its own, as the model writes it (the server may have streamed the newline as content).
        std::string block = turn_text_.empty() || turn_text_.back() == '\n' ? "" : "\n";
        block += "<tool_call>\n{\"name\": " + json::quote(name) + ", \"arguments\": " + args + "}\n</tool_call>";
        turn_text_ += block;
        if (env_.observer) env_.observer->on_text(block);
    };
    remote::turn_callbacks cb;
    cb.on_content = [this, first, server_tools](std::string_view text) {
        first();
        if (!server_tools) {
            on_text(text);
            return;
        }
        remote_content_ += text;
        turn_text_ += text;
        if (env_.observer) env_.observer->on_text(text);
    };
    cb.on_call = [this, first, append_call_text](const remote::assembled_call& c) {
        first();
        const int index = static_cast<int>(remote_calls_.size());
        remote_calls_.push_back({call_id_of(turn_step_, index), c.name, c.arguments_json});
        append_call_text(c.name, c.arguments_json);
        tool_call_event ev;
        ev.type = tool_call_event::kind::call_complete;
        ev.index = index;
        ev.name = c.name;
        ev.arguments_json = c.arguments_json;
        events_.push_back(std::move(ev));
        handle_events();
    };
    cb.on_call_error = [this](int, const std::string& name, const std::string& message) {
        const int index = static_cast<int>(remote_calls_.size());
        remote_calls_.push_back({call_id_of(turn_step_, index), name, "{}"});
        tool_call_event ev;
        ev.type = tool_call_event::kind::call_error;
        ev.index = index;
        ev.name = name;
        ev.message = message;
        events_.push_back(std::move(ev));
        handle_events();
    };

    remote_stream_ = remote::chat_stream::create(ex_, m);
    auto stream = remote_stream_;
    auto done = co_await stream->run(std::move(r), std::move(cb));
    remote_stream_.reset();
    request_stats stats;
    if (!done) {
        stats.finish = finish_reason::error;
        stats.error = done.err().message;
        if (req_.forced_turns) stats.error = "replay diverged from the recording at turn " + std::to_string(turn.step) + ": " + stats.error;
        co_return stats;
    }
    if (done->finish_reason == "cancelled") stats.finish = finish_reason::cancelled;
    else if (done->finish_reason == "length") stats.finish = finish_reason::length;
    else stats.finish = finish_reason::stop;
    if (done->usage) {
        stats.n_prefilled = std::max(0, done->usage->prompt_tokens - done->usage->cached_tokens);
        stats.n_appended = done->usage->prompt_tokens;
        stats.n_generated = done->usage->completion_tokens;
        turn.generated_tokens = done->usage->completion_tokens;
        turn.reused_tokens = done->usage->cached_tokens;
    } else {
        stats.n_generated = turn.generated_tokens;
    }
    turn.prefill_tokens = stats.n_prefilled;
    co_return stats;
}

// The turn and what answers it, appended to the conversation as the next
// request carries it. Server mode: the calls as the assistant's tool_calls
// and each result as a tool message naming its call; text mode (and
// feedback that answers no call): results as one user message of
// <tool_response> blocks, as the ChatML families render tool turns.
void runner::next_remote_messages(const std::vector<chat_message>& new_messages) {
    const bool server_tools = env_.remote->tools == remote::tool_mode::server;
    messages_.push_back({"assistant", turn_text_});
    for (const auto& m : new_messages) messages_.push_back(m);
    remote::remote_message a{"assistant", server_tools ? remote_content_ : turn_text_, {}, {}};
    if (server_tools) a.tool_calls = remote_calls_;
    remote_messages_.push_back(std::move(a));
    size_t next_call = 0;
    for (size_t i = 0; i < new_messages.size(); ++i) {
        const chat_message& m = new_messages[i];
        if (m.role != "tool") {
            remote_messages_.push_back({m.role, m.content, {}, {}});
        } else if (server_tools && next_call < remote_calls_.size()) {
            remote_messages_.push_back({"tool", m.content, {}, remote_calls_[next_call++].id});
        } else {
            std::string text;
            for (; i < new_messages.size() && new_messages[i].role == "tool"; ++i) {
                if (!text.empty()) text += "\n";
                text += "<tool_response>\n" + new_messages[i].content + "\n</tool_response>";
            }
            --i;
            remote_messages_.push_back({"user", std::move(text), {}, {}});
        }
    }
}

}  // namespace tachyon::agent_detail
