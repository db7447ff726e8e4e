// tachyon chat render: prints the exact prompt text a conversation becomes
// in a model's chat format (runtime/formats/), for checking a model's
// prompts against its own template or training data.
#include <fstream>
#include <iostream>
#include <sstream>

#include "inference/gguf/gguf.h"
#include "runtime/cli/cli.h"
#include "runtime/formats/chat_format.h"
#include "runtime/formats/conversation.h"

namespace tachyon {
namespace {

int chat_fail(const std::string& message) {
    std::cerr << "tachyon chat render: " << message << "\n";
    return 1;
}

result<std::string> read_text(const std::string& path, std::string_view what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(errc::not_found, std::string(what) + " " + path + ": cannot be read");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// "YYYY-MM-DD".
result<chat_date> parse_date(const std::string& s) {
    chat_date d;
    char dash1 = 0, dash2 = 0;
    std::istringstream in(s);
    if (s.size() != 10 || !(in >> d.year >> dash1 >> d.month >> dash2 >> d.day) || dash1 != '-' || dash2 != '-' ||
        d.month < 1 || d.month > 12 || d.day < 1 || d.day > 31)
        return make_error(errc::invalid_argument, "--date " + s + ": expected YYYY-MM-DD");
    return d;
}

int render(const cli::parsed_args& args) {
    const bool by_model = args.has("model"), by_template = args.has("template");
    if (by_model == by_template) return chat_fail("give exactly one of --model M.gguf or --template FILE.jinja");
    std::string template_text;
    if (by_model) {
        auto file = gguf_file::open(*args.get("model"));
        if (!file) return chat_fail(file.err().message);
        auto t = (*file)->get_string("tokenizer.chat_template");
        if (t) template_text = *t;
    } else {
        auto t = read_text(*args.get("template"), "--template");
        if (!t) return chat_fail(t.err().message);
        template_text = *t;
    }
    auto format = select_chat_format(template_text, args.get_or("chat-format", ""));
    if (!format) return chat_fail(format.err().message);
    const std::string conv_path = *args.get("conversation");
    auto text = read_text(conv_path, "--conversation");
    if (!text) return chat_fail(text.err().message);
    auto conv = parse_conversation(*text, conv_path, args.get_or("case", ""));
    if (!conv) return chat_fail(conv.err().message);
    if (args.has("date")) {
        auto d = parse_date(*args.get("date"));
        if (!d) return chat_fail(d.err().message);
        conv->options.date = *d;
    }
    if (args.has("bos-token")) conv->options.bos_token = *args.get("bos-token");
    if (args.has("eos-token")) conv->options.eos_token = *args.get("eos-token");
    auto out = render_chat(*format, conv->messages, conv->options);
    if (!out) return chat_fail(out.err().message);
    std::cout << *out;
    return 0;
}

}  // namespace

cli::command_spec make_chat_render_command() {
    cli::command_spec c;
    c.name = "chat render";
    c.summary = "print the exact prompt text of a conversation in a model's chat format";
    c.description =
        "The format is detected from the model's (or the file's) chat template, or named with --chat-format.\n"
        "The conversation is OpenAI-style JSON ({\"messages\": [...], \"tools\": [...]}) or a file of named\n"
        "cases ({\"tools\": [...], \"cases\": {...}}, pick one with --case). BOS is not written unless\n"
        "--bos-token gives its text (the tokenizer adds it).";
    c.options = {
        {"model", 'm', cli::option_kind::value, "PATH", "", "GGUF model file whose tokenizer.chat_template is used"},
        {"template", 0, cli::option_kind::value, "FILE", "", "a chat template file (.jinja) instead of a model"},
        {"conversation", 0, cli::option_kind::value, "FILE", "", "the conversation (JSON)", true},
        {"case", 0, cli::option_kind::value, "NAME", "", "the case of a file of cases"},
        {"date", 0, cli::option_kind::value, "YYYY-MM-DD", "", "the date templates write (default: today)"},
        {"chat-format", 0, cli::option_kind::value, "NAME", "", "a chat format, overriding detection"},
        {"bos-token", 0, cli::option_kind::value, "TEXT", "", "the BOS text, where the template writes it"},
        {"eos-token", 0, cli::option_kind::value, "TEXT", "", "the EOS text, where the template writes it"},
    };
    c.run = render;
    return c;
}

}  // namespace tachyon
