#include "runtime/constrain/constraint.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <random>

#include <unistd.h>

#include "inference/gguf/gguf.h"
#include "inference/gguf/model_writer.h"
#include "runtime/formats/tool_call_parser.h"

using namespace tachyon;
namespace fs = std::filesystem;

namespace {

// A small byte-level BPE vocabulary trained in memory on tool-call text:
// tokens span JSON punctuation, keys and values ("\": \"", "search_logs"),
// as a real model's do. ~2k tokens.
struct test_vocab {
    std::shared_ptr<const tokenizer> tok;
    token_id tool_call = no_token, im_end = no_token;
};

const test_vocab& small_vocab() {
    static const test_vocab v = [] {
        std::string corpus;
        const char* lines[] = {
            "<tool_call>\n{\"name\": \"search_logs\", \"arguments\": {\"service\": \"checkout\", \"level\": \"ERROR\", \"limit\": 20}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"get_trace\", \"arguments\": {\"trace_id\": \"t-9f2\"}}\n</tool_call>",
            "{\"root_cause\": \"db_pool_exhausted\", \"service\": \"payments\", \"evidence\": [\"payments:1842\", \"checkout:77\"], \"confidence\": 0.8}",
            "The checkout service shows errors after the deploy; let me look at the payments logs and the trace.",
            "Ünïcödé → 日本語, naïve café, emoji 🚀 and escapes \\n \\\" \\\\ \\u00e9 in strings 0123456789 -1.5e3 true false null [] {}",
        };
        for (int rep = 0; rep < 3; ++rep)
            for (const char* l : lines) corpus += std::string(l) + "\n";
        // Greedy BPE: merge the most frequent adjacent pair (up to 12 bytes) until ~2000 tokens.
        std::vector<std::string> seq;
        for (char c : corpus) seq.emplace_back(1, c);
        byte_level_bpe_builder b;
        std::map<std::pair<std::string, std::string>, int> counts;
        for (int n_tokens = 256; n_tokens < 1990; ++n_tokens) {
            counts.clear();
            for (size_t i = 0; i + 1 < seq.size(); ++i) ++counts[{seq[i], seq[i + 1]}];
            std::pair<std::string, std::string> best;
            int best_n = 1;
            for (const auto& [pair, n] : counts)
                if (n > best_n && pair.first.size() + pair.second.size() <= 12 && b.find(pair.first + pair.second) == no_token)
                    best = pair, best_n = n;
            if (best_n <= 1) break;
            b.add_merge(best.first, best.second);
            std::vector<std::string> next;
            for (size_t i = 0; i < seq.size(); ++i) {
                if (i + 1 < seq.size() && seq[i] == best.first && seq[i + 1] == best.second) {
                    next.push_back(best.first + best.second);
                    ++i;
                } else {
                    next.push_back(seq[i]);
                }
            }
            seq.swap(next);
        }
        // Pad with two-byte merges to reach ~2k tokens, as a real vocabulary has many.
        for (int x = 'a'; x <= 'z' && b.build().n_tokens() < 1990; ++x)
            for (int y = 'a'; y <= 'z'; ++y) b.add_merge(std::string(1, static_cast<char>(x)), std::string(1, static_cast<char>(y)));
        test_vocab out;
        out.tool_call = b.add_special("<tool_call>", token_type::user_defined);
        b.add_special("</tool_call>", token_type::user_defined);
        out.im_end = b.add_special("<|im_end|>");
        vocab voc = b.build("gpt-2");
        voc.eos_id = out.im_end;
        voc.eot_id = out.im_end;
        auto t = tokenizer::create(voc);
        REQUIRE(t.ok());
        out.tok = std::make_shared<const tokenizer>(std::move(*t));
        return out;
    }();
    return v;
}

std::shared_ptr<const json_schema> schema(const char* json, const char* label) {
    auto s = json_schema::parse(json, label);
    REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.err().message));
    return std::make_shared<const json_schema>(std::move(*s));
}

