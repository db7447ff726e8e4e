// `tachyon tokenize` and `tachyon generate`: the inference core from the
// command line.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "runtime/formats/chat_format.h"
#include "inference/engine/engine.h"
#include "inference/tokenizer/tokenizer.h"
#include "runtime/cli/cli.h"

namespace tachyon {
namespace {

int fail(const std::string& command, const std::string& message) {
    std::cerr << "tachyon " << command << ": " << message << "\n";
    return 1;
}

result<std::string> read_file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(errc::io_error, path + ": cannot open for reading");
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) return make_error(errc::io_error, path + ": read failed");
    return bytes;
}

int tokenize(const cli::parsed_args& args) {
    const bool has_p = args.has("prompt"), has_f = args.has("file");
    if (has_p == has_f) return fail("tokenize", "give exactly one of -p TEXT or -f FILE");
    std::string text;
    if (has_p) {
        text = *args.get("prompt");
    } else {
        auto bytes = read_file_bytes(*args.get("file"));
        if (!bytes) return fail("tokenize", bytes.err().message);
        text = std::move(bytes).value();
    }
    auto file = gguf_file::open(*args.get("model"));
    if (!file) return fail("tokenize", file.err().message);
    auto tok = tokenizer::from_gguf(**file);
    if (!tok) return fail("tokenize", tok.err().message);
    encode_options o;
    o.add_special = args.flag("add-special");
    o.parse_special = args.flag("parse-special");
    auto ids = tok->encode(text, o);
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) out += ' ';
        out += std::to_string(ids[i]);
    }
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}

int generate(const cli::parsed_args& args) {
    auto n_predict = args.get_int("n-predict");
    if (!n_predict) return fail("generate", n_predict.err().message);
    auto threads = args.get_int("threads");
    if (!threads) return fail("generate", threads.err().message);
    sampling_params sp;
    auto temp = args.get_double("temp");
    auto top_k = args.get_int("top-k");
    auto top_p = args.get_double("top-p");
    auto min_p = args.get_double("min-p");
    auto repeat = args.get_double("repeat-penalty");
    auto seed = args.get_int("seed");
    for (const error* e : {temp ? nullptr : &temp.err(), top_k ? nullptr : &top_k.err(), top_p ? nullptr : &top_p.err(),
                           min_p ? nullptr : &min_p.err(), repeat ? nullptr : &repeat.err(), seed ? nullptr : &seed.err()})
        if (e) return fail("generate", e->message);
    sp.temperature = static_cast<float>(*temp);
    sp.top_k = static_cast<int>(*top_k);
    sp.top_p = static_cast<float>(*top_p);
    sp.min_p = static_cast<float>(*min_p);
    sp.repeat_penalty = static_cast<float>(*repeat);
    sp.seed = static_cast<uint64_t>(*seed);
    if (auto st = sp.validate(); !st) return fail("generate", st.err().message);
    if (*n_predict < 0) return fail("generate", "-n must be >= 0");
    if (*threads < 0) return fail("generate", "-t must be >= 0 (0: automatic)");

    auto file = gguf_file::open(*args.get("model"));
    if (!file) return fail("generate", file.err().message);
    auto tok = tokenizer::from_gguf(**file);
    if (!tok) return fail("generate", tok.err().message);

    std::string prompt = *args.get("prompt");
    std::vector<token_id> ids;
    if (args.flag("chat")) {
        auto template_text = (*file)->get_string("tokenizer.chat_template");
        auto format = select_chat_format(template_text ? *template_text : std::string(), args.get_or("chat-format", ""));
        if (!format) return fail("generate", format.err().message);
        std::vector<chat_message> messages;
        if (args.has("system")) messages.push_back({"system", *args.get("system")});
        messages.push_back({"user", prompt});
        auto rendered = render_chat(*format, messages);
        if (!rendered) return fail("generate", rendered.err().message);
        if (tok->get_vocab().add_bos && tok->bos() != no_token) ids.push_back(tok->bos());
        auto body = tok->encode(*rendered, {.add_special = false, .parse_special = true});
        ids.insert(ids.end(), body.begin(), body.end());
    } else {
        // BOS as the model's metadata says (tokenizer.ggml.add_bos_token); never EOS after a prompt.
        if (tok->get_vocab().add_bos && tok->bos() != no_token) ids.push_back(tok->bos());
        auto body = tok->encode(prompt, {.add_special = false, .parse_special = false});
        ids.insert(ids.end(), body.begin(), body.end());
    }
    if (ids.empty()) return fail("generate", "the prompt is empty and the model adds no BOS token");

    engine_options o;
    o.n_threads = static_cast<int>(*threads);
    o.n_ctx = static_cast<int>(ids.size() + static_cast<size_t>(*n_predict)) + 64;
    auto m = load_model(std::move(file).value());
    if (!m) return fail("generate", m.err().message);
    if (o.n_ctx > 4 * m.value()->hparams().n_ctx_train + 64) {
        std::cerr << "tachyon generate: warning: " << o.n_ctx << " positions exceed the model's training context "
                  << m.value()->hparams().n_ctx_train << "\n";
    }
    auto e = engine::create(std::move(m).value(), o);

    const bool print_ids = args.flag("ids");
    const bool stop_at_eog = !args.flag("ignore-eos");
    incremental_detokenizer detok(*tok);
    bool first = true;
    request r;
    r.session = e->create_session();
    r.append = ids;
    r.max_tokens = static_cast<int>(*n_predict);
    r.sampling = sp;
    r.on_token = [&](int32_t t) {
        if (stop_at_eog && tok->is_eog(t)) return false;
        if (print_ids) {
            std::printf(first ? "%d" : " %d", t);
        } else {
            std::string piece = detok.push(t);
            std::fwrite(piece.data(), 1, piece.size(), stdout);
        }
        std::fflush(stdout);
        first = false;
        return true;
    };
    auto stats = e->run(std::move(r));
    if (!print_ids) {
        std::string rest = detok.flush();
        std::fwrite(rest.data(), 1, rest.size(), stdout);
    }
    std::printf("\n");
    if (stats.finish == finish_reason::error) return fail("generate", stats.error);
    if (args.flag("stats")) {
        std::fprintf(stderr, "prompt %d tokens, %.1f tokens/s; generated %d tokens, %.1f tokens/s\n", stats.n_prefilled,
                     stats.prefill_tokens_per_s(), stats.n_generated, stats.decode_tokens_per_s());
    }
    return 0;
}

}  // namespace

