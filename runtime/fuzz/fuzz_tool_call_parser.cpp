// libFuzzer target for the tool-call parser. Invariants:
// - no crash, no unbounded growth, on any bytes in every family's syntax
//   (the first byte chooses it);
// - the events do not depend on how the text is cut into chunks;
// - for well-formed input built from the fuzzer's bytes in the marker
//   syntaxes (text segments that cannot complete a marker, calls with a name
//   and an arguments object in the family's form), the text events
//   concatenate to the text segments and the calls come back in order.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/formats/tool_call_parser.h"

using namespace tachyon;

namespace {

std::string describe(const std::vector<tool_call_event>& ev) {
    std::string s;
    for (const auto& e : ev) {
        if (e.type == tool_call_event::kind::text) {
            s += e.text;
            continue;
        }
        if (e.type == tool_call_event::kind::reasoning) {
            for (char c : e.text) (s += '\x04') += c;  // marked byte by byte: events merge differently by chunking
            continue;
        }
        s += '\x01' + std::to_string(e.index) + e.name + '\x02' + e.arguments_json + '\x03' + e.id + '\x05' + e.message;
    }
    return s;
}

std::vector<tool_call_event> run(std::string_view text, tool_call_syntax syntax, std::string_view cuts) {
    tool_call_parser p(syntax, 256);
    std::vector<tool_call_event> ev;
    size_t pos = 0;
    for (size_t k = 0; pos < text.size(); ++k) {
        const size_t n = cuts.empty() ? text.size() : 1 + static_cast<uint8_t>(cuts[k % cuts.size()]) % 8;
        p.feed(text.substr(pos, n), ev);
        pos += std::min(n, text.size() - pos);
    }
    p.finish(ev);
    return ev;
}

void check(bool cond, const char* what) {
    if (!cond) {
        fprintf(stderr, "invariant broken: %s\n", what);
        abort();
    }
}

// Builds well-formed Hermes text from the bytes: text segments (with '<'
// allowed, but never a whole tag) and calls; checks the parse.
void check_well_formed(std::string_view data, tool_call_syntax syntax) {
    std::string input, expect_text;
    std::vector<std::pair<std::string, std::string>> expect_calls;
    size_t i = 0;
    while (i < data.size()) {
        const uint8_t op = static_cast<uint8_t>(data[i++]);
        const size_t n = std::min<size_t>(op % 12, data.size() - i);
        std::string piece(data.substr(i, n));
        i += n;
        if (op & 0x80) {
            std::string name = "t";
            for (char c : piece) name += static_cast<char>('a' + static_cast<uint8_t>(c) % 26);
            std::string args = "{\"v\": \"";
            for (char c : piece) args += static_cast<char>('0' + static_cast<uint8_t>(c) % 10);
            args += "\"}";
            const std::string call = "{\"name\": \"" + name + "\", \"arguments\": " + args + "}";
            switch (syntax) {
                case tool_call_syntax::phi4: input += "<|tool_call|>[" + call + "]<|/tool_call|>"; break;
                case tool_call_syntax::granite: input += "<|tool_call|>[" + call + "]"; break;
                case tool_call_syntax::mistral: input += "[TOOL_CALLS][" + call + "]"; break;
                default: input += "<tool_call>\n" + call + "\n</tool_call>";
            }
            expect_calls.emplace_back(name, args);
        } else {
            for (char& c : piece)
                if (c == '>' || c == ']') c = ')';  // no marker can close: "<tool_call" never becomes one
            input += piece;
            expect_text += piece;
        }
    }
    const auto ev = run(input, syntax, data);
    std::string text;
    size_t k = 0;
    for (const auto& e : ev) {
        if (e.type == tool_call_event::kind::text) {
            text += e.text;
            continue;
        }
        check(e.type == tool_call_event::kind::call_complete, "well-formed call reported as error");
        check(k < expect_calls.size(), "more calls than written");
        check(e.name == expect_calls[k].first && e.arguments_json == expect_calls[k].second, "call content");
        check(e.index == static_cast<int>(k), "call index");
        ++k;
    }
    check(k == expect_calls.size(), "fewer calls than written");
    check(text == expect_text, "text differs from the text written");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    if (size == 0) return 0;
    const std::string_view data(reinterpret_cast<const char*>(bytes), size);
    constexpr tool_call_syntax syntaxes[] = {tool_call_syntax::hermes,  tool_call_syntax::llama3, tool_call_syntax::qwen3,
                                             tool_call_syntax::mistral, tool_call_syntax::phi4,   tool_call_syntax::granite,
                                             tool_call_syntax::none};
    const auto syntax = syntaxes[bytes[0] % std::size(syntaxes)];
    const std::string_view rest = data.substr(1);
    const std::string whole = describe(run(rest, syntax, {}));
    check(whole == describe(run(rest, syntax, rest)), "events depend on chunking");
    check(whole == describe(run(rest, syntax, std::string_view("\x00", 1))), "events depend on chunking (bytewise)");
    if (syntax != tool_call_syntax::llama3 && syntax != tool_call_syntax::none) check_well_formed(rest, syntax);
    return 0;
}
