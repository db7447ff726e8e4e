#include "runtime/agent/agent_def.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "runtime/constrain/json_schema.h"
#include "runtime/common/json_util.h"
#include "runtime/constrain/schema_pattern.h"
#include "runtime/agent/agent_file_util.h"
#include "runtime/agent/tool_catalog.h"
#include "tools/mcp/http_transport.h"
#include "runtime/formats/chat_format.h"
#include "runtime/remote/remote_model.h"

namespace tachyon {
namespace agent_file {

std::string file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

// A tool root setting's directories: "root" is one path; "roots" a JSON
// array of paths or one path (as tool_catalog reads it).
std::vector<std::string> root_paths(const std::string& key, const std::string& value) {
    if (key == "root" || value.empty() || value.front() != '[') return {value};
    std::vector<std::string> out;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (parser.parse(simdjson::padded_string(value)).get(doc) || !doc.is_array()) return out;  // the tool reports the shape
    for (simdjson::dom::element e : doc.get_array()) {
        std::string_view sv;
        if (!e.get_string().get(sv)) out.emplace_back(sv);
    }
    return out;
}

bool is_root_key(const std::string& key) { return key == "root" || key == "roots"; }

status check_root_dirs(const std::string& where, const std::string& key, const std::string& value, const std::string& from) {
    for (const auto& dir : root_paths(key, value)) {
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec))
            return make_error(errc::not_found, where + ": '" + dir + "'" + from + " is not a directory (a tool root must be an existing directory)");
    }
    return {};
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

}  // namespace agent_file

namespace {

using agent_file::check_root_dirs;
using agent_file::collect_placeholders;
using agent_file::file_kind;
using agent_file::is_root_key;

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

// Settings kept as text: strings unquoted, every other value minified.
std::map<std::string, std::string> settings_text(simdjson::dom::object object) {
    std::map<std::string, std::string> out;
    for (auto field : object)
        out[std::string(field.key)] = field.value.type() == element_type::STRING ? std::string(field.value.get_string().value())
                                                                                : simdjson::minify(field.value);
    return out;
}

result<std::map<std::string, std::string>> read_settings(const reader& r, element v, const std::string& path) {
    TACHYON_TRY(r.object(v, path));
    return settings_text(v.get_object());
}

struct fd_closer {
    int fd;
    ~fd_closer() { ::close(fd); }
};

// Opens `path` for reading only when it is a regular file. O_NONBLOCK keeps
// a FIFO from blocking the open; fstat then refuses it (and a device, a
// directory) before anything is read. Returns the descriptor and the size.
// `what` names the file's role in the messages ("the agent file").
result<std::pair<int, int64_t>> open_regular_file(const std::string& path, std::string_view what) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        const int e = errno;
        return make_error(e == ENOENT ? errc::not_found : errc::io_error,
                          path + ": cannot open " + std::string(what) + " (" + std::strerror(e) + ")");
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        return make_error(errc::io_error, path + ": cannot stat (" + std::strerror(e) + ")");
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return make_error(errc::invalid_argument, path + ": " + file_kind(st.st_mode) + " (expected a regular file)");
    }
    return std::make_pair(fd, static_cast<int64_t>(st.st_size));
}

