#include "runtime/agent_def.h"

#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "runtime/json_util.h"
#include "runtime/schema_pattern.h"

namespace tachyon {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;


// Reads one file's JSON with a key path for every error.
class reader {
public:
    explicit reader(std::string file) : file_(std::move(file)) {}

    error fail(const std::string& path, const std::string& what) const {
        return make_error(errc::invalid_argument, file_ + ": " + (path.empty() ? std::string("top level") : path) + ": " + what);
    }

    // Checks that every key of `obj` is one of `allowed`.
    status keys(element obj, const std::string& path, std::initializer_list<const char*> allowed) const {
        for (auto field : obj.get_object()) {
            bool ok = false;
            for (const char* a : allowed) ok = ok || field.key == a;
            if (!ok) {
                std::string list;
                for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
                return fail(join(path, field.key), "unknown key (expected one of: " + list + ")");
            }
        }
        return {};
    }

    result<element> require(element obj, const std::string& path, const char* key) const {
        element v;
        if (obj[key].get(v)) return fail(join(path, key), "missing (required)");
        return v;
    }

    result<std::string> string(element v, const std::string& path) const {
        if (v.type() != element_type::STRING) return fail(path, "expected a string, got " + json::kind_name(v.type()));
        return std::string(v.get_string().value());
    }
    result<int64_t> integer(element v, const std::string& path, int64_t lo, int64_t hi) const {
        int64_t out;
        if (v.type() == element_type::INT64) {
            out = v.get_int64().value();
        } else if (v.type() == element_type::UINT64) {
            return fail(path, "integer out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
        } else {
            return fail(path, "expected an integer, got " + json::kind_name(v.type()));
        }
        if (out < lo || out > hi) return fail(path, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(out));
        return out;
    }
    result<double> number(element v, const std::string& path, double lo, double hi) const {
        double out;
        if (v.type() == element_type::DOUBLE) out = v.get_double().value();
        else if (v.type() == element_type::INT64) out = static_cast<double>(v.get_int64().value());
        else if (v.type() == element_type::UINT64) out = static_cast<double>(v.get_uint64().value());
        else return fail(path, "expected a number, got " + json::kind_name(v.type()));
        if (!(out >= lo && out <= hi)) {
            std::ostringstream os;
            os << "expected a number in [" << lo << ", " << hi << "], got " << out;
            return fail(path, os.str());
        }
        return out;
    }
    status object(element v, const std::string& path) const {
        if (v.type() != element_type::OBJECT) return fail(path, "expected an object, got " + json::kind_name(v.type()));
        return {};
    }

    static std::string join(const std::string& path, std::string_view key) {
        return path.empty() ? std::string(key) : path + "." + std::string(key);
    }
    static std::string index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

private:
    std::string file_;
};

// Settings: an object of scalar values, kept as text (strings unquoted, others minified).
result<std::map<std::string, std::string>> read_settings(const reader& r, element v, const std::string& path) {
    TACHYON_TRY(r.object(v, path));
    std::map<std::string, std::string> out;
    for (auto field : v.get_object()) {
        if (field.value.type() == element_type::STRING) {
            out[std::string(field.key)] = std::string(field.value.get_string().value());
        } else if (field.value.type() == element_type::OBJECT || field.value.type() == element_type::ARRAY) {
            out[std::string(field.key)] = simdjson::minify(field.value);
        } else {
            out[std::string(field.key)] = simdjson::minify(field.value);
        }
    }
    return out;
}

result<std::string> read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(errc::not_found, path + ": cannot open");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void collect_placeholders(std::string_view text, std::set<std::string>& out) {
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '{') continue;
        size_t j = i + 1;
        auto ident = [](char c, bool first) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
        };
        while (j < text.size() && ident(text[j], j == i + 1)) ++j;
        if (j > i + 1 && j < text.size() && text[j] == '}') out.insert(std::string(text.substr(i + 1, j - i - 1)));
    }
}

}  // namespace