std::vector<grammar_tool> test_tools() {
    return {
        {"search_logs", schema(R"({"type": "object", "properties": {
            "service": {"type": "string", "x-grounded": true},
            "level": {"type": "string", "enum": ["DEBUG", "INFO", "WARN", "ERROR"]},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "query": {"type": "string", "maxLength": 12},
            "since": {"type": ["integer", "null"], "minimum": -5, "exclusiveMaximum": 1000}},
            "required": ["service"], "additionalProperties": false})", "search_logs")},
        {"get_trace", schema(R"({"type": "object", "properties": {"trace_id": {"type": "string", "x-grounded": true}},
            "required": ["trace_id"], "additionalProperties": false})", "get_trace")},
        {"compare", schema(R"({"type": "object", "properties": {
            "lines": {"type": "array", "items": {"type": "string", "x-grounded": true}, "minItems": 1, "maxItems": 3},
            "window": {"type": "object", "properties": {"from": {"type": "number"}, "exact": {"type": "boolean"}},
                       "required": ["from"]},
            "note": {"type": "string", "minLength": 2}},
            "required": ["lines", "window"]})", "compare")},
        {"note", nullptr},  // no schema: any object
    };
}

grounded_values test_grounding() {
    grounded_values g;
    g.all = {"checkout", "payments", "payments-db", "t-9f2", "t-a01", "payments:1842", "checkout:77", "quote\"d"};
    g.by_path["trace_id"] = {"t-9f2", "t-a01"};
    return g;
}

// Draws tokens under the mask with random weights, favouring tokens that
// close strings and containers so that samples end.
token_id draw(const std::vector<uint8_t>& mask, const tokenizer& tok, std::mt19937& rng) {
    std::vector<token_id> allowed;
    std::vector<double> weight;
    for (size_t i = 0; i < mask.size(); ++i) {
        if (!mask[i]) continue;
        const std::string p = tok.token_to_piece(static_cast<token_id>(i));
        double w = std::uniform_real_distribution<double>(0.1, 1.0)(rng);
        if (p.find_first_of("\"}]") != std::string::npos || tok.is_eog(static_cast<token_id>(i))) w *= 40;
        allowed.push_back(static_cast<token_id>(i));
        weight.push_back(w);
    }
    REQUIRE_MESSAGE(!allowed.empty(), "the mask allows no token");
    std::discrete_distribution<size_t> d(weight.begin(), weight.end());
    return allowed[d(rng)];
}

// Samples one tool call after "<tool_call>"; returns the text after the trigger.
std::string sample_call(turn_constraint& c, const tokenizer& tok, std::mt19937& rng, int max_tokens = 600) {
    std::vector<uint8_t> mask(tok.n_tokens());
    std::string text;
    for (int i = 0; i < max_tokens && c.in_region(); ++i) {
        c.fill_mask(mask);
        for (token_id e : {tok.eos(), tok.eot()})
            if (e != no_token) REQUIRE_MESSAGE(mask[static_cast<size_t>(e)] == 0, "end of turn allowed inside a call");
        const token_id t = draw(mask, tok, rng);
        c.accept(t);
        text += tok.token_to_piece(t);
    }
    return text;
}

void check_sampled_calls(const tokenizer& tok, int n_samples, uint32_t seed) {
    auto index = std::make_shared<const token_index>(tok);
    const auto tools = test_tools();
    const auto grounding = test_grounding();
    auto grammar = json_grammar::build(tools, nullptr, grounding);
    REQUIRE(grammar.ok());
    std::mt19937 rng(seed);
    std::map<std::string, int> seen_tools;
    for (int s = 0; s < n_samples; ++s) {
        turn_constraint c(index, *grammar);
        c.accept_text("Checking.\n<tool_call>");
        REQUIRE(c.in_region());
        const std::string body = sample_call(c, tok, rng);
        REQUIRE_MESSAGE(!c.in_region(), "call did not end: " << body);
        // The text parses as one call naming a registered tool with valid arguments.
        // The last token may carry text after the call's end.
        tool_call_parser p;
        std::vector<tool_call_event> ev;
        p.feed("<tool_call>" + body, ev);
        p.finish(ev);
        REQUIRE_MESSAGE((ev.size() == 1 || (ev.size() == 2 && ev[1].type == tool_call_event::kind::text)), body);
        const std::string call = body.substr(0, body.rfind("</tool_call>") + 12);
        REQUIRE_MESSAGE(ev[0].type == tool_call_event::kind::call_complete, ev[0].message << "\n" << body);
        CHECK(call.rfind("\n{\"name\": \"", 0) == 0);
        CHECK(call.ends_with("}\n</tool_call>"));
        const grammar_tool* tool = nullptr;
        for (const auto& t : tools)
            if (t.name == ev[0].name) tool = &t;
        REQUIRE_MESSAGE(tool != nullptr, "unregistered tool " << ev[0].name);
        ++seen_tools[tool->name];
        if (tool->schema) {
            auto v = tool->schema->validate(ev[0].arguments_json, &grounding);
            CHECK_MESSAGE(v.ok(), (v.ok() ? "" : v.err().message) << "\n" << body);
        } else {
            CHECK(ev[0].arguments_json.front() == '{');
        }
    }
    CHECK(seen_tools.size() == tools.size());  // every tool was drawn at some point
}

}  // namespace

