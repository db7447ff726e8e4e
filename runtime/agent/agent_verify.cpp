// The end of the agent loop: a turn without tool calls is the final
// answer, checked against the output schema, then by the agent's verify
// checks; a rejected answer goes back to the model as a feedback turn.
// Part of the runner of agent_runner.h.
#include "runtime/agent/agent_runner.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>

#include "runtime/common/json_util.h"
#include "runtime/journal/journal.h"

namespace tachyon::agent_detail {

// The turn's text as the final answer. With an output schema: one JSON
// object valid for it; without one the agent answers in prose: the turn's
// text, whatever it is. Then the verify checks (tool calls, waited for), if
// any. Returns the feedback for the model when the answer is rejected and
// retries remain; nullopt when the run has ended (accepted, or rejected for
// the last time).
asio::awaitable<std::optional<chat_message>> runner::verify_answer(int step) {
    const agent_definition& a = *agent_;
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
        out_.answer = accepted;
        const double wait_start = now_ms();
        verdict v = co_await verify(answer);
        out_.tool_wait_ms += now_ms() - wait_start;
        if (park_) {  // a check waits for a person (it may have run before a crash)
            finish(out_, park_->state, park_->error);
            co_return std::nullopt;
        }
        ++out_.verify_attempts;
        if (v.ok) {
            out_.verified = !verify_tools_.empty();  // only a check that ran can vouch for it
            out_.time_to_answer_ms = now_ms();
            finish(out_, "succeeded");
            co_return std::nullopt;
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
    if (out_.verify_attempts > a.max_verify_retries || (problem.rfind("final answer", 0) == 0 && step >= a.budgets.max_steps)) {
        out_.time_to_answer_ms = now_ms();
        finish(out_, "failed", "the answer did not pass verification: " + problem);
        co_return std::nullopt;
    }
    record(journal::feedback_event{step, {}, "answer", problem});
    chat_message feedback{"tool", problem};
    feedback.tool_call_id = result_call_id({}, step, 0);  // answers no call, but Mistral's templates want an id
    co_return feedback;
}

// The agent's checks in order, each a tool call with arguments copied from
// the answer's fields; the first that fails is the verdict.
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
        if (slot->parked) co_return verdict{false, {}, {}};
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

}  // namespace tachyon::agent_detail