cli::command_spec make_tokenize_command() {
    cli::command_spec c;
    c.name = "tokenize";
    c.summary = "print the token ids of a text under a GGUF model's tokenizer";
    c.description = "Prints the ids as decimal numbers separated by single spaces on one line. No BOS/EOS unless\n"
                    "--add-special; control tokens written in the text are plain text unless --parse-special.";
    c.options = {
        {"model", 'm', cli::option_kind::value, "PATH", "", "GGUF model or vocabulary file", true},
        {"prompt", 'p', cli::option_kind::value, "TEXT", "", "text to tokenize"},
        {"file", 'f', cli::option_kind::value, "FILE", "", "tokenize the bytes of FILE exactly"},
        {"add-special", 0, cli::option_kind::flag, "", "", "add BOS/EOS as the model's metadata says"},
        {"parse-special", 0, cli::option_kind::flag, "", "", "match control tokens written in the text"},
    };
    c.run = tokenize;
    return c;
}

cli::command_spec make_generate_command() {
    cli::command_spec c;
    c.name = "generate";
    c.summary = "continue a prompt with a GGUF model and print the generated text";
    c.description = "The prompt gets BOS as the model's metadata says (tokenizer.ggml.add_bos_token). With --chat the\n"
                    "prompt is a user message rendered with the model's chat template.";
    c.options = {
        {"model", 'm', cli::option_kind::value, "PATH", "", "GGUF model file", true},
        {"prompt", 'p', cli::option_kind::value, "TEXT", "", "prompt text", true},
        {"n-predict", 'n', cli::option_kind::value, "N", "128", "tokens to generate"},
        {"temp", 0, cli::option_kind::value, "T", "0.8", "temperature (0: greedy)"},
        {"top-k", 0, cli::option_kind::value, "K", "40", "top-k (0: off)"},
        {"top-p", 0, cli::option_kind::value, "P", "0.95", "top-p (1: off)"},
        {"min-p", 0, cli::option_kind::value, "P", "0.05", "min-p (0: off)"},
        {"repeat-penalty", 0, cli::option_kind::value, "R", "1.0", "repetition penalty (1: off)"},
        {"seed", 's', cli::option_kind::value, "S", "0", "random seed"},
        {"threads", 't', cli::option_kind::value, "N", "0", "kernel threads (0: one per hardware thread; a call too small to pay for the fan-out runs on one)"},
        {"ids", 0, cli::option_kind::flag, "", "", "print the generated token ids instead of text"},
        {"chat", 0, cli::option_kind::flag, "", "", "render the prompt as a user message with the chat template"},
        {"chat-format", 0, cli::option_kind::value, "NAME", "", "a chat format (chatml, qwen3, llama3.1, mistral, ...), overriding the template's"},
        {"system", 0, cli::option_kind::value, "TEXT", "", "system message (with --chat)"},
        {"ignore-eos", 0, cli::option_kind::flag, "", "", "keep generating past end-of-generation tokens"},
        {"stats", 0, cli::option_kind::flag, "", "", "print prompt and generation speed to stderr"},
    };
    c.run = generate;
    return c;
}

}  // namespace tachyon