TEST_CASE("sampled tool calls are valid JSON naming a registered tool, with schema-valid grounded arguments") {
    check_sampled_calls(*small_vocab().tok, 300, 1234);
}

TEST_CASE("the region starts at the <tool_call> token, inactive outside, and ends after </tool_call>") {
    const auto& v = small_vocab();
    auto index = std::make_shared<const token_index>(*v.tok);
    auto grammar = json_grammar::build(test_tools(), nullptr, test_grounding());
    REQUIRE(grammar.ok());
    turn_constraint c(index, *grammar);
    std::vector<uint8_t> mask(v.tok->n_tokens());
    c.fill_mask(mask);
    CHECK(std::count(mask.begin(), mask.end(), 1) == static_cast<long>(mask.size()));  // free text, EOS included
    c.accept(v.tool_call);
    CHECK(c.in_region());
    CHECK(c.forced_continuation() == "\n{\"name\": \"");
    c.fill_mask(mask);
    CHECK(mask[static_cast<size_t>(v.im_end)] == 0);
    CHECK(mask[static_cast<size_t>(v.tool_call)] == 0);
    CHECK(mask['\n'] == 1);
    CHECK(mask['{'] == 0);
    c.accept_text("\n{\"name\": \"get_");
    CHECK(c.forced_continuation() == "trace\", \"arguments\": {\"trace_id\": \"t-");
    c.accept_text("trace\", \"arguments\": {\"trace_id\": \"t-");
    c.fill_mask(mask);
    CHECK(mask['9'] == 1);
    CHECK(mask['a'] == 1);
    CHECK(mask['b'] == 0);  // no candidate "t-b..."
    c.accept_text("9");
    CHECK(c.forced_continuation() == "f2\"}}\n</tool_call>");
    c.accept_text("f2\"}}\n</tool_call>");
    CHECK_FALSE(c.in_region());
    CHECK_FALSE(c.broken());
    c.fill_mask(mask);
    CHECK(mask[static_cast<size_t>(v.im_end)] == 1);
}

TEST_CASE("keys: any order, no duplicates, required before the object closes, integers within bounds") {
    const auto& v = small_vocab();
    auto index = std::make_shared<const token_index>(*v.tok);
    auto grammar = json_grammar::build(test_tools(), nullptr, test_grounding());
    REQUIRE(grammar.ok());
    turn_constraint c(index, *grammar);
    std::vector<uint8_t> mask(v.tok->n_tokens());
    c.accept_text("<tool_call>\n{\"name\": \"search_logs\", \"arguments\": {");
    c.fill_mask(mask);
    CHECK(mask['}'] == 0);  // "service" is required
    c.accept_text("\"level\": \"ERROR\", ");
    CHECK(c.forced_continuation() == "\"");
    c.accept_text("\"l");
    CHECK(c.forced_continuation() == "imit\": ");  // "level" is taken
    c.accept_text("imit\": 5");
    c.fill_mask(mask);
    CHECK(mask['0'] == 1);   // 50
    CHECK(mask['1'] == 0);   // 51 > 50
    CHECK(mask[','] == 1);
    CHECK(mask['}'] == 0);   // still no service
    c.accept_text("0, \"service\": \"pay");
    c.fill_mask(mask);
    CHECK(mask['m'] == 1);
    CHECK(mask['x'] == 0);   // not a grounded value
    c.accept_text("ments\"");
    c.fill_mask(mask);
    CHECK(mask['}'] == 1);
    CHECK(mask[','] == 1);
    c.accept_text(", \"since\": -");
    c.fill_mask(mask);
    CHECK(mask['5'] == 1);
    CHECK(mask['6'] == 0);   // minimum -5
    CHECK(mask['0'] == 0);   // no "-0"
    CHECK_FALSE(c.broken());
}

