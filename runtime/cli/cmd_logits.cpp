// `tachyon logits`: the logits a model computes after each position of a
// token sequence, from the normal fast path or from float arithmetic on the
// dequantized weights (--exact). This is how a user holds a GGUF file
// against another engine: write the logits in the TLOG binary format
// (--out), or compare with a reference file written by another engine
// (--compare), or read them as text.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "inference/arch/model.h"
#include "inference/kernels/kernels.h"
#include "inference/kv/kv_cache.h"
#include "runtime/cli/cli.h"
#include "runtime/cli/logits_file.h"

namespace tachyon {
namespace {

int logits_fail(const std::string& message) {
    std::cerr << "tachyon logits: " << message << "\n";
    return 1;
}

// Token ids written as decimal numbers separated by spaces, commas or newlines.
result<std::vector<int32_t>> parse_ids(std::string_view text, std::string_view what) {
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (c == ' ' || c == ',' || c == '\n' || c == '\r' || c == '\t') {
            ++i;
            continue;
        }
        size_t j = i;
        int64_t v = 0;
        while (j < text.size() && text[j] >= '0' && text[j] <= '9' && v <= (int64_t{1} << 31)) v = v * 10 + (text[j++] - '0');
        if (j == i || (j < text.size() && text[j] >= '0' && text[j] <= '9') || v > INT32_MAX ||
            (j < text.size() && std::strchr(" ,\n\r\t", text[j]) == nullptr)) {
            size_t end = i;
            while (end < text.size() && std::strchr(" ,\n\r\t", text[end]) == nullptr) ++end;
            return make_error(errc::invalid_argument, std::string(what) + ": '" + std::string(text.substr(i, end - i)) +
                                                          "' is not a token id (expected non-negative integers separated by spaces)");
        }
        ids.push_back(static_cast<int32_t>(v));
        i = j;
    }
    if (ids.empty()) return make_error(errc::invalid_argument, std::string(what) + ": no token ids");
    return ids;
}

struct logits_request {
    std::vector<int32_t> ids;
    int64_t first_out = 0;  // positions [first_out, ids.size()) get logits
    bool one_by_one = false;
    int max_batch = 512;
    bool f16_kv = true;  // the KV cache in fp16 as the engine holds it; f32 for --exact
};

// Logits after each position of `first_out..`: [n_out, n_vocab].
result<std::vector<float>> compute(model& m, kernel_context& ctx, const logits_request& r) {
    const model_hparams& hp = m.hparams();
    const int64_t n = static_cast<int64_t>(r.ids.size());
    for (size_t i = 0; i < r.ids.size(); ++i) {
        if (r.ids[i] >= hp.n_vocab) {
            return make_error(errc::out_of_range, "--ids: token " + std::to_string(r.ids[i]) + " at position " + std::to_string(i) +
                                                      " is outside the model's vocabulary of " + std::to_string(hp.n_vocab));
        }
    }
    kv_cache_config kc;
    kc.n_layer = hp.n_layer;
    kc.n_kv_embd = hp.n_embd_kv();
    kc.block_size = 16;
    kc.n_blocks = static_cast<int>((n + kc.block_size - 1) / kc.block_size) + 1;
    kc.f16 = r.f16_kv;
    kv_cache kv(kc);
    const seq_id seq = kv.create();
    std::vector<float> out(static_cast<size_t>(n - r.first_out) * static_cast<size_t>(hp.n_vocab));
    float* dst = out.data();
    const int64_t step = r.one_by_one ? 1 : std::max(1, r.max_batch);
    forward_batch b;
    for (int64_t p = 0; p < n; p += step) {
        const int64_t e = std::min(n, p + step);
        b.clear();
        for (int64_t i = p; i < e; ++i) b.add(r.ids[static_cast<size_t>(i)], seq, static_cast<int32_t>(i), i >= r.first_out);
        TACHYON_TRY(kv.reserve(seq, static_cast<int>(e - p)));
        m.forward(ctx, b, kv, dst);
        kv.commit(seq, static_cast<int>(e - p));
        dst += static_cast<size_t>(b.n_logits()) * static_cast<size_t>(hp.n_vocab);
    }
    return out;
}

int run_logits(const cli::parsed_args& args) {
    std::string ids_text;
    if (args.has("ids") == args.has("ids-file")) return logits_fail("give exactly one of --ids \"1 2 3\" or --ids-file FILE");
    std::string ids_what = "--ids";
    if (args.has("ids")) {
        ids_text = *args.get("ids");
    } else {
        ids_what = *args.get("ids-file");
        std::ifstream in(ids_what, std::ios::binary);
        if (!in) return logits_fail(ids_what + ": cannot open for reading");
        std::ostringstream ss;
        ss << in.rdbuf();
        ids_text = ss.str();
    }
    auto ids = parse_ids(ids_text, ids_what);
    if (!ids) return logits_fail(ids.err().message);
    auto threads = args.get_int("threads");
    if (!threads) return logits_fail(threads.err().message);
    if (*threads < 1 || *threads > 256) return logits_fail("-t must be in [1, 256]");
    auto last = args.get_int("last");
    if (!last) return logits_fail(last.err().message);
    auto ctx_size = args.get_int("ctx-size");
    if (!ctx_size) return logits_fail(ctx_size.err().message);
    if (*ctx_size < 0 || *ctx_size > (1 << 24)) return logits_fail("--ctx-size must be in [0, 16777216]");

    load_options lo;
    lo.exact = args.flag("exact");
    lo.n_ctx = static_cast<int>(*ctx_size);
    auto m = load_model(*args.get("model"), lo);
    if (!m) return logits_fail(m.err().message);
    const int n_vocab = (*m)->hparams().n_vocab;

    logits_request r;
    r.ids = std::move(ids).value();
    const int64_t n = static_cast<int64_t>(r.ids.size());
    if (*last < 0) return logits_fail("--last must be >= 0");
    r.first_out = *last == 0 || *last >= n ? 0 : n - *last;
    r.one_by_one = args.flag("one-by-one");
    r.f16_kv = !lo.exact;
    kernel_context ctx(static_cast<int>(*threads));
    auto logits = compute(**m, ctx, r);
    if (!logits) return logits_fail(logits.err().message);
    const auto n_out = static_cast<uint32_t>(n - r.first_out);

    if (args.has("out")) {
        if (auto st = write_logits_file(*args.get("out"), {n_out, static_cast<uint32_t>(n_vocab), *logits}); !st) return logits_fail(st.err().message);
    }
    if (args.has("compare")) {
        auto ref = read_logits_file(*args.get("compare"));
        if (!ref) return logits_fail(ref.err().message);
        auto cmp = compare_logits({n_out, static_cast<uint32_t>(n_vocab), *logits}, *ref);
        if (!cmp) return logits_fail(cmp.err().message);
        char line[160];
        std::snprintf(line, sizeof line, "positions %u, vocabulary %d: relative RMS %.3g, max abs %.3g, argmax equal %d/%u\n", n_out,
                      n_vocab, cmp->rel_rms, cmp->max_abs, cmp->argmax_equal, n_out);
        std::cout << line;
        return 0;
    }
    if (args.has("out")) return 0;
    std::string line;
    char buf[32];
    for (uint32_t p = 0; p < n_out; ++p) {
        const int64_t pos = r.first_out + p;
        line = "pos " + std::to_string(pos) + " token " + std::to_string(r.ids[static_cast<size_t>(pos)]) + " logits";
        const float* row = logits->data() + static_cast<size_t>(p) * static_cast<size_t>(n_vocab);
        for (int v = 0; v < n_vocab; ++v) {
            std::snprintf(buf, sizeof buf, " %.6g", row[v]);
            line += buf;
        }
        line += '\n';
        std::cout << line;
    }
    return 0;
}

}  // namespace

