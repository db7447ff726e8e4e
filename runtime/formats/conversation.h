// A conversation file for `tachyon chat render`: the messages, tools and
// render settings as JSON, in the shape of the OpenAI chat API
// ({"messages": [...], "tools": [...], "add_generation_prompt": true,
// "enable_thinking": false}), or a file of named cases
// ({"tools": [...], "cases": {"name": {"messages": ..., "with_tools": true,
// "extra_kwargs": {"enable_thinking": false}}}}) as the conformance
// conversations are written. Tool-call arguments may be objects or strings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "runtime/formats/chat_format.h"

namespace tachyon {

struct conversation {
    std::vector<chat_message> messages;
    chat_render_options options;
};

// `case_name` picks a case of a file of cases (required there, refused
// elsewhere). Errors name `what` (the file) and the field at fault.
result<conversation> parse_conversation(std::string_view json_text, std::string_view what, std::string_view case_name = {});

}  // namespace tachyon