TEST_CASE("final answer: a turn starting with '{' follows the output schema, then only end of turn") {
    const auto& v = small_vocab();
    auto index = std::make_shared<const token_index>(*v.tok);
    auto answer = schema(R"({"type": "object", "properties": {
        "root_cause": {"type": "string", "enum": ["db_pool_exhausted", "bad_deploy", "network"]},
        "service": {"type": "string", "x-grounded": true},
        "evidence": {"type": "array", "items": {"type": "string", "x-grounded": true}, "minItems": 1, "maxItems": 3},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
        "required": ["root_cause", "service", "evidence"], "additionalProperties": false})", "final answer");
    grounded_values g;
    g.by_path["service"] = {"checkout", "payments"};
    g.by_path["evidence[]"] = {"payments:1842", "checkout:77"};
    auto grammar = json_grammar::build(test_tools(), answer, g);
    REQUIRE(grammar.ok());
    std::mt19937 rng(99);
    std::vector<uint8_t> mask(v.tok->n_tokens());
    for (int s = 0; s < 150; ++s) {
        turn_constraint c(index, *grammar);
        c.fill_mask(mask);
        // Start the answer: draw among the allowed tokens that open it.
        std::vector<uint8_t> open(mask.size(), 0);
        for (token_id t : index->brace_tokens()) open[static_cast<size_t>(t)] = mask[static_cast<size_t>(t)];
        token_id t = draw(open, *v.tok, rng);
        std::string text;
        for (int i = 0; i < 600 && !v.tok->is_eog(t); ++i) {
            c.accept(t);
            text += v.tok->token_to_piece(t);
            REQUIRE(c.current_region() != turn_constraint::region::none);
            c.fill_mask(mask);
            t = draw(mask, *v.tok, rng);
        }
        REQUIRE_MESSAGE(v.tok->is_eog(t), text);
        CHECK(c.current_region() == turn_constraint::region::answer_done);
        auto r = answer->validate(text, &g);
        CHECK_MESSAGE(r.ok(), (r.ok() ? "" : r.err().message) << "\n" << text);
    }
}

TEST_CASE("a turn that does not start with '{' is free text, answers only constrain the first byte") {
    const auto& v = small_vocab();
    auto index = std::make_shared<const token_index>(*v.tok);
    auto answer = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})", "final answer");
    auto grammar = json_grammar::build({}, answer, {});
    REQUIRE(grammar.ok());
    turn_constraint c(index, *grammar);
    std::vector<uint8_t> mask(v.tok->n_tokens());
    c.fill_mask(mask);
    CHECK(mask['{'] == 1);
    CHECK(mask['T'] == 1);
    CHECK(c.forced_continuation().empty());
    c.accept_text("{");
    CHECK(c.forced_continuation() == "\"a\": ");
    c.accept_text("\"a\": 7}");
    CHECK(c.current_region() == turn_constraint::region::answer_done);
    c.fill_mask(mask);
    CHECK(std::count(mask.begin(), mask.end(), 1) == 1);
    CHECK(mask[static_cast<size_t>(v.im_end)] == 1);
    turn_constraint text(index, *grammar);
    text.accept_text("The answer {is} <tool_call> free");  // no tools: the trigger does nothing
    text.fill_mask(mask);
    CHECK(std::count(mask.begin(), mask.end(), 1) == static_cast<long>(mask.size()));
}