cli::command_spec make_logits_command() {
    cli::command_spec c;
    c.name = "logits";
    c.summary = "print or save the logits a GGUF model computes after each position of a token sequence";
    c.description =
        "Runs the ids through the model (all in one batch of up to 512, or --one-by-one) and writes the logits of every\n"
        "position: as text, one line per position (`pos P token T logits ...`), with --out in the TLOG binary\n"
        "format (magic \"TLOG\", u32 version 1, u32 n_pos, u32 n_vocab, then float32 position-major), or with\n"
        "--compare against such a file written by another engine (relative RMS, max abs difference, argmax\n"
        "agreement). --exact computes in float on the dequantized weights, with no activation quantization and\n"
        "an f32 KV cache: the reference every fast path is held against. Without it the KV cache is fp16, as the\n"
        "engine's.";
    c.options = {
        {"model", 'm', cli::option_kind::value, "PATH", "", "GGUF model file", true},
        {"ids", 0, cli::option_kind::value, "IDS", "", "token ids, e.g. \"1 2 3\""},
        {"ids-file", 0, cli::option_kind::value, "FILE", "", "read the token ids from FILE"},
        {"out", 'o', cli::option_kind::value, "FILE", "", "write the logits in the TLOG binary format"},
        {"compare", 0, cli::option_kind::value, "FILE", "", "compare with a TLOG file and print the differences"},
        {"one-by-one", 0, cli::option_kind::flag, "", "", "feed one token per forward call (the decode path)"},
        {"exact", 0, cli::option_kind::flag, "", "", "float arithmetic on dequantized weights"},
        {"last", 0, cli::option_kind::value, "N", "0", "only the last N positions (0: all)"},
        {"ctx-size", 'c', cli::option_kind::value, "N", "0", "context the model is run at (some RoPE scalings depend on it; 0: the model's default)"},
        {"threads", 't', cli::option_kind::value, "N", "1", "kernel threads"},
    };
    c.run = run_logits;
    return c;
}

}  // namespace tachyon