// Reads a regular file of at most agent_file_max_bytes; the limit holds
// even when the file grows while it is read.
result<std::string> read_text_file(const std::string& path, std::string_view what) {
    auto opened = open_regular_file(path, what);
    if (!opened) return opened.err();
    fd_closer closer{opened->first};
    auto too_big = [&] {
        return make_error(errc::out_of_range, path + ": larger than the limit of " + std::to_string(agent_file_max_bytes) +
                                                  " bytes (1 MiB) for agent files");
    };
    if (opened->second > static_cast<int64_t>(agent_file_max_bytes)) return too_big();
    std::string out(agent_file_max_bytes + 1, '\0');
    size_t n = 0;
    while (n < out.size()) {
        const ssize_t got = ::read(closer.fd, out.data() + n, out.size() - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return make_error(errc::io_error, path + ": cannot read (" + std::strerror(errno) + ")");
        if (got == 0) break;
        n += static_cast<size_t>(got);
    }
    if (n > agent_file_max_bytes) return too_big();
    out.resize(n);
    return out;
}

// True when the file starts with the GGUF magic.
result<bool> has_gguf_magic(const std::string& path) {
    auto opened = open_regular_file(path, "the model file");
    if (!opened) return opened.err();
    fd_closer closer{opened->first};
    char magic[4] = {};
    ssize_t got;
    do got = ::pread(closer.fd, magic, sizeof magic, 0);
    while (got < 0 && errno == EINTR);
    return got == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

// simdjson's DOM keeps every copy of a repeated key and lookups see the
// first, so a second "root" would be silently ignored: refuse it.
status check_duplicate_keys(const reader& r, element v, const std::string& path) {
    if (v.type() == element_type::OBJECT) {
        std::set<std::string_view> seen;
        for (auto field : v.get_object()) {
            const std::string kp = reader::join(path, field.key);
            if (!seen.insert(field.key).second) return r.fail(kp, "duplicate key (a key may appear once in an object)");
            TACHYON_TRY(check_duplicate_keys(r, field.value, kp));
        }
    } else if (v.type() == element_type::ARRAY) {
        size_t i = 0;
        for (element e : v.get_array()) TACHYON_TRY(check_duplicate_keys(r, e, reader::index(path, i++)));
    }
    return {};
}

// A `required` name missing from `properties` is a typo the schema itself
// allows when additionalProperties is open (json_schema::unsatisfiable
// refuses it when closed, with every bound that no value can meet): the
// answer would have to carry a field the model is never shown. `index` is a
// node of the compiled schema, `path` its key path in the file.
status check_required_properties(const reader& r, const json_schema& schema, int index, const std::string& path) {
    const schema_node& n = schema.node(index);
    if (!n.properties.empty()) {
        for (const auto& name : n.required) {
            if (n.property(name) >= 0) continue;
            std::string list;
            for (const auto& [p, i] : n.properties) list += (list.empty() ? "" : ", ") + p;
            return r.fail(reader::join(path, "required"), "names '" + name + "', which is not in properties (properties: " + list + ")");
        }
    }
    for (const auto& [name, child] : n.properties) TACHYON_TRY(check_required_properties(r, schema, child, path + ".properties." + name));
    if (n.items >= 0) TACHYON_TRY(check_required_properties(r, schema, n.items, path + ".items"));
    return {};
}

// A grounding key names a grounded argument of the tool's schema: "service",
// "filter.service", "evidence[]" (the items of an array).
status check_grounding_key(const reader& r, const std::string& tool, std::string_view tool_schema, const std::string& key,
                           const std::string& kp) {
    simdjson::dom::parser parser;
    element node;
    if (parser.parse(simdjson::padded_string(tool_schema)).get(node)) return r.fail(kp, "tool " + tool + " declares no readable schema");
    auto names_of = [](element n) {
        std::string list;
        element props;
        if (!n["properties"].get(props) && props.type() == element_type::OBJECT)
            for (auto f : props.get_object()) list += (list.empty() ? "" : ", ") + std::string(f.key);
        return list.empty() ? std::string("none") : list;
    };
    std::string_view rest = key;
    while (true) {
        const size_t dot = rest.find('.');
        std::string_view seg = rest.substr(0, dot);
        int n_items = 0;
        while (seg.size() > 2 && seg.substr(seg.size() - 2) == "[]") seg.remove_suffix(2), ++n_items;
        element next;
        element props;
        if (node["properties"].get(props) || props[seg].get(next))
            return r.fail(kp, "tool " + tool + " has no argument '" + std::string(key) + "' (its arguments: " + names_of(node) + ")");
        node = next;
        for (; n_items > 0; --n_items) {
            if (node["items"].get(next))
                return r.fail(kp, "argument '" + std::string(seg) + "' of tool " + tool + " is not an array, so it has no '[]'");
            node = next;
        }
        if (dot == std::string_view::npos) break;
        rest = rest.substr(dot + 1);
    }
    bool grounded = false;
    element g;
    if (!node["x-grounded"].get(g) && g.is_bool()) grounded = g.get_bool().value();
    if (!grounded) {
        return r.fail(kp, "argument '" + key + "' of tool " + tool +
                              " is not grounded (x-grounded), so a pattern has no values to narrow");
    }
    return {};
}

bool is_identifier(std::string_view s) {
    if (s.empty()) return false;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
        if (!ok) return false;
    }
    return true;
}

result<std::vector<std::string>> string_array(const reader& r, element v, const std::string& path) {
    if (v.type() != element_type::ARRAY) return r.fail(path, "expected an array of strings, got " + json::kind_name(v.type()));
    std::vector<std::string> out;
    size_t i = 0;
    for (element e : v.get_array()) {
        auto s = r.string(e, reader::index(path, i++));
        if (!s) return s.err();
        out.push_back(std::move(s).value());
    }
    return out;
}

// "mcp_servers": [{name, command, env?, cwd?, tools?, read_only?, grounded?, timeout_ms?}, ...]
status read_mcp_servers(const reader& r, element v, agent_definition& a) {
    if (v.type() != element_type::ARRAY) return r.fail("mcp_servers", "expected an array of MCP server entries, got " + json::kind_name(v.type()));
    size_t i = 0;
    std::set<std::string> names;
    for (element e : v.get_array()) {
        const std::string p = reader::index("mcp_servers", i++);
        TACHYON_TRY(r.object(e, p));
        TACHYON_TRY(r.keys(e, p, {"name", "command", "env", "cwd", "url", "headers", "bearer_env", "tools", "read_only", "grounded", "timeout_ms"}));
        agent_mcp_server m;
        auto n = r.require(e, p, "name");
        if (!n) return n.err();
        auto ns = r.string(*n, p + ".name");
        if (!ns) return ns.err();
        m.name = *ns;
        if (m.name.empty()) return r.fail(p + ".name", "must not be empty");
        if (!names.insert(m.name).second) return r.fail(p + ".name", "server '" + m.name + "' is listed twice");
        element f, c;
        const bool has_url = !e["url"].get(f), has_command = !e["command"].get(c);
        if (has_url == has_command)
            return r.fail(p, "give exactly one of command (a server spoken to over stdio) or url (Streamable HTTP)");
        if (has_url) {
            auto u = r.string(f, p + ".url");
            if (!u) return u.err();
            if (auto parsed = tools::mcp::parse_http_url(*u); !parsed) return r.fail(p + ".url", parsed.err().message);
            m.url = *u;
            if (!e["headers"].get(f)) {
                TACHYON_TRY(r.object(f, p + ".headers"));
                for (auto field : f.get_object()) {
                    auto val = r.string(field.value, p + ".headers." + std::string(field.key));
                    if (!val) return val.err();
                    m.headers[std::string(field.key)] = *val;
                }
            }
            if (!e["bearer_env"].get(f)) {
                auto b = r.string(f, p + ".bearer_env");
                if (!b) return b.err();
                if (!is_identifier(*b)) return r.fail(p + ".bearer_env", "expected the name of an environment variable, got '" + *b + "'");
                m.bearer_env = *b;
            }
            for (const char* key : {"env", "cwd"})
                if (!e[key].get(f)) return r.fail(reader::join(p, key), "is for servers started with \"command\", not for a url");
        } else {
            for (const char* key : {"headers", "bearer_env"})
                if (!e[key].get(f)) return r.fail(reader::join(p, key), "is for Streamable HTTP servers (\"url\"), not for a command");
            auto argv = string_array(r, c, p + ".command");
            if (!argv) return argv.err();
            if (argv->empty() || argv->front().empty()) return r.fail(p + ".command", "must name a program (expected [program, args...])");
            m.command = std::move(argv).value();
        }
        if (!e["env"].get(f)) {
            TACHYON_TRY(r.object(f, p + ".env"));
            for (auto field : f.get_object()) {
                auto val = r.string(field.value, p + ".env." + std::string(field.key));
                if (!val) return val.err();
                m.env[std::string(field.key)] = *val;
            }
        }
        if (!e["cwd"].get(f)) {
            auto s = r.string(f, p + ".cwd");
            if (!s) return s.err();
            std::filesystem::path cwd(*s);
            if (cwd.is_relative()) cwd = std::filesystem::path(a.file).parent_path() / cwd;
            std::error_code ec;
            if (!std::filesystem::is_directory(cwd, ec)) return r.fail(p + ".cwd", "'" + cwd.string() + "' is not a directory");
            m.cwd = cwd.lexically_normal().string();
        }
        for (auto [key, into] : {std::pair{"tools", &m.tools}, std::pair{"read_only", &m.read_only}}) {
            if (e[key].get(f)) continue;
            auto l = string_array(r, f, reader::join(p, key));
            if (!l) return l.err();
            *into = std::move(l).value();
        }
        if (!e["grounded"].get(f)) {
            TACHYON_TRY(r.object(f, p + ".grounded"));
            for (auto field : f.get_object()) {
                auto l = string_array(r, field.value, p + ".grounded." + std::string(field.key));
                if (!l) return l.err();
                m.grounded[std::string(field.key)] = std::move(l).value();
            }
        }
        if (!e["timeout_ms"].get(f)) {
            auto x = r.integer(f, p + ".timeout_ms", 1, 3600000);
            if (!x) return x.err();
            m.timeout_ms = *x;
        }
        a.mcp_servers.push_back(std::move(m));
    }
    return {};
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
    TACHYON_TRY(check_duplicate_keys(r, doc, ""));
    TACHYON_TRY(r.keys(doc, "", {"name", "description", "instructions", "instructions_file", "model", "chat_format", "sampling",
                                 "inputs", "tools", "mcp_servers", "budgets", "verify", "output_schema"}));
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
        auto text = read_text_file((folder / *s).string(), "the instructions file");
        if (!text) return r.fail("instructions_file", text.err().message);
        a.instructions = std::move(text).value();
        while (!a.instructions.empty() && (a.instructions.back() == '\n' || a.instructions.back() == '\r')) a.instructions.pop_back();
    }

    auto model = r.require(doc, "", "model");
    if (!model) return model.err();
    if (model->type() == element_type::OBJECT) {
        // A model served elsewhere (runtime/remote/remote_model.h): no file to check.
        auto remote = remote::parse_remote_model(simdjson::minify(*model), file_name + ": model");
        if (!remote) return remote.err();
        a.remote = std::make_shared<const remote::remote_model>(std::move(remote).value());
        a.model = a.remote->describe();
    } else {
        if (model->type() != element_type::STRING)
            return r.fail("model", "expected a GGUF file path or a remote model object ({\"url\": ..., \"name\": ...}), got " +
                                       json::kind_name(model->type()));
        std::filesystem::path mp(std::string(model->get_string().value()));
        if (mp.is_relative()) mp = folder / mp;
        a.model = mp.lexically_normal().string();
        std::error_code exists_ec;  // a name too long for the system is an error value, not an exception
        if (!std::filesystem::exists(mp, exists_ec)) return r.fail("model", "model file " + a.model + " does not exist (expected a GGUF file; relative paths resolve against the agent file's folder)");
        if (auto magic = has_gguf_magic(a.model); !magic) {
            return r.fail("model", magic.err().message + " (expected a GGUF model file)");
        } else if (!*magic) {
            return r.fail("model", a.model + " is not a GGUF file (it does not start with \"GGUF\")");
        }
    }

    if (!doc["chat_format"].get(v)) {
        auto s = r.string(v, "chat_format");
        if (!s) return s.err();
        if (!chat_format_from_name(*s)) return r.fail("chat_format", "expected one of " + chat_format_names() + ", got \"" + *s + "\"");
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

    if (!doc["inputs"].get(v)) {
        TACHYON_TRY(r.object(v, "inputs"));
        a.declares_inputs = true;
        for (auto field : v.get_object()) {
            const std::string p = reader::join("inputs", field.key);
            if (!is_identifier(field.key))
                return r.fail(p, "not an input name (expected letters, digits and '_', not starting with a digit: the form of a {placeholder})");
            TACHYON_TRY(r.object(field.value, p));
            TACHYON_TRY(r.keys(field.value, p, {"type", "description"}));
            agent_input in;
            auto t = r.require(field.value, p, "type");
            if (!t) return t.err();
            auto ts = r.string(*t, p + ".type");
            if (!ts) return ts.err();
            if (*ts == "string") in.type = agent_input_type::string;
            else if (*ts == "file") in.type = agent_input_type::file;
            else if (*ts == "directory") in.type = agent_input_type::directory;
            else if (*ts == "path") in.type = agent_input_type::path;
            else return r.fail(p + ".type", "expected \"string\", \"file\", \"directory\" or \"path\", got \"" + *ts + "\"");
            element d;
            if (!field.value["description"].get(d)) {
                auto ds = r.string(d, p + ".description");
                if (!ds) return ds.err();
                in.description = *ds;
            }
            a.inputs.emplace(std::string(field.key), std::move(in));
        }
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
                TACHYON_TRY(r.keys(t, p, {"name", "settings", "timeout_ms", "grounding", "requires_approval"}));
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
                if (!t["requires_approval"].get(f)) {
                    if (!f.is_bool()) return r.fail(p + ".requires_approval", "expected true or false, got " + json::kind_name(f.type()));
                    tool.requires_approval = f.get_bool().value();
                }
                if (!t["grounding"].get(f)) {
                    TACHYON_TRY(r.object(f, p + ".grounding"));
                    for (auto field : f.get_object()) {
                        const std::string kp = p + ".grounding." + std::string(field.key);
                        auto pattern = r.string(field.value, kp);
                        if (!pattern) return pattern.err();
                        if (auto compiled = schema_pattern::compile(*pattern); !compiled) return r.fail(kp, compiled.err().message);
                        // A built-in tool's arguments are known here; a tool given in code (SDK) checks its own.
                        if (auto schema = builtin_tool_schema(tool.name); !schema.empty())
                            TACHYON_TRY(check_grounding_key(r, tool.name, schema, std::string(field.key), kp));
                        tool.grounding[std::string(field.key)] = *pattern;
                    }
                }
            }
            if (!known(tool.name)) return r.fail(p + ".name", "unknown tool '" + tool.name + "' (built-in tools: " + known_list() + ")");
            if (!seen.insert(tool.name).second) return r.fail(p + ".name", "tool '" + tool.name + "' is listed twice");
            a.tools.push_back(std::move(tool));
        }
    }

    if (!doc["mcp_servers"].get(v)) TACHYON_TRY(read_mcp_servers(r, v, a));

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
        // Compiled here too, so a bad answer schema is named at load, not when a run starts.
        auto compiled = json_schema::parse(a.output_schema, "final answer", "field");
        if (!compiled) return r.fail("output_schema", compiled.err().message);
        if (auto c = compiled->unsatisfiable()) return r.fail("output_schema." + c->path, c->what);
        TACHYON_TRY(check_required_properties(r, *compiled, 0, "output_schema"));
    }

    // Each setting that holds placeholders, with its key path, for the two checks below.
    struct setting_ref {
        std::string path;
        std::string key;
        const std::string* value;
    };
    std::vector<setting_ref> settings;
    for (size_t i = 0; i < a.tools.size(); ++i)
        for (const auto& [k, val] : a.tools[i].settings) settings.push_back({reader::index("tools", i) + ".settings." + k, k, &val});
    for (size_t i = 0; i < a.verify.size(); ++i)
        for (const auto& [k, val] : a.verify[i].settings) settings.push_back({reader::index("verify.checks", i) + ".settings." + k, k, &val});

    if (a.declares_inputs) {
        std::string declared;
        for (const auto& [n, in] : a.inputs) declared += (declared.empty() ? "" : ", ") + n;
        if (declared.empty()) declared = "none";
        auto check = [&](const std::string& path, const std::string& text) -> status {
            std::set<std::string> used;
            collect_placeholders(text, used);
            for (const auto& name : used)
                if (!a.inputs.count(name)) return r.fail(path, "placeholder {" + name + "} is not a declared input (inputs: " + declared + ")");
            return {};
        };
        TACHYON_TRY(check(has_instr ? "instructions" : "instructions_file", a.instructions));
        for (const auto& st : settings) TACHYON_TRY(check(st.path, *st.value));
    }
    // A literal tool root is checked now; one with placeholders when the run's inputs are known (check_run_inputs).
    for (const auto& st : settings) {
        std::set<std::string> used;
        collect_placeholders(*st.value, used);
        if (is_root_key(st.key) && used.empty()) TACHYON_TRY(check_root_dirs(file_name + ": " + st.path, st.key, *st.value, ""));
    }
    return a;
}

result<agent_definition> load_agent_file(const std::string& path, const std::vector<std::string>& known_tools) {
    auto text = read_text_file(path, "the agent file");
    if (!text) return text.err();
    return parse_agent_definition(*text, path, known_tools);
}

result<std::map<std::string, std::string>> parse_tool_settings(std::string_view json_text) {
    simdjson::dom::parser parser;
    simdjson::dom::object object;
    if (parser.parse(simdjson::padded_string(json_text)).get_object().get(object) != simdjson::SUCCESS)
        return make_error(errc::invalid_argument, "tool settings: expected a JSON object");
    return settings_text(object);
}

std::string_view to_string(agent_input_type type) {
    switch (type) {
        case agent_input_type::string: return "string";
        case agent_input_type::file: return "file";
        case agent_input_type::directory: return "directory";
        case agent_input_type::path: return "path";
    }
    return "string";
}

}  // namespace tachyon