TEST_CASE("the mask callback adapter accepts generated tokens, and text outside the mask stops the constraint") {
    const auto& v = small_vocab();
    auto index = std::make_shared<const token_index>(*v.tok);
    auto grammar = json_grammar::build(test_tools(), nullptr, test_grounding());
    REQUIRE(grammar.ok());
    turn_constraint c(index, *grammar);
    auto cb = c.as_mask_callback();
    std::vector<uint8_t> mask(v.tok->n_tokens(), 1);
    std::vector<int32_t> generated{v.tool_call};
    cb(generated, mask);
    CHECK(c.in_region());
    CHECK(mask[static_cast<size_t>(v.im_end)] == 0);
    generated.push_back('x');  // the caller ignored the mask
    cb(generated, mask);
    CHECK(c.broken());
    CHECK(std::count(mask.begin(), mask.end(), 1) == static_cast<long>(mask.size()));
}

TEST_CASE("GPT-2 vocabulary (50k tokens): sampled calls stay valid") {
    const fs::path path = fs::path(TACHYON_CONFORMANCE_DIR) / "tokenizer" / "ggml-vocab-gpt-2.gguf";
    if (!fs::exists(path)) {
        MESSAGE("skipped: " << path << " absent");
        return;
    }
    auto file = gguf_file::open(path.string());
    REQUIRE(file.ok());
    auto tok = tokenizer::from_gguf(**file);
    REQUIRE(tok.ok());
    check_sampled_calls(*tok, 40, 77);
}

TEST_CASE("the mask allows exactly the tokens whose bytes the grammar accepts") {
    const auto& v = small_vocab();
    auto index = std::make_shared<const token_index>(*v.tok);
    auto answer = schema(R"({"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "string", "x-grounded": true}},
        "n": {"type": "number", "minimum": -2.5, "maximum": 10}}, "required": ["ids"]})", "final answer");
    auto grammar = json_grammar::build(test_tools(), answer, test_grounding());
    REQUIRE(grammar.ok());
    std::mt19937 rng(5);
    std::vector<uint8_t> mask(v.tok->n_tokens());
    for (int s = 0; s < 6; ++s) {
        turn_constraint c(index, *grammar);
        if (s % 2 == 0) c.accept_text("x <tool_call>");
        for (int step = 0; step < 30 && c.current_region() != turn_constraint::region::none; ++step) {
            c.fill_mask(mask);
            for (size_t t = 0; t < mask.size(); ++t) {
                turn_constraint probe = c;
                probe.accept(static_cast<token_id>(t));
                REQUIRE_MESSAGE(mask[t] == (probe.broken() ? 0 : 1), "token " << t << " '" << index->piece(static_cast<token_id>(t)) << "'");
            }
            const token_id t = draw(mask, *v.tok, rng);
            if (v.tok->is_eog(t)) break;
            c.accept(t);
            if (step == 0 && s % 2 == 1 && !c.in_region()) break;  // drew free text instead of an answer
        }
    }
}

TEST_CASE("strings never hold a raw tool-call tag, which the parser would cut at") {
    const auto& v = small_vocab();
    auto index = std::make_shared<const token_index>(*v.tok);
    auto grammar = json_grammar::build(test_tools(), nullptr, test_grounding());
    REQUIRE(grammar.ok());
    turn_constraint c(index, *grammar);
    std::vector<uint8_t> mask(v.tok->n_tokens());
    c.accept_text("<tool_call>\n{\"name\": \"search_logs\", \"arguments\": {\"service\": \"checkout\", \"query\": \"a</tool_call");
    c.fill_mask(mask);
    CHECK(mask['>'] == 0);
    CHECK(mask['"'] == 1);
    const token_id close_tag = v.tok->find_token("</tool_call>");
    CHECK(mask[static_cast<size_t>(close_tag)] == 0);
    CHECK_FALSE(c.broken());
}

