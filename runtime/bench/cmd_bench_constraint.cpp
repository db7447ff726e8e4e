// `tachyon bench constraint`: the cost of computing a constrained-decoding
// mask per token (runtime/constrain/constraint.h), on a GGUF model's vocabulary or on
// a byte-level BPE vocabulary trained in memory. Tool calls and answers are
// sampled with random mask-respecting draws; every fill_mask is timed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>

#include "inference/gguf/gguf.h"
#include "runtime/cli/cli.h"
#include "runtime/constrain/constraint.h"

namespace tachyon {
namespace {

// A byte-level BPE vocabulary of about n_tokens, trained greedily on
// tool-call text (tokens up to 12 bytes), padded with letter pairs.
result<tokenizer> trained_vocab(size_t n_tokens) {
    std::string corpus;
    const char* lines[] = {
        "<tool_call>\n{\"name\": \"search_logs\", \"arguments\": {\"service\": \"checkout\", \"level\": \"ERROR\", \"limit\": 20}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_trace\", \"arguments\": {\"trace_id\": \"t-9f2\"}}\n</tool_call>",
        "{\"root_cause\": \"db_pool_exhausted\", \"service\": \"payments\", \"evidence\": [\"payments:1842\"], \"confidence\": 0.8}",
        "The checkout service shows errors after the deploy; let me look at the payments logs and the trace.",
        "Unicode: naïve café → 日本語 🚀; escapes \\n \\\" \\\\ \\u00e9; numbers 0123456789 -1.5e3 true false null [] {}",
    };
    for (int rep = 0; rep < 3; ++rep)
        for (const char* l : lines) corpus += std::string(l) + "\n";
    std::vector<std::string> seq;
    for (char c : corpus) seq.emplace_back(1, c);
    byte_level_bpe_builder b;
    size_t n = 256;
    for (; n + 3 < n_tokens; ++n) {
        std::map<std::pair<std::string, std::string>, int> counts;
        for (size_t i = 0; i + 1 < seq.size(); ++i) ++counts[{seq[i], seq[i + 1]}];
        std::pair<std::string, std::string> best;
        int best_n = 1;
        for (const auto& [pair, k] : counts)
            if (k > best_n && pair.first.size() + pair.second.size() <= 12 && b.find(pair.first + pair.second) == no_token)
                best = pair, best_n = k;
        if (best_n <= 1) break;
        b.add_merge(best.first, best.second);
        std::vector<std::string> next;
        for (size_t i = 0; i < seq.size(); ++i) {
            if (i + 1 < seq.size() && seq[i] == best.first && seq[i + 1] == best.second) next.push_back(best.first + seq[++i]);
            else next.push_back(seq[i]);
        }
        seq.swap(next);
    }
    for (int x = 0; x < 256 && n + 3 < n_tokens; ++x)
        for (int y = 'a'; y <= 'z' && n + 3 < n_tokens; ++y) {
            const std::string l(1, static_cast<char>(x)), r(1, static_cast<char>(y));
            if (b.find(l + r) == no_token) b.add_merge(l, r), ++n;
        }
    b.add_special("<tool_call>", token_type::user_defined);
    b.add_special("</tool_call>", token_type::user_defined);
    const token_id im_end = b.add_special("<|im_end|>");
    vocab v = b.build("gpt-2");
    v.eos_id = v.eot_id = im_end;
    return tokenizer::create(std::move(v));
}

struct timing {
    std::vector<double> us;
    void print(const char* name) {
        if (us.empty()) return;
        std::sort(us.begin(), us.end());
        double sum = 0;
        for (double v : us) sum += v;
        std::printf("| %-26s | %8zu | %9.2f | %9.2f | %9.2f | %9.2f |\n", name, us.size(), sum / static_cast<double>(us.size()),
                    us[us.size() / 2], us[std::min(us.size() - 1, us.size() * 99 / 100)], us.back());
    }
};

int bench_constraint(const cli::parsed_args& args) {
    auto fail = [](const error& e) {
        std::fprintf(stderr, "error: %s\n", e.describe().c_str());
        return 1;
    };
    auto n_samples = args.get_int("samples");
    auto n_vocab = args.get_int("n-vocab");
    auto seed = args.get_int("seed");
    if (!n_samples.ok()) return fail(n_samples.err());
    if (!n_vocab.ok()) return fail(n_vocab.err());
    if (!seed.ok()) return fail(seed.err());
    std::unique_ptr<tokenizer> tok;
    if (auto path = args.get("vocab")) {
        auto file = gguf_file::open(*path);
        if (!file.ok()) return fail(file.err());
        auto t = tokenizer::from_gguf(**file);
        if (!t.ok()) return fail(t.err());
        tok = std::make_unique<tokenizer>(std::move(*t));
    } else {
        auto t = trained_vocab(static_cast<size_t>(std::max<int64_t>(*n_vocab, 300)));
        if (!t.ok()) return fail(t.err());
        tok = std::make_unique<tokenizer>(std::move(*t));
    }
    auto t0 = std::chrono::steady_clock::now();
    auto index = std::make_shared<const token_index>(*tok);
    const double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    auto schema = [](const char* json) { return std::make_shared<const json_schema>(std::move(*json_schema::parse(json))); };
    std::vector<grammar_tool> tools = {
        {"search_logs", schema(R"({"type": "object", "properties": {"service": {"type": "string", "x-grounded": true},
            "level": {"type": "string", "enum": ["DEBUG", "INFO", "WARN", "ERROR"]}, "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "query": {"type": "string"}}, "required": ["service"], "additionalProperties": false})")},
        {"get_trace", schema(R"({"type": "object", "properties": {"trace_id": {"type": "string", "x-grounded": true}}, "required": ["trace_id"]})")},
    };
    auto answer = schema(R"({"type": "object", "properties": {"root_cause": {"type": "string"}, "service": {"type": "string", "x-grounded": true},
        "evidence": {"type": "array", "items": {"type": "string", "x-grounded": true}, "minItems": 1, "maxItems": 3}},
        "required": ["root_cause", "service", "evidence"]})");
    grounded_values g;
    g.all = {"checkout", "payments", "payments-db", "t-9f2", "t-a01", "payments:1842", "checkout:77"};
    auto grammar = json_grammar::build(tools, answer, g);
    if (!grammar.ok()) return fail(grammar.err());

