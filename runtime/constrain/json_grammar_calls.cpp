// The tool-call region of each chat family: the literals around the tool's
// name and arguments as the family's template writes a call
// (runtime/formats/), and the call frame of the automaton that walks them.
// Adding a family's call syntax: a row in add_call_region.
#include "runtime/constrain/json_grammar.h"

namespace tachyon {

namespace {

// Stages of the call frame: open literal, name, [id], arguments, [id],
// close literal, then for a list ", " and another call, or the list's end.
constexpr uint8_t k_call_open = 1, k_call_name = 2, k_call_id_first = 3, k_call_args = 4, k_call_id_last = 5,
                  k_call_close = 6, k_call_more = 7, k_call_end = 8;

bool is_alnum(uint8_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

void json_grammar::add_call_region(tool_call_syntax syntax) {
    syntax_ = syntax;
    trigger_ = std::string(call_trigger_of(syntax));
    switch (syntax) {
        case tool_call_syntax::llama3:
            lit_call_open_ = add_literal(": ");
            lit_call_args_ = add_literal(", \"parameters\": ");
            lit_call_close_ = add_literal("}");
            break;
        case tool_call_syntax::mistral:
            // Nemo's template writes each call's id after its arguments, and
            // raises on a tool result without one: the model writes it too.
            call_list_ = true;
            lit_call_open_ = add_literal("[{\"name\": ");
            lit_call_args_ = add_literal(", \"arguments\": ");
            lit_call_id_ = add_literal(", \"id\": \"");
            lit_call_close_ = add_literal("\"}");
            lit_call_next_ = add_literal(" {\"name\": ");
            lit_call_end_ = add_literal("");
            break;
        case tool_call_syntax::mistral_named:
        case tool_call_syntax::mistral_named_id:
            // One call per "[TOOL_CALLS]": the region ends after the arguments.
            bare_names_ = true;
            call_id_first_ = true;
            lit_call_open_ = add_literal("");
            if (syntax == tool_call_syntax::mistral_named_id) lit_call_id_ = add_literal("[CALL_ID]");
            lit_call_args_ = add_literal("[ARGS]");
            lit_call_close_ = add_literal("");
            break;
        case tool_call_syntax::phi4:
        case tool_call_syntax::granite:
            call_list_ = true;
            lit_call_open_ = add_literal("[{\"name\": ");
            lit_call_args_ = add_literal(", \"arguments\": ");
            lit_call_close_ = add_literal("}");
            lit_call_next_ = add_literal(" {\"name\": ");
            lit_call_end_ = add_literal(syntax == tool_call_syntax::phi4 ? "<|/tool_call|>" : "");
            break;
        default:
            lit_call_open_ = add_literal("\n{\"name\": ");
            lit_call_args_ = add_literal(", \"arguments\": ");
            lit_call_close_ = add_literal("}\n</tool_call>");
    }
}

void json_automaton::start_tool_call() {
    depth_ = 0;
    frame f;
    f.k = kind::call;
    f.stage = k_call_open;
    push(f);
    push_literal(g_->lit_call_open_);
    pop_finished();  // an empty opening: the name is next
}

bool json_automaton::push_call_id() {
    frame f;
    f.k = kind::call_id;
    return push(f);
}

void json_automaton::resume_call(frame& f, const frame& child) {
    // Pushed in reverse: the literal before a part is on top of it.
    auto start_args = [&] {
        f.stage = k_call_args;
        push_value(g_->tools_[f.a]);
        push_literal(g_->lit_call_args_);
    };
    auto close = [&] {
        f.stage = k_call_close;
        push_literal(g_->lit_call_close_);
    };
    switch (f.stage) {
        case k_call_open:
            f.stage = k_call_name;
            push_choice(g_->tool_names_, 0);
            break;
        case k_call_name:
            f.a = g_->lists_[static_cast<size_t>(g_->tool_names_)].payload[child.a];
            if (g_->lit_call_id_ >= 0 && g_->call_id_first_) {
                f.stage = k_call_id_first;
                push_call_id();
                push_literal(g_->lit_call_id_);
            } else {
                start_args();
            }
            break;
        case k_call_id_first: start_args(); break;
        case k_call_args:
            if (g_->lit_call_id_ >= 0 && !g_->call_id_first_) {
                f.stage = k_call_id_last;
                push_call_id();
                push_literal(g_->lit_call_id_);
            } else {
                close();
            }
            break;
        case k_call_id_last: close(); break;
        case k_call_close:
            f.stage = g_->call_list_ ? k_call_more : k_done;  // ", " and another call, or the list's end
            break;
        default: f.stage = k_done;
    }
}

json_automaton::step json_automaton::consume_call(frame& f, uint8_t c) {
    if (f.k == kind::call_id) {
        if (f.pos >= call_id_length || !is_alnum(c)) return step::reject;
        ++f.pos;
        return step::consumed;
    }
    // Between the calls of a list: another one, or the end.
    if (f.stage != k_call_more) return step::reject;
    if (c == ',') {
        f.stage = k_call_open;
        return push_literal(g_->lit_call_next_) ? step::consumed : step::reject;
    }
    if (c != ']') return step::reject;
    if (g_->literals_[static_cast<size_t>(g_->lit_call_end_)].empty()) {
        f.stage = k_done;
        return step::consumed;
    }
    f.stage = k_call_end;
    return push_literal(g_->lit_call_end_) ? step::consumed : step::reject;
}

}  // namespace tachyon
