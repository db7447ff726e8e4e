// libFuzzer target for the schema check and the constrained-decoding
// grammar. The input's first bytes build a JSON schema (hostile ones too:
// empty enums, crossed bounds, unmatched patterns, deep nesting, duplicate
// names), or are a schema text themselves; the rest drive a walk through the
// grammar: mask queries, sampled tokens, jump-forward text and raw bytes.
// Invariants:
// - no crash and no read out of bounds, on any schema text (parse, the
//   satisfiability check) and on any walk of a grammar built from a parsed
//   schema, whether the check accepted it or not;
// - for a schema the check accepts, every state a walk reaches keeps a way
//   to complete the region: some byte is allowed (or an answer may end), and
//   a bounded search that explores every path without hitting its depth
//   finds a completion;
// - the mask allows exactly the tokens whose bytes the automaton accepts
//   (answers: checked on a sample of tokens), and jump-forward text never
//   leaves the grammar.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "inference/tokenizer/tokenizer.h"
#include "inference/tokenizer/vocab.h"
#include "runtime/constrain/constraint.h"
#include "runtime/constrain/json_grammar.h"
#include "runtime/constrain/json_schema.h"

using namespace tachyon;

namespace {

void check(bool cond, const char* what) {
    if (!cond) {
        fprintf(stderr, "invariant broken: %s\n", what);
        abort();
    }
}

// The fuzzer's bytes, read from the front; zeros once spent.
struct bytes {
    const uint8_t* p;
    size_t n;
    uint8_t next() {
        if (n == 0) return 0;
        --n;
        return *p++;
    }
    template <size_t N>
    const char* pick(const char* const (&pool)[N]) { return pool[next() % N]; }
};

const char* const k_values[] = {R"("a")", R"("b")", R"("ab")", "1", "2.5", "-3", "0", "null", "true", "false", "{}", "[]",
                                R"("checkout")", R"({"a": 1})", R"(["a"])", R"("quote\"d")", "1e300", "-0"};
const char* const k_numbers[] = {"-1e20", "-5", "-1", "-0.5", "0", "1e-12", "0.123456789", "1", "1.5", "3", "5", "999999999999999990",
                                 "1e18", "1e20", "-0.000000001", "2.0000000001", "100"};
const char* const k_patterns[] = {"^a$", "[^\\\\s\\\\S]", "^[a-z]{4}", "\\\\d+", "^.?$", "^$", "x*", "^[0-9a-f]{8,32}$", "é{2}", "^a?b?$"};
const char* const k_names[] = {"a", "b", "service", "a", "x y", "since"};
const char* const k_types[] = {"object", "array", "string", "integer", "number", "boolean", "null"};

std::string gen_schema(bytes& in, int depth);

// A schema object's members (without braces), for a node of kind `op`.
std::string gen_members(bytes& in, int depth) {
    std::vector<std::string> m;
    const uint8_t op = in.next();
    const uint8_t flags = in.next();
    switch (op % 10) {
        case 0: case 1: case 2: case 3: case 4: case 5: case 6: m.push_back(std::string(R"("type": ")") + k_types[op % 7] + "\""); break;
        case 7: m.push_back(std::string(R"("type": [")") + k_types[flags % 7] + R"(", ")" + k_types[(flags >> 3) % 7] + "\"]"); break;
        case 8: m.emplace_back(R"("type": [])"); break;
        default: break;  // untyped
    }
    if (flags & 1) {
        std::string e = R"("enum": [)";
        const int n = in.next() % 4;
        for (int i = 0; i < n; ++i) e += std::string(i ? ", " : "") + in.pick(k_values);
        m.push_back(e + "]");
    }
    if (flags & 2) m.push_back(std::string(R"("const": )") + in.pick(k_values));
    if (flags & 4) {
        const uint8_t b = in.next();
        if (b & 1) m.push_back(std::string(b & 2 ? R"("exclusiveMinimum": )" : R"("minimum": )") + in.pick(k_numbers));
        if (b & 4) m.push_back(std::string(b & 8 ? R"("exclusiveMaximum": )" : R"("maximum": )") + in.pick(k_numbers));
        if (b & 16) m.push_back(R"("minLength": )" + std::to_string(in.next() % 7));
        if (b & 32) m.push_back(R"("maxLength": )" + std::to_string(in.next() % 7));
        if (b & 64) m.push_back(std::string(R"("pattern": ")") + in.pick(k_patterns) + "\"");
        if (b & 128) m.emplace_back(R"("minLength": 1000000)");
    }
    if (flags & 8) {
        const uint8_t b = in.next();
        if (b & 1) m.push_back(R"("minItems": )" + std::to_string(in.next() % 5));
        if (b & 2) m.push_back(R"("maxItems": )" + std::to_string(in.next() % 5));
        if (b & 4) m.emplace_back(R"("uniqueItems": true)");
        if ((b & 8) && depth < 8) m.push_back(R"("items": )" + gen_schema(in, depth + 1));
    }
    if (flags & 16) {
        const uint8_t b = in.next();
        if (b & 1) m.emplace_back(R"("x-grounded": true)");
        if (b & 2) m.push_back(std::string(R"("x-grounded-with": ")") + in.pick(k_names) + "\"");
    }
    if ((flags & 32) && depth < 8) {
        std::string p = R"("properties": {)";
        const int n = in.next() % 4;
        for (int i = 0; i < n; ++i) p += std::string(i ? ", " : "") + "\"" + in.pick(k_names) + "\": " + gen_schema(in, depth + 1);
        m.push_back(p + "}");
    }
    if (flags & 64) {
        std::string r = R"("required": [)";
        const int n = in.next() % 3;
        for (int i = 0; i < n; ++i) r += std::string(i ? ", " : "") + "\"" + in.pick(k_names) + "\"";
        m.push_back(r + "]");
    }
    if (flags & 128) m.emplace_back(R"("additionalProperties": false)");
    std::string out;
    for (size_t i = 0; i < m.size(); ++i) out += (i ? ", " : "") + m[i];
    return out;
}

std::string gen_schema(bytes& in, int depth) { return "{" + gen_members(in, depth) + "}"; }

// A chain of required objects `levels` deep, about the deepest a schema may be.
std::string gen_chain(int levels, const std::string& leaf) {
    std::string s = leaf;
    for (int i = 0; i < levels; ++i) s = R"({"type": "object", "properties": {"a": )" + s + R"(}, "required": ["a"]})";
    return s;
}

// A small byte-level vocabulary: every byte, some JSON pieces, the call markers, an end token.
const std::shared_ptr<const token_index>& index() {
    static const std::shared_ptr<const token_index> idx = [] {
        byte_level_bpe_builder b;
        const char* merges[][2] = {{"\"", ":"}, {"\":", " "}, {",", " "}, {"\"", "a"}, {"\"a", "\""}, {"t", "r"}, {"tr", "u"},
                                   {"tru", "e"}, {"n", "u"}, {"nu", "l"}, {"nul", "l"}, {"1", "2"}, {"-", "0"}, {"-0", "."},
                                   {"0", "."}, {"\"", ","}, {"}", "\n"}, {"\n", "{"}, {"\"", "}"}, {"]", "}"}};
        for (const auto& m : merges) b.add_merge(m[0], m[1]);
        b.add_special("<tool_call>", token_type::user_defined);
        b.add_special("</tool_call>", token_type::user_defined);
        const token_id end = b.add_special("<|im_end|>");
        vocab v = b.build("gpt-2");
        v.eos_id = end;
        v.eot_id = end;
        auto t = tokenizer::create(v);
        check(t.ok(), "the fuzzer's vocabulary builds");
        return std::make_shared<const token_index>(*t);
    }();
    return idx;
}

// Looks for bytes that complete the region from `a`: 1 found, 0 none exists
// (every path explored, none cut by `depth`), -1 undecided.
int completes(const json_automaton& a, bool answer, int depth, long& budget, bool& cut) {
    if (a.done() || (answer && a.can_end())) return 1;
    if (depth == 0) {
        cut = true;
        return 0;
    }
    static const std::string order = [] {
        std::string o = "\"}] ,:0123456789.-aetnrulfsbx\n{[";
        for (int b = 0; b < 256; ++b)
            if (o.find(static_cast<char>(b)) == std::string::npos) o += static_cast<char>(b);
        return o;
    }();
    for (char c : order) {
        if (--budget < 0) return -1;
        json_automaton next;
        next.copy_from(a);
        if (!next.advance(static_cast<uint8_t>(c))) continue;
        const int r = completes(next, answer, depth - 1, budget, cut);
        if (r != 0) return r;
    }
    return 0;
}

bool any_byte(const json_automaton& a) {
    for (int b = 0; b < 256; ++b) {
        json_automaton t;
        t.copy_from(a);
        if (t.advance(static_cast<uint8_t>(b))) return true;
    }
    return false;
}

void walk(const std::shared_ptr<const json_grammar>& g, bool answer, bool accepted, bytes& in) {
    const auto& idx = index();
    turn_constraint c(idx, g);
    json_automaton a(g.get());  // the same region, byte by byte, to check the constraint against
    if (answer) {
        c.accept_text("{");
        a.start_answer();
        if (!a.advance('{')) return;  // an answer that is not an object: no region starts
    } else {
        c.accept_text("<tool_call>");
        a.start_tool_call();
    }
    std::vector<uint8_t> mask(idx->n_vocab());
    for (int step = 0; step < 32 && c.in_region() && !c.broken(); ++step) {
        const uint8_t op = in.next();
        // (the mask's check below covers the steps that sample a token)
        if (accepted && op % 4 >= 2) check(a.done() || (answer && a.can_end()) || any_byte(a), "a reachable state allows a byte");
        std::string piece;
        switch (op % 4) {
            case 0:
            case 1: {  // sample an allowed token
                c.fill_mask(mask);
                std::vector<token_id> allowed;
                for (size_t t = 0; t < mask.size(); ++t)
                    if (mask[t]) allowed.push_back(static_cast<token_id>(t));
                if (accepted) check(!allowed.empty(), "the mask allows a token inside a region");
                if (allowed.empty()) return;
                if (answer) {  // the mask agrees with the automaton on a few tokens
                    for (int k = 0; k < 4; ++k) {
                        const auto t = static_cast<token_id>((op * 131u + in.next() * 7u + static_cast<unsigned>(k)) % mask.size());
                        const std::string& p = idx->piece(t);
                        if (p.empty()) continue;
                        json_automaton x;
                        x.copy_from(a);
                        check((mask[static_cast<size_t>(t)] != 0) == x.advance(p), "the mask allows the tokens the automaton accepts");
                    }
                }
                const token_id t = allowed[(op / 4u + in.next() * 256u) % allowed.size()];
                c.accept(t);
                piece = idx->piece(t);
                break;
            }
            case 2: {  // jump-forward
                piece = c.forced_continuation();
                c.accept_text(piece);
                check(!c.broken(), "jump-forward text stays within the grammar");
                break;
            }
            default: {  // a raw byte, maybe outside the grammar
                piece.assign(1, static_cast<char>(in.next()));
                c.accept_text(piece);
                if (c.broken()) return;
                break;
            }
        }
        if (piece.empty()) {
            if (answer) return;  // the end token: the answer ended
            continue;
        }
        // The automaton follows only the region's bytes (a call's last token may carry text after it).
        if (getenv("TACHYON_FUZZ_VERBOSE") != nullptr) fprintf(stderr, "piece: %s\n", piece.c_str());
        for (char ch : piece) {
            if (a.done()) break;
            const bool ok = a.advance(static_cast<uint8_t>(ch));
            check(ok, "bytes the constraint accepted are accepted by the automaton");
        }
        if (a.done()) break;
    }
    if (accepted && !a.done()) {
        long budget = 4000;
        bool cut = false;
        const int r = completes(a, answer, 600, budget, cut);
        check(r != 0 || cut, "a reachable state keeps a way to complete the region");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    bytes in{data, size};
    const uint8_t mode = in.next();
    std::string text;
    if (mode % 16 == 0) {  // the input is the schema text, up to a NUL
        size_t n = 0;
        while (n < in.n && in.p[n] != 0) ++n;
        text.assign(reinterpret_cast<const char*>(in.p), n);
        in.p += n;
        in.n -= n;
        (void)in.next();
    } else if (mode % 16 == 1) {
        text = gen_chain(30 + mode / 16 % 6, gen_schema(in, 7));
    } else {
        text = gen_schema(in, 0);
    }
    if (getenv("TACHYON_FUZZ_VERBOSE") != nullptr) fprintf(stderr, "schema: %s\n", text.c_str());  // to read a reproducer
    auto schema = json_schema::parse(text, "final answer", "field");
    if (!schema) return 0;
    const bool accepted = !schema->unsatisfiable();
    auto shared = std::make_shared<const json_schema>(std::move(*schema));

    grounded_values g;
    const char* const candidates[] = {"checkout", "payments", "x", "y", "quote\"d", "a b", "14:05:01"};
    for (int i = in.next() % 5; i > 0; --i) g.all.emplace_back(in.pick(candidates));
    if (in.next() & 1) g.by_path["a"] = {"x", "y"};
    g.texts = {"checkout 14:05:01 x\npayments y", "a b quote\"d"};

    const bool answer = (mode & 32) != 0;
    auto grammar = answer ? json_grammar::build({}, shared, g) : json_grammar::build({{"t", shared}, {"free", nullptr}}, nullptr, g);
    if (!grammar) {
        if (getenv("TACHYON_FUZZ_VERBOSE") != nullptr) fprintf(stderr, "grammar: %s\n", grammar.err().message.c_str());
        check(!accepted, "an accepted schema compiles to a grammar");
        return 0;
    }
    walk(*grammar, answer, accepted, in);
    return 0;
}