TEST_CASE("the token index groups every piece in a byte trie with contiguous subtrees") {
    const auto& v = small_vocab();
    const token_index index(*v.tok);
    const auto& nodes = index.nodes();
    size_t n_pieces = 0;
    for (size_t t = 0; t < v.tok->n_tokens(); ++t) n_pieces += !index.piece(static_cast<token_id>(t)).empty();
    CHECK(index.order().size() == n_pieces);
    CHECK(nodes[0].sub_end == n_pieces);
    CHECK(index.piece(v.im_end).empty());  // control tokens are not text
    CHECK(std::find(index.eog_tokens().begin(), index.eog_tokens().end(), v.im_end) != index.eog_tokens().end());
    // Walking down by a token's bytes reaches a node whose own range holds it.
    for (token_id t : {token_id{'a'}, v.tool_call, v.tok->find_token("</tool_call>")}) {
        const std::string& p = index.piece(t);
        uint32_t n = 0;
        for (char ch : p) {
            uint32_t next = 0;
            for (uint32_t c = nodes[n].first_child; c < nodes[n].first_child + nodes[n].n_children; ++c)
                if (nodes[c].byte == static_cast<uint8_t>(ch)) next = c;
            REQUIRE(next != 0);
            n = next;
        }
        bool found = false;
        for (uint32_t i = nodes[n].tok_begin; i < nodes[n].tok_end; ++i) found = found || index.order()[i] == t;
        CHECK(found);
    }
}

TEST_CASE("through the engine's mask callback, a random-weight model writes only valid calls") {
    const auto& v = small_vocab();
    synthetic_llama_shape shape;
    shape.n_vocab = static_cast<int>(v.tok->n_tokens());
    shape.n_embd = 64;
    shape.n_layer = 2;
    shape.n_head = 4;
    shape.n_head_kv = 2;
    shape.n_ff = 96;
    shape.n_ctx = 1024;
    const std::string path = (fs::temp_directory_path() / ("tachyon_constraint_" + std::to_string(::getpid()) + ".gguf")).string();
    REQUIRE(write_synthetic_llama(path, shape, tensor_type::f32, 11).ok());
    engine_options o;
    o.n_ctx = 1024;
    auto e = engine::open(path, o);
    fs::remove(path);
    REQUIRE_MESSAGE(e.ok(), (e.ok() ? "" : e.err().message));
    auto index = std::make_shared<const token_index>(*v.tok);
    auto tools = test_tools();
    tools.resize(2);  // search_logs and get_trace: bounded strings, so calls end within the budget
    const auto grounding = test_grounding();
    auto grammar = json_grammar::build(tools, nullptr, grounding);
    REQUIRE(grammar.ok());
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        turn_constraint c(index, *grammar);
        c.accept(v.tool_call);  // the prompt ends with the trigger: the region starts now
        const session_id s = (*e)->create_session();
        std::string text;
        request r;
        r.session = s;
        r.append = {v.tool_call};
        r.max_tokens = 400;
        r.sampling.temperature = 2.0f;
        r.sampling.top_k = 0;
        r.sampling.top_p = 1.0f;
        r.sampling.min_p = 0.0f;
        r.sampling.seed = seed;
        r.constrain = c.as_mask_callback();
        r.on_token = [&](int32_t t) {
            text += v.tok->token_to_piece(t);
            return text.find("</tool_call>") == std::string::npos;
        };
        const request_stats stats = (*e)->run(std::move(r));
        (*e)->close_session(s);
        REQUIRE_MESSAGE(stats.finish == finish_reason::stop, stats.error << " after " << text);
        tool_call_parser p;
        std::vector<tool_call_event> ev;
        p.feed("<tool_call>" + text, ev);
        p.finish(ev);
        REQUIRE_MESSAGE(!ev.empty(), text);
        REQUIRE_MESSAGE(ev[0].type == tool_call_event::kind::call_complete, ev[0].message << "\n" << text);
        const grammar_tool* tool = ev[0].name == "search_logs" ? &tools[0] : &tools[1];
        auto valid = tool->schema->validate(ev[0].arguments_json, &grounding);
        CHECK_MESSAGE(valid.ok(), (valid.ok() ? "" : valid.err().message));
    }
}

namespace {

// Whether the answer automaton accepts `text` whole.
bool answer_accepts(const std::shared_ptr<const json_grammar>& g, std::string_view text) {
    json_automaton a(g.get());
    a.start_answer();
    return a.advance(text) && a.done();
}

}  // namespace

