// `tachyon inspect`: what a GGUF file holds and whether tachyon runs it —
// the first command to run on a file someone handed you. Reads the
// metadata and tensor table only (the weights stay mapped, unread), then
// binds the model as `run` would, so "supported" means it loads.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "inference/arch/model.h"
#include "inference/gguf/gguf.h"
#include "inference/gguf/tensor_type.h"
#include "inference/kernels/kernels.h"
#include "runtime/formats/chat_format.h"
#include "runtime/cli/cli.h"
#include "runtime/common/json_util.h"

namespace tachyon {
namespace {

using json::quote;

std::string string_or(const gguf_file& f, std::string_view key, std::string fallback = {}) {
    auto v = f.get_string(key);
    return v ? *v : fallback;
}

int inspect_fail(const std::string& message) {
    std::cerr << "tachyon inspect: " << message << "\n";
    return 1;
}

struct type_count {
    int tensors = 0;
    uint64_t bytes = 0;
    uint64_t elements = 0;
};

// A metadata integer `<arch>.<key>`, or `fallback` when absent or not an integer.
int64_t arch_uint(const gguf_file& f, const std::string& arch, const std::string& key, int64_t fallback = 0) {
    auto v = f.get_uint(arch + "." + key);
    return v ? static_cast<int64_t>(*v) : fallback;
}

std::string human_bytes(double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
    return buf;
}

std::string human_count(double n) {
    char buf[32];
    if (n >= 1e9) std::snprintf(buf, sizeof buf, "%.2fB", n / 1e9);
    else if (n >= 1e6) std::snprintf(buf, sizeof buf, "%.1fM", n / 1e6);
    else if (n >= 1e3) std::snprintf(buf, sizeof buf, "%.1fK", n / 1e3);
    else std::snprintf(buf, sizeof buf, "%.0f", n);
    return buf;
}

int run_inspect(const cli::parsed_args& args) {
    const std::string path = *args.positional(0);
    auto opened = gguf_file::open(path);
    if (!opened) return inspect_fail(opened.err().message);
    const gguf_file& f = **opened;
    auto ctx_arg = args.get_int("ctx-size");
    if (!ctx_arg) return inspect_fail(ctx_arg.err().message);
    if (*ctx_arg < 0 || *ctx_arg > (1 << 24)) return inspect_fail("--ctx-size must be in [0, 16777216]");

    const std::string arch = string_or(f, "general.architecture");
    const std::string name = string_or(f, "general.name");
    std::map<std::string, type_count> census;
    uint64_t n_params = 0, weight_bytes = 0;
    std::vector<std::string> unsupported;
    for (const gguf_tensor_info& t : f.tensors()) {
        const auto tr = traits_of(t.type);
        type_count& c = census[std::string(tr.name)];
        const auto n = static_cast<uint64_t>(t.n_elements());
        const uint64_t bytes = tr.block_size > 0 ? n / tr.block_size * tr.type_size : 0;
        ++c.tensors;
        c.bytes += bytes;
        c.elements += n;
        n_params += n;
        weight_bytes += bytes;
        const bool is_matrix = t.shape.size() >= 2;
        if (!tr.supported || (is_matrix && !has_kernels(t.type))) unsupported.push_back(t.name + " (" + std::string(tr.name) + ")");
    }

    // Shapes from the metadata, so a file that does not load is still described.
    const int64_t n_embd = arch_uint(f, arch, "embedding_length");
    const int64_t n_layer = arch_uint(f, arch, "block_count");
    const int64_t n_head = arch_uint(f, arch, "attention.head_count");
    const int64_t n_head_kv = arch_uint(f, arch, "attention.head_count_kv", n_head);
    const int64_t head_k = arch_uint(f, arch, "attention.key_length", n_head > 0 ? n_embd / n_head : 0);
    const int64_t head_v = arch_uint(f, arch, "attention.value_length", head_k);
    const int64_t n_ff = arch_uint(f, arch, "feed_forward_length");
    const int64_t n_ctx_train = arch_uint(f, arch, "context_length");
    int64_t n_vocab = 0;
    if (const gguf_tensor_info* e = f.find_tensor("token_embd.weight"); e && e->shape.size() == 2) n_vocab = e->shape[1];
    const int64_t n_ctx = *ctx_arg > 0 ? *ctx_arg : (n_ctx_train > 0 ? std::min<int64_t>(n_ctx_train, 4096) : 4096);
    // The KV cache holds fp16 keys and values of every layer (f32 with --kv-f32).
    const uint64_t kv_bytes = static_cast<uint64_t>(n_layer) * static_cast<uint64_t>(n_ctx) * static_cast<uint64_t>(n_head_kv) *
                              static_cast<uint64_t>(head_k + head_v) * (args.flag("kv-f32") ? 4 : 2);

    const std::string tok_model = string_or(f, "tokenizer.ggml.model");
    const std::string tok_pre = string_or(f, "tokenizer.ggml.pre", tok_model == "gpt2" ? "default" : "");
    const auto tmpl = f.get_string("tokenizer.chat_template");
    std::string chat, tool_calls, chat_note;
    if (!tmpl) {
        chat_note = "the file has no tokenizer.chat_template";
    } else if (auto fmt = detect_chat_format(*tmpl)) {
        chat = std::string(to_string(*fmt));
        tool_calls = describe_tool_calls(*fmt);
    } else {
        chat_note = fmt.err().message;
    }

    std::string load_error;
    // Loaded from the path again (the mapping is shared by the OS): `f` stays
    // valid for the report below whatever the load does with its file.
    if (auto m = load_model(path); !m) load_error = m.err().message;
    const bool supported = load_error.empty();

    if (args.flag("json")) {
        std::string o = "{\"file\": " + quote(path);
        o += ", \"bytes\": " + std::to_string(std::filesystem::file_size(path));
        o += ", \"architecture\": " + quote(arch) + ", \"name\": " + quote(name);
        o += ", \"n_vocab\": " + std::to_string(n_vocab) + ", \"n_embd\": " + std::to_string(n_embd) + ", \"n_layer\": " + std::to_string(n_layer);
        o += ", \"n_head\": " + std::to_string(n_head) + ", \"n_head_kv\": " + std::to_string(n_head_kv);
        o += ", \"head_dim\": " + std::to_string(head_k) + ", \"n_ff\": " + std::to_string(n_ff);
        o += ", \"context_length\": " + std::to_string(n_ctx_train) + ", \"n_params\": " + std::to_string(n_params);
        o += ", \"tensor_types\": {";
        bool first = true;
        for (const auto& [t, c] : census) {
            o += (first ? "" : ", ") + quote(t) + ": {\"tensors\": " + std::to_string(c.tensors) + ", \"bytes\": " + std::to_string(c.bytes) + "}";
            first = false;
        }
        o += "}, \"tokenizer\": {\"model\": " + quote(tok_model) + ", \"pre\": " + quote(tok_pre) + "}";
        o += ", \"chat_format\": " + (chat.empty() ? std::string("null") : quote(chat));
        o += ", \"tool_call_format\": " + (tool_calls.empty() ? std::string("null") : quote(tool_calls));
        if (!chat_note.empty()) o += ", \"chat_format_note\": " + quote(chat_note);
        o += ", \"memory\": {\"n_ctx\": " + std::to_string(n_ctx) + ", \"weights_bytes\": " + std::to_string(weight_bytes) +
             ", \"kv_bytes\": " + std::to_string(kv_bytes) + ", \"total_bytes\": " + std::to_string(weight_bytes + kv_bytes) + "}";
        o += ", \"supported\": " + std::string(supported ? "true" : "false");
        if (!supported) o += ", \"error\": " + quote(load_error);
        o += ", \"unsupported_tensors\": [";
        for (size_t i = 0; i < unsupported.size(); ++i) o += (i ? ", " : "") + quote(unsupported[i]);
        o += "]}\n";
        std::cout << o;
        return supported ? 0 : 1;
    }

    std::ostringstream os;
    os << path << " (" << human_bytes(static_cast<double>(std::filesystem::file_size(path))) << ", GGUF v" << f.version() << ")\n";
    os << "  architecture   " << (arch.empty() ? "(none)" : arch) << (name.empty() ? "" : "  \"" + name + "\"") << "\n";
    os << "  parameters     " << human_count(static_cast<double>(n_params)) << " (" << n_params << ")\n";
    os << "  shape          vocab " << n_vocab << ", embd " << n_embd << ", layers " << n_layer << ", heads " << n_head << "/" << n_head_kv
       << " (q/kv), head_dim " << head_k << ", ffn " << n_ff << "\n";
    os << "  context        " << n_ctx_train << " trained\n";
    os << "  tensor types  ";
    for (const auto& [t, c] : census) os << " " << t << " " << c.tensors << " (" << human_bytes(static_cast<double>(c.bytes)) << ")";
    os << "\n";
    os << "  tokenizer      " << (tok_model.empty() ? "(none)" : tok_model) << (tok_pre.empty() ? "" : ", pre-tokenizer " + tok_pre) << "\n";
    os << "  chat format    " << (chat.empty() ? "(none: " + chat_note + ")" : chat + ", tool calls: " + tool_calls) << "\n";
    os << "  memory         " << human_bytes(static_cast<double>(weight_bytes + kv_bytes)) << " at " << n_ctx << " tokens (weights "
       << human_bytes(static_cast<double>(weight_bytes)) << " + KV " << human_bytes(static_cast<double>(kv_bytes)) << ")\n";
    os << "  supported      " << (supported ? "yes" : "no: " + load_error) << "\n";
    constexpr size_t max_listed = 16;
    for (size_t i = 0; i < unsupported.size() && i < max_listed; ++i) os << "    unsupported tensor " << unsupported[i] << "\n";
    if (unsupported.size() > max_listed) os << "    ... and " << unsupported.size() - max_listed << " more\n";
    std::cout << os.str();
    return supported ? 0 : 1;
}

}  // namespace

cli::command_spec make_inspect_command() {
    cli::command_spec c;
    c.name = "inspect";
    c.summary = "describe a GGUF file: architecture, shapes, tensor types, tokenizer, chat format, memory, support";
    c.description = "Exits 0 when tachyon loads the model, 1 when it does not (the reason is printed).";
    c.positionals = {{"MODEL.gguf", "the GGUF file"}};
    c.options = {
        {"json", 0, cli::option_kind::flag, "", "", "one JSON object instead of text"},
        {"ctx-size", 'c', cli::option_kind::value, "N", "0", "context for the memory estimate (0: the trained context, at most 4096)"},
        {"kv-f32", 0, cli::option_kind::flag, "", "", "estimate an f32 KV cache (the engines' --kv-f32) instead of fp16"},
    };
    c.run = run_inspect;
    return c;
}

}  // namespace tachyon