std::vector<std::string> agent_definition::placeholders() const {
    std::set<std::string> names;
    collect_placeholders(instructions, names);
    for (const auto& t : tools)
        for (const auto& [k, v] : t.settings) collect_placeholders(v, names);
    for (const auto& c : verify)
        for (const auto& [k, v] : c.settings) collect_placeholders(v, names);
    return {names.begin(), names.end()};
}

result<std::string> fill_placeholders(std::string_view text, const std::map<std::string, std::string>& inputs, std::string_view what) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '{') {
            std::set<std::string> one;
            size_t close = text.find('}', i);
            if (close != std::string_view::npos) {
                collect_placeholders(text.substr(i, close - i + 1), one);
                if (one.size() == 1 && one.begin()->size() == close - i - 1) {
                    auto it = inputs.find(*one.begin());
                    if (it == inputs.end()) {
                        return make_error(errc::invalid_argument, std::string(what) + ": no value for placeholder {" + *one.begin() +
                                                                      "} (give it as an input, e.g. --input " + *one.begin() + "=...)");
                    }
                    out += it->second;
                    i = close;
                    continue;
                }
            }
        }
        out += text[i];
    }
    return out;
}

result<agent_definition> parse_agent_definition(std::string_view json_text, const std::string& file_name,
                                                const std::vector<std::string>& known_tools) {
    reader r(file_name);
    simdjson::dom::parser parser;
    element doc;
    if (auto err = parser.parse(simdjson::padded_string(json_text)).get(doc)) {
        return make_error(errc::parse_error, file_name + ": not valid JSON (" + simdjson::error_message(err) + ")");
    }
    TACHYON_TRY(r.object(doc, ""));
    TACHYON_TRY(r.keys(doc, "", {"name", "description", "instructions", "instructions_file", "model", "chat_format", "sampling",
                                 "tools", "budgets", "verify", "output_schema"}));
    agent_definition a;
    a.file = file_name;
    const std::filesystem::path folder = std::filesystem::path(file_name).parent_path();

    auto name = r.require(doc, "", "name");
    if (!name) return name.err();
    auto name_s = r.string(*name, "name");
    if (!name_s) return name_s.err();
    a.name = *name_s;
    if (a.name.empty()) return r.fail("name", "must not be empty");

    element v;
    if (!doc["description"].get(v)) {
        auto s = r.string(v, "description");
        if (!s) return s.err();
        a.description = *s;
    }
    const bool has_instr = !doc["instructions"].get(v);
    element vf;
    const bool has_instr_file = !doc["instructions_file"].get(vf);
    if (has_instr == has_instr_file) return r.fail("instructions", "give exactly one of instructions or instructions_file");
    if (has_instr) {
        auto s = r.string(v, "instructions");
        if (!s) return s.err();
        a.instructions = *s;
    } else {
        auto s = r.string(vf, "instructions_file");
        if (!s) return s.err();
        auto text = read_text_file((folder / *s).string());
        if (!text) return r.fail("instructions_file", "cannot read " + (folder / *s).string());
        a.instructions = std::move(text).value();
        while (!a.instructions.empty() && (a.instructions.back() == '\n' || a.instructions.back() == '\r')) a.instructions.pop_back();
    }

    auto model = r.require(doc, "", "model");
    if (!model) return model.err();
    auto model_s = r.string(*model, "model");
    if (!model_s) return model_s.err();
    std::filesystem::path mp(*model_s);
    if (mp.is_relative()) mp = folder / mp;
    a.model = mp.lexically_normal().string();
    if (!std::filesystem::exists(mp)) return r.fail("model", "model file " + a.model + " does not exist (expected a GGUF file; relative paths resolve against the agent file's folder)");

    if (!doc["chat_format"].get(v)) {
        auto s = r.string(v, "chat_format");
        if (!s) return s.err();
        if (*s != "chatml" && *s != "llama3") return r.fail("chat_format", "expected \"chatml\" or \"llama3\", got \"" + *s + "\"");
        a.chat_format = *s;
    }

    if (!doc["sampling"].get(v)) {
        TACHYON_TRY(r.object(v, "sampling"));
        TACHYON_TRY(r.keys(v, "sampling", {"temperature", "top_k", "top_p", "min_p", "repeat_penalty", "repeat_last_n", "seed"}));
        element f;
        sampling_params& sp = a.sampling;
        if (!v["temperature"].get(f)) { auto x = r.number(f, "sampling.temperature", 0, 100); if (!x) return x.err(); sp.temperature = static_cast<float>(*x); }
        if (!v["top_k"].get(f)) { auto x = r.integer(f, "sampling.top_k", 0, 1 << 20); if (!x) return x.err(); sp.top_k = static_cast<int>(*x); }
        if (!v["top_p"].get(f)) { auto x = r.number(f, "sampling.top_p", 1e-6, 1); if (!x) return x.err(); sp.top_p = static_cast<float>(*x); }
        if (!v["min_p"].get(f)) { auto x = r.number(f, "sampling.min_p", 0, 0.999); if (!x) return x.err(); sp.min_p = static_cast<float>(*x); }
        if (!v["repeat_penalty"].get(f)) { auto x = r.number(f, "sampling.repeat_penalty", 1e-3, 100); if (!x) return x.err(); sp.repeat_penalty = static_cast<float>(*x); }
        if (!v["repeat_last_n"].get(f)) { auto x = r.integer(f, "sampling.repeat_last_n", 0, 1 << 20); if (!x) return x.err(); sp.repeat_last_n = static_cast<int>(*x); }
        if (!v["seed"].get(f)) { auto x = r.integer(f, "sampling.seed", 0, INT64_MAX); if (!x) return x.err(); sp.seed = static_cast<uint64_t>(*x); }
    }

    auto known = [&](const std::string& tool) {
        return known_tools.empty() || std::find(known_tools.begin(), known_tools.end(), tool) != known_tools.end();
    };
    auto known_list = [&] {
        std::string s;
        for (const auto& t : known_tools) s += (s.empty() ? "" : ", ") + t;
        return s;
    };

    if (!doc["tools"].get(v)) {
        if (v.type() != element_type::ARRAY) return r.fail("tools", "expected an array of tool entries, got " + json::kind_name(v.type()));
        size_t i = 0;
        std::set<std::string> seen;
        for (element t : v.get_array()) {
            const std::string p = reader::index("tools", i++);
            agent_tool tool;
            if (t.type() == element_type::STRING) {
                tool.name = std::string(t.get_string().value());
            } else {
                TACHYON_TRY(r.object(t, p));
                TACHYON_TRY(r.keys(t, p, {"name", "settings", "timeout_ms", "grounding"}));
                auto n = r.require(t, p, "name");
                if (!n) return n.err();
                auto ns = r.string(*n, p + ".name");
                if (!ns) return ns.err();
                tool.name = *ns;
                element f;
                if (!t["settings"].get(f)) {
                    auto s = read_settings(r, f, p + ".settings");
                    if (!s) return s.err();
                    tool.settings = std::move(s).value();
                }
                if (!t["timeout_ms"].get(f)) {
                    auto x = r.integer(f, p + ".timeout_ms", 1, 3600000);
                    if (!x) return x.err();
                    tool.timeout_ms = *x;
                }
                if (!t["grounding"].get(f)) {
                    TACHYON_TRY(r.object(f, p + ".grounding"));
                    for (auto field : f.get_object()) {
                        const std::string kp = p + ".grounding." + std::string(field.key);
                        auto pattern = r.string(field.value, kp);
                        if (!pattern) return pattern.err();
                        if (auto compiled = schema_pattern::compile(*pattern); !compiled) return r.fail(kp, compiled.err().message);
                        tool.grounding[std::string(field.key)] = *pattern;
                    }
                }
            }
            if (!known(tool.name)) return r.fail(p + ".name", "unknown tool '" + tool.name + "' (built-in tools: " + known_list() + ")");
            if (!seen.insert(tool.name).second) return r.fail(p + ".name", "tool '" + tool.name + "' is listed twice");
            a.tools.push_back(std::move(tool));
        }
    }

    if (!doc["budgets"].get(v)) {
        TACHYON_TRY(r.object(v, "budgets"));
        TACHYON_TRY(r.keys(v, "budgets", {"max_steps", "max_tokens", "deadline_ms", "tool_timeout_ms"}));
        element f;
        if (!v["max_steps"].get(f)) { auto x = r.integer(f, "budgets.max_steps", 1, 1000); if (!x) return x.err(); a.budgets.max_steps = static_cast<int>(*x); }
        if (!v["max_tokens"].get(f)) { auto x = r.integer(f, "budgets.max_tokens", 1, 1 << 24); if (!x) return x.err(); a.budgets.max_tokens = static_cast<int>(*x); }
        if (!v["deadline_ms"].get(f)) { auto x = r.integer(f, "budgets.deadline_ms", 1, 86400000); if (!x) return x.err(); a.budgets.deadline_ms = *x; }
        if (!v["tool_timeout_ms"].get(f)) { auto x = r.integer(f, "budgets.tool_timeout_ms", 1, 3600000); if (!x) return x.err(); a.budgets.tool_timeout_ms = *x; }
    }

    if (!doc["verify"].get(v)) {
        TACHYON_TRY(r.object(v, "verify"));
        TACHYON_TRY(r.keys(v, "verify", {"checks", "max_verify_retries"}));
        element f;
        if (!v["max_verify_retries"].get(f)) { auto x = r.integer(f, "verify.max_verify_retries", 0, 100); if (!x) return x.err(); a.max_verify_retries = static_cast<int>(*x); }
        if (!v["checks"].get(f)) {
            if (f.type() != element_type::ARRAY) return r.fail("verify.checks", "expected an array, got " + json::kind_name(f.type()));
            size_t i = 0;
            for (element c : f.get_array()) {
                const std::string p = reader::index("verify.checks", i++);
                TACHYON_TRY(r.object(c, p));
                TACHYON_TRY(r.keys(c, p, {"tool", "arguments", "settings"}));
                agent_verify_check check;
                auto t = r.require(c, p, "tool");
                if (!t) return t.err();
                auto ts = r.string(*t, p + ".tool");
                if (!ts) return ts.err();
                check.tool = *ts;
                if (!known(check.tool)) return r.fail(p + ".tool", "unknown tool '" + check.tool + "' (built-in tools: " + known_list() + ")");
                element args;
                if (!c["arguments"].get(args)) {
                    TACHYON_TRY(r.object(args, p + ".arguments"));
                    for (auto field : args.get_object()) {
                        std::string value = field.value.type() == element_type::STRING ? std::string(field.value.get_string().value())
                                                                                     : simdjson::minify(field.value);
                        if (field.value.type() == element_type::STRING && value.rfind("$.", 0) != 0) value = json::quote(value);
                        check.arguments.emplace_back(std::string(field.key), value);
                    }
                }
                element s;
                if (!c["settings"].get(s)) {
                    auto st = read_settings(r, s, p + ".settings");
                    if (!st) return st.err();
                    check.settings = std::move(st).value();
                }
                a.verify.push_back(std::move(check));
            }
        }
    }

    if (!doc["output_schema"].get(v)) {
        TACHYON_TRY(r.object(v, "output_schema"));
        a.output_schema = simdjson::minify(v);
    }
    return a;
}

result<agent_definition> load_agent_file(const std::string& path, const std::vector<std::string>& known_tools) {
    auto text = read_text_file(path);
    if (!text) return make_error(errc::not_found, path + ": cannot open the agent file");
    return parse_agent_definition(*text, path, known_tools);
}

}  // namespace tachyon