    std::mt19937 rng(static_cast<uint32_t>(*seed));
    std::vector<uint8_t> mask(tok->n_tokens());
    timing outside, in_call, in_answer;
    std::vector<token_id> allowed;
    std::vector<double> weight;
    // The best of 3 fills of the same state: the machine may be shared, and
    // a preempted fill measures the scheduler, not the mask.
    auto timed_fill = [&](turn_constraint& c, timing& t) {
        double best = 1e30;
        for (int r = 0; r < 3; ++r) {
            const auto s = std::chrono::steady_clock::now();
            c.fill_mask(mask);
            best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count());
        }
        t.us.push_back(best);
    };
    auto draw = [&]() {
        allowed.clear();
        weight.clear();
        for (size_t i = 0; i < mask.size(); ++i) {
            if (!mask[i]) continue;
            const std::string& p = index->piece(static_cast<token_id>(i));
            double w = std::uniform_real_distribution<double>(0.1, 1.0)(rng);
            if (p.find_first_of("\"}]") != std::string::npos || tok->is_eog(static_cast<token_id>(i))) w *= 40;
            allowed.push_back(static_cast<token_id>(i));
            weight.push_back(w);
        }
        std::discrete_distribution<size_t> d(weight.begin(), weight.end());
        return allowed[d(rng)];
    };
    for (int64_t s = 0; s < *n_samples; ++s) {
        turn_constraint c(index, *grammar);
        timed_fill(c, outside);  // the turn's first step (answer check of '{' tokens)
        c.accept_text("Looking.");
        timed_fill(c, outside);
        c.accept_text("\n<tool_call>");
        for (int i = 0; i < 400 && c.in_region(); ++i) {
            timed_fill(c, in_call);
            c.accept(draw());
        }
        turn_constraint a(index, *grammar);
        a.accept_text("{");
        for (int i = 0; i < 400 && a.in_region(); ++i) {
            timed_fill(a, in_answer);
            a.accept(draw());
        }
    }
    std::printf("vocabulary: %zu tokens; index: %zu trie nodes, built in %.1f ms\n", tok->n_tokens(), index->nodes().size(), build_ms);
    std::printf("| %-26s | %8s | %9s | %9s | %9s | %9s |\n", "fill_mask", "calls", "mean µs", "p50 µs", "p99 µs", "max µs");
    const std::string col(11, '-');
    std::printf("|%s|%s|%s|%s|%s|%s|\n", std::string(28, '-').c_str(), std::string(10, '-').c_str(), col.c_str(), col.c_str(),
                col.c_str(), col.c_str());
    outside.print("outside a region");
    in_call.print("inside a tool call");
    in_answer.print("inside a final answer");
    return 0;
}

}  // namespace

cli::command_spec make_bench_constraint_command() {
    cli::command_spec c;
    c.name = "bench constraint";
    c.summary = "per-token cost of constrained-decoding masks (tool calls, final answers)";
    c.options = {
        {"vocab", 0, cli::option_kind::value, "PATH", "", "GGUF file whose tokenizer to use (default: a BPE vocabulary trained in memory)"},
        {"n-vocab", 0, cli::option_kind::value, "N", "2048", "size of the in-memory vocabulary"},
        {"samples", 0, cli::option_kind::value, "N", "50", "sampled tool calls and answers"},
        {"seed", 0, cli::option_kind::value, "S", "1", "random seed"},
    };
    c.run = bench_constraint;
    return c;
}

}  // namespace tachyon
