#include "runtime/prediction/call_drafts.h"

#include <algorithm>
#include <optional>

#include "runtime/formats/json_value.h"

namespace tachyon {
namespace {

// What `with` renders beyond `without`: the two renderings share the
// conversation before the assistant turn and its closing after it. Where
// the insertion could sit at several places (before "<|im_end|>", the "<"
// of "<tool_call>" matches either side), the leftmost is the template's.
std::string rendered_difference(const std::string& with, const std::string& without) {
    size_t head = 0;
    while (head < with.size() && head < without.size() && with[head] == without[head]) ++head;
    size_t tail = 0;
    while (tail < with.size() && tail < without.size() && with[with.size() - 1 - tail] == without[without.size() - 1 - tail]) ++tail;
    const size_t inserted = with.size() - std::min(with.size(), without.size());
    const size_t at = without.size() - std::min(tail, without.size());
    if (with.size() >= without.size() && at <= head) return with.substr(at, inserted);
    tail = std::min(tail, with.size() - head);
    return with.substr(head, with.size() - head - tail);
}

// The calls' text as one assistant turn writes them, or nullopt when the
// template refuses the turn: what follows the generation prompt (where the
// model starts writing) up to the turn's closing, which an empty assistant
// turn has too.
std::optional<std::string> calls_text(chat_format format, const chat_render_options& options, std::span<const predicted_call> calls) {
    std::vector<chat_message> messages(1);
    messages[0].role = "user";
    messages[0].content = "?";
    chat_render_options o = options;
    o.add_generation_prompt = true;
    auto prompt = render_chat(format, messages, o);
    o.add_generation_prompt = false;
    messages.emplace_back().role = "assistant";
    auto without = render_chat(format, messages, o);
    // As json.dumps writes them, the way models learn to write arguments
    // (templates that take arguments as text write them as they are).
    for (const auto& c : calls) {
        auto v = formats::json_value::parse(c.arguments, "predicted call");
        chat_tool_call call;
        call.name = c.name;
        call.arguments_json = v ? v->dumps() : c.arguments;
        messages.back().tool_calls.push_back(std::move(call));
    }
    auto with = render_chat(format, messages, o);
    if (!with || !without || !prompt) return std::nullopt;
    if (with->compare(0, prompt->size(), *prompt) != 0) return rendered_difference(*with, *without);
    size_t tail = 0;
    const size_t room = with->size() - prompt->size();
    while (tail < room && tail < without->size() && (*with)[with->size() - 1 - tail] == (*without)[without->size() - 1 - tail]) ++tail;
    return with->substr(prompt->size(), room - tail);
}

}  // namespace

std::vector<std::string> predicted_calls_texts(chat_format format, const chat_render_options& options,
                                               std::span<const predicted_call> calls) {
    std::vector<std::string> out;
    if (calls.empty()) return out;
    if (auto all = calls_text(format, options, calls)) {
        if (!all->empty()) out.push_back(std::move(*all));
        return out;
    }
    for (const auto& c : calls)
        if (auto one = calls_text(format, options, std::span(&c, 1)); one && !one->empty()) out.push_back(std::move(*one));
    return out;
}

draft_callback predicted_call_drafts(std::vector<std::string> candidates, text_codec codec, draft_callback forced, size_t max_draft) {
    return [candidates = std::move(candidates), codec = std::move(codec), forced = std::move(forced), max_draft](
               std::span<const int32_t> generated, std::vector<int32_t>& draft) {
        if (forced) forced(generated, draft);
        // Where a candidate continues the generated text: after all of it
        // when it is the candidate's beginning, else after the longest end
        // of it (3 to 48 bytes) the candidate holds. Text, not tokens: a
        // model may split what the tokenizer would merge ("3", "d", "e"
        // where it writes "3", "de"), and the candidate then finds its place
        // again after the split.
        const std::string text = codec.decode(generated);
        std::string_view next;
        for (const auto& c : candidates) {
            if (text.size() < c.size() && c.compare(0, text.size(), text) == 0) {
                next = std::string_view(c).substr(text.size());
                break;
            }
        }
        for (size_t k = std::min<size_t>(48, text.size()); next.empty() && k >= 3; --k) {
            const std::string_view end = std::string_view(text).substr(text.size() - k);
            bool at_an_end = false;  // the text ends where a candidate does: nothing more to guess
            for (const auto& c : candidates) {
                for (size_t at = c.find(end); at != std::string::npos && next.empty(); at = c.find(end, at + 1)) {
                    if (at + k < c.size()) next = std::string_view(c).substr(at + k);
                    else at_an_end = true;
                }
                if (!next.empty()) break;
            }
            if (at_an_end && next.empty()) return;
        }
        if (next.empty()) return;
        std::vector<int32_t> tokens = codec.encode(next);
        if (tokens.size() > max_draft) tokens.resize(max_draft);
        // The grammar's forced text is certain: the candidate's draft replaces
        // it only where it starts with it and goes further.
        if (!draft.empty() && (tokens.size() <= draft.size() || !std::equal(draft.begin(), draft.end(), tokens.begin()))) return;
        draft = std::move(tokens);
    };
}

}  // namespace tachyon