TEST_CASE("x-grounded-with: values are narrowed to those seen on a line with the anchor's chosen value") {
    auto answer = schema(R"({"type": "object", "properties": {
        "service": {"type": "string", "x-grounded": true},
        "since": {"type": "string", "x-grounded": true, "x-grounded-with": "service"},
        "evidence": {"type": "array", "items": {"type": "string", "x-grounded": true, "x-grounded-with": "service"}}},
        "required": ["service", "since", "evidence"], "additionalProperties": false})", "final answer");
    grounded_values g;
    g.by_path["service"] = {"payments", "checkout", "search"};
    g.by_path["since"] = {"14:05:01", "14:05:09", "14:20:00"};
    g.by_path["evidence[]"] = {"payments:12", "checkout:40", "checkout:41"};
    g.texts = {"payments: first error 14:05:01, see payments:12\ncheckout: first error 14:05:09, calls payments-db",
               "checkout:40 14:05:09 timeout\ncheckout:41 14:06:00 timeout"};
    auto grammar = json_grammar::build({}, answer, g);
    REQUIRE(grammar.ok());
    // payments: only the time and the line on its own line ("payments-db" is another word)
    CHECK(answer_accepts(*grammar, R"({"service": "payments", "since": "14:05:01", "evidence": ["payments:12"]})"));
    CHECK_FALSE(answer_accepts(*grammar, R"({"service": "payments", "since": "14:05:09", "evidence": ["payments:12"]})"));
    CHECK_FALSE(answer_accepts(*grammar, R"({"service": "payments", "since": "14:05:01", "evidence": ["checkout:40"]})"));
    // checkout: its lines, including the ones its line ids start
    CHECK(answer_accepts(*grammar, R"({"service": "checkout", "since": "14:05:09", "evidence": ["checkout:40", "checkout:41"]})"));
    CHECK_FALSE(answer_accepts(*grammar, R"({"service": "checkout", "since": "14:05:01", "evidence": ["checkout:40"]})"));
    CHECK_FALSE(answer_accepts(*grammar, R"({"service": "checkout", "since": "14:05:09", "evidence": ["payments:12"]})"));
    // search is on no line with a value: every grounded value stays open
    CHECK(answer_accepts(*grammar, R"({"service": "search", "since": "14:20:00", "evidence": ["payments:12"]})"));
    // written before the anchor: not narrowed
    CHECK(answer_accepts(*grammar, R"({"since": "14:20:00", "evidence": ["checkout:41"], "service": "payments"})"));
    // grounding itself still holds
    CHECK_FALSE(answer_accepts(*grammar, R"({"service": "payments", "since": "14:99:99", "evidence": ["payments:12"]})"));
    // the forced continuation follows the narrowed list: one candidate is written out
    turn_constraint c(std::make_shared<const token_index>(*small_vocab().tok), *grammar);
    c.accept_text(R"({"service": "payments", "since": ")");
    CHECK(c.forced_continuation().starts_with("14:05:01\""));
}

