// Call drafts: the text of the calls the agent's history predicts for a
// turn (call_predictor.h), drafted for the engine to verify in one forward
// instead of decoding it token by token (DESIGN.md, overlap mechanisms).
//
// A turn of calls is mostly text nothing else can guess: which tool, which
// trace id, which service. The grammar forces the keys and punctuation
// (jump-forward), prompt lookup finds what the context repeats, but the
// choice of a call is the model's. The predictor has made that choice
// already, from the same results, to start the call early; its guess is
// right most of the time (93 of 99 calls on the incident agent). Written as
// the chat template writes an assistant turn holding those calls, it is the
// model's likely text, and a draft the engine keeps exactly as far as the
// model agrees: the same output, in fewer decode steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "inference/engine/engine.h"
#include "runtime/prediction/call_predictor.h"
#include "runtime/formats/chat_format.h"

namespace tachyon {

// The text the model would write for `calls` in format `format`: what an
// assistant turn holding them as tool calls renders to beyond an empty
// assistant turn. Where the family's template refuses several calls in one
// turn (Llama 3.1), each call alone; empty when it renders none.
std::vector<std::string> predicted_calls_texts(chat_format format, const chat_render_options& options,
                                               std::span<const predicted_call> calls);

// How the drafts turn text into the model's tokens and back.
struct text_codec {
    std::function<std::vector<int32_t>(std::string_view)> encode;
    std::function<std::string(std::span<const int32_t>)> decode;
};

// Drafts from texts the turn is likely to write (`candidates`): the rest of
// the candidate that continues the turn's generated text, at most
// `max_draft` tokens. `forced` (the grammar's forced text, or empty) is
// asked first: its draft is kept unless the candidate's continues it
// further. Called on the engine's thread.
draft_callback predicted_call_drafts(std::vector<std::string> candidates, text_codec codec, draft_callback forced, size_t max_draft);

}  // namespace tachyon