TEST_CASE("uniqueItems: an item chosen from a list cannot repeat an earlier one, also when narrowed") {
    auto answer = schema(R"({"type": "object", "properties": {
        "service": {"type": "string", "x-grounded": true},
        "levels": {"type": "array", "uniqueItems": true, "items": {"enum": ["ERROR", "WARN", "WARNING"]}},
        "evidence": {"type": "array", "uniqueItems": true, "items": {"type": "string", "x-grounded": true, "x-grounded-with": "service"}},
        "notes": {"type": "array", "items": {"enum": ["a", "b"]}}},
        "required": ["service"], "additionalProperties": false})", "final answer");
    grounded_values g;
    g.by_path["service"] = {"checkout", "payments"};
    g.by_path["evidence[]"] = {"checkout:40", "checkout:41", "payments:12"};
    g.texts = {"checkout:40 timeout\ncheckout:41 timeout\npayments:12 refused"};
    auto grammar = json_grammar::build({}, answer, g);
    REQUIRE(grammar.ok());
    CHECK(answer_accepts(*grammar, R"({"service": "checkout", "levels": ["ERROR", "WARN", "WARNING"]})"));
    CHECK_FALSE(answer_accepts(*grammar, R"({"service": "checkout", "levels": ["WARN", "ERROR", "WARN"]})"));
    // a candidate that is a prefix of another ("WARN" of "WARNING") stays excluded on its own only
    CHECK(answer_accepts(*grammar, R"({"service": "checkout", "levels": ["WARN", "WARNING"]})"));
    CHECK_FALSE(answer_accepts(*grammar, R"({"service": "checkout", "levels": ["WARNING", "WARNING"]})"));
    CHECK(answer_accepts(*grammar, R"({"service": "checkout", "evidence": ["checkout:41", "checkout:40"]})"));
    CHECK_FALSE(answer_accepts(*grammar, R"({"service": "checkout", "evidence": ["checkout:40", "checkout:40"]})"));
    // without uniqueItems, repeats stay allowed
    CHECK(answer_accepts(*grammar, R"({"service": "checkout", "notes": ["a", "a"]})"));
    // once one line is left, it is the forced continuation; once none is, the array must close
    turn_constraint c(std::make_shared<const token_index>(*small_vocab().tok), *grammar);
    c.accept_text(R"({"service": "checkout", "evidence": ["checkout:40", ")");
    CHECK(c.forced_continuation().starts_with("checkout:41\""));
    // the validator checks the same after decoding
    const auto v = answer->validate(R"({"service": "checkout", "levels": ["ERROR", "ERROR"]})", &g);
    REQUIRE_FALSE(v.ok());
    CHECK(v.err().message.find("levels[1]") != std::string::npos);
    CHECK(v.err().message.find("uniqueItems") != std::string::npos);
    auto bad = json_schema::parse(R"({"type": "array", "uniqueItems": 1})", "final answer");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("uniqueItems") != std::string::npos);
}

TEST_CASE("x-grounded-with must name another grounded string property of the same object") {
    for (const char* bad : {
             R"({"type": "object", "properties": {"a": {"type": "string", "x-grounded": true, "x-grounded-with": "b"}}})",
             R"({"type": "object", "properties": {"a": {"type": "string", "x-grounded": true, "x-grounded-with": "a"}}})",
             R"({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "string", "x-grounded": true, "x-grounded-with": "b"}}})",
             R"({"type": "object", "properties": {"b": {"type": "string", "x-grounded": true}, "a": {"type": "array", "items": {"x-grounded-with": "c"}}}})"}) {
        auto s = json_schema::parse(bad, "final answer");
        REQUIRE_FALSE(s.ok());
        CHECK(s.err().message.find("'x-grounded-with' of '") != std::string::npos);
        CHECK(s.err().message.find("which is not another x-grounded string property of the same object") != std::string::npos);
    }
    auto s = json_schema::parse(R"({"type": "object", "properties": {"a": {"type": "string", "x-grounded-with": 3}}})", "final answer");
    REQUIRE_FALSE(s.ok());
    CHECK(s.err().message.find("x-grounded-with") != std::string::npos);
}

TEST_CASE("an empty enum that skipped the schema check stops the walk without reading out of bounds") {
    // Once a segfault in jump-forward: the value's choice list has no candidate.
    auto answer = schema(R"({"type": "object", "properties": {"a": {"enum": []}}, "required": ["a"]})", "final answer");
    auto grammar = json_grammar::build({}, answer, grounded_values{});
    REQUIRE(grammar.ok());
    turn_constraint c(std::make_shared<const token_index>(*small_vocab().tok), *grammar);
    c.accept_text("{");
    CHECK(c.forced_continuation() == "\"a\": ");
    c.accept_text("\"a\": ");
    CHECK(c.forced_continuation().empty());
    std::vector<uint8_t> mask(small_vocab().tok->n_tokens());
    c.fill_mask(mask);
    CHECK(std::count(mask.begin(), mask.end(), uint8_t{1}) == 0);  // no value exists; the schema check refuses this schema
    CHECK(answer->unsatisfiable().has_value());
}
