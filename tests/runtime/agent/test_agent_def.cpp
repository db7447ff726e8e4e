#include "runtime/agent/agent_def.h"

#include "runtime/formats/chat_format.h"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/agent/tool_catalog.h"

using namespace tachyon;

namespace {

struct agent_dir {
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("tachyon_agent_def_" + std::to_string(::getpid()));
    agent_dir() {
        std::filesystem::create_directories(path);
        std::ofstream(path / "model.gguf") << "GGUF";
        std::ofstream(path / "prompt.txt") << "You analyse incidents in {incident_dir}.\n";
    }
    ~agent_dir() { std::filesystem::remove_all(path); }
    std::string file() const { return (path / "agent.json").string(); }
};

result<agent_definition> parse(const agent_dir& d, const std::string& json) {
    return parse_agent_definition(json, d.file(), builtin_tool_names());
}

std::string error_of(const agent_dir& d, const std::string& json) {
    auto r = parse(d, json);
    REQUIRE_FALSE(r.ok());
    return r.err().message;
}

}  // namespace

TEST_CASE("a complete agent file loads with every field") {
    agent_dir d;
    auto r = parse(d, R"({
        "name": "analyst", "description": "finds root causes",
        "instructions_file": "prompt.txt", "model": "model.gguf", "chat_format": "chatml",
        "sampling": {"temperature": 0.5, "top_k": 20, "top_p": 0.9, "seed": 7},
        "tools": ["list_services", {"name": "search_logs", "settings": {"root": "{incident_dir}"}, "timeout_ms": 500,
                                    "grounding": {"service": "^[a-z-]+$"}}],
        "budgets": {"max_steps": 6, "max_tokens": 900, "deadline_ms": 30000, "tool_timeout_ms": 2000},
        "verify": {"checks": [{"tool": "verify_root_cause", "arguments": {"service": "$.service", "fault_type": "oom_kill"},
                               "settings": {"root": "{incident_dir}"}}], "max_verify_retries": 3},
        "output_schema": {"type": "object", "properties": {"service": {"type": "string"}}}
    })");
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.err().message));
    CHECK(r->name == "analyst");
    CHECK(r->instructions == "You analyse incidents in {incident_dir}.");
    CHECK(r->model == (d.path / "model.gguf").lexically_normal().string());
    CHECK(r->sampling.temperature == doctest::Approx(0.5));
    CHECK(r->sampling.top_k == 20);
    CHECK(r->sampling.seed == 7);
    REQUIRE(r->tools.size() == 2);
    CHECK(r->tools[1].settings.at("root") == "{incident_dir}");
    CHECK(*r->tools[1].timeout_ms == 500);
    CHECK(r->tools[1].grounding.at("service") == "^[a-z-]+$");
    CHECK(r->budgets.max_steps == 6);
    CHECK(r->max_verify_retries == 3);
    REQUIRE(r->verify.size() == 1);
    CHECK(r->verify[0].arguments[0].second == "$.service");
    CHECK(r->verify[0].arguments[1].second == "\"oom_kill\"");  // a literal, as JSON
    CHECK(r->output_schema == R"({"type":"object","properties":{"service":{"type":"string"}}})");
    CHECK(r->placeholders() == std::vector<std::string>{"incident_dir"});
}

TEST_CASE("each kind of mistake is named with the file, the key path and what was expected") {
    agent_dir d;
    const std::string f = d.file() + ": ";
    CHECK(error_of(d, "{not json") .find(d.file() + ": not valid JSON") == 0);
    CHECK(error_of(d, R"([1])") == f + "top level: expected an object, got an array");
    CHECK(error_of(d, R"({"model": "model.gguf", "instructions": "x"})") == f + "name: missing (required)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "colour": 1})") ==
          f + "colour: unknown key (expected one of: name, description, instructions, instructions_file, model, chat_format, "
              "sampling, inputs, tools, mcp_servers, budgets, verify, output_schema)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "budgets": {"max_stpes": 3}})") ==
          f + "budgets.max_stpes: unknown key (expected one of: max_steps, max_tokens, deadline_ms, tool_timeout_ms)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "budgets": {"max_steps": "ten"}})") ==
          f + "budgets.max_steps: expected an integer, got a string");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "budgets": {"max_steps": 0}})") ==
          f + "budgets.max_steps: expected an integer in [1, 1000], got 0");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "sampling": {"top_p": 2}})") ==
          f + "sampling.top_p: expected a number in [1e-06, 1], got 2");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "tools": ["grep_logs"]})")
              .find(f + "tools[0].name: unknown tool 'grep_logs' (built-in tools: list_services") == 0);
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "tools": ["shell", "shell"]})") ==
          f + "tools[1].name: tool 'shell' is listed twice");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "tools": [{"name": "shell", "timeout": 5}]})") ==
          f + "tools[0].timeout: unknown key (expected one of: name, settings, timeout_ms, grounding, requires_approval)");
    CHECK(error_of(d, R"js({"name": "a", "model": "model.gguf", "instructions": "x", "tools": [{"name": "get_trace", "grounding": {"trace_id": "(a|b)"}}]})js")
              .find(f + "tools[0].grounding.trace_id: ") == 0);
    CHECK(error_of(d, R"({"name": "a", "model": "missing.gguf", "instructions": "x"})")
              .find(f + "model: model file " + (d.path / "missing.gguf").string() + " does not exist") == 0);
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf"})") == f + "instructions: give exactly one of instructions or instructions_file");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "chat_format": "alpaca"})") ==
          f + "chat_format: expected one of " + chat_format_names() + ", got \"alpaca\"");
    // Every family of the chat-format table is a valid value.
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "chat_format": "qwen3", "tools": [{"name": "nope"}]})")
              .find("chat_format") == std::string::npos);
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "verify": {"checks": [{"tool": "nope"}]}})")
              .find(f + "verify.checks[0].tool: unknown tool 'nope'") == 0);
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "output_schema": []})") ==
          f + "output_schema: expected an object, got an array");
}

TEST_CASE("requires_approval marks a tool whose calls wait for a person, it must be true or false") {
    agent_dir d;
    auto r = parse(d, R"({"name": "a", "model": "model.gguf", "instructions": "x",
                          "tools": ["read_file", {"name": "shell", "requires_approval": true}]})");
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.err().message));
    CHECK_FALSE(r->tools[0].requires_approval);
    CHECK(r->tools[1].requires_approval);
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "tools": [{"name": "shell", "requires_approval": "yes"}]})") ==
          d.file() + ": tools[0].requires_approval: expected true or false, got a string");
}

TEST_CASE("placeholders: {identifier} forms are filled, JSON braces are left alone, a missing input is named") {
    std::map<std::string, std::string> in{{"dir", "/tmp/x"}};
    auto ok = fill_placeholders(R"(Look in {dir}; answer {"service": "..."} or {} or { dir })", in, "agent.json: instructions");
    REQUIRE(ok.ok());
    CHECK(*ok == R"(Look in /tmp/x; answer {"service": "..."} or {} or { dir })");
    auto missing = fill_placeholders("Look in {incident_dir}", in, "agent.json: instructions");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.err().message ==
          "agent.json: instructions: no value for placeholder {incident_dir} (give it as an input, e.g. --input incident_dir=...)");
}

TEST_CASE("the shipped incident-analyst agent file is valid") {
    const std::string path = std::string(TACHYON_SOURCE_DIR) + "/agents/incident-analyst.json";
    auto r = load_agent_file(path, builtin_tool_names());
    if (!r.ok() && r.err().message.find("does not exist") != std::string::npos) {
        MESSAGE("skipped: the shipped model is not built yet: " << r.err().message);
        return;
    }
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.err().message));
    CHECK(r->name == "incident-analyst");
    CHECK(r->declares_inputs);
    REQUIRE(r->inputs.count("incident_dir") == 1);
    CHECK(r->inputs.at("incident_dir").type == agent_input_type::directory);
    CHECK(r->tools.size() == 5);
    CHECK(r->verify.size() == 1);
    CHECK_FALSE(r->output_schema.empty());
}

TEST_CASE("agent files and instructions_file must be regular files of at most 1 MiB") {
    agent_dir d;
    const std::string f = d.file() + ": ";
    auto with_instructions = [&](const std::string& file) {
        return error_of(d, R"({"name": "a", "model": "model.gguf", "instructions_file": ")" + file + "\"}");
    };
    std::filesystem::create_directories(d.path / "prompts");
    CHECK(with_instructions("prompts") == f + "instructions_file: " + (d.path / "prompts").string() + ": a directory (expected a regular file)");
    REQUIRE(::mkfifo((d.path / "fifo").c_str(), 0600) == 0);
    // Opened without blocking and refused before a read: no writer ever comes.
    CHECK(with_instructions("fifo") == f + "instructions_file: " + (d.path / "fifo").string() + ": a FIFO (expected a regular file)");
    CHECK(with_instructions("/dev/zero") == f + "instructions_file: /dev/zero: a character device (expected a regular file)");
    std::ofstream(d.path / "big.txt") << std::string(agent_file_max_bytes + 1, 'x');
    CHECK(with_instructions("big.txt") == f + "instructions_file: " + (d.path / "big.txt").string() +
                                               ": larger than the limit of 1048576 bytes (1 MiB) for agent files");
    std::ofstream(d.path / "fits.txt") << std::string(agent_file_max_bytes, 'x');
    auto fits = parse(d, R"({"name": "a", "model": "model.gguf", "instructions_file": "fits.txt"})");
    REQUIRE_MESSAGE(fits.ok(), (fits.ok() ? "" : fits.err().message));
    CHECK(fits->instructions.size() == agent_file_max_bytes);
    CHECK(with_instructions("missing.txt").find(f + "instructions_file: " + (d.path / "missing.txt").string() + ": cannot open") == 0);

    // The agent file itself.
    auto load_error = [](const std::string& path) {
        auto r = load_agent_file(path, builtin_tool_names());
        REQUIRE_FALSE(r.ok());
        return r.err().message;
    };
    CHECK(load_error((d.path / "fifo").string()) == (d.path / "fifo").string() + ": a FIFO (expected a regular file)");
    CHECK(load_error((d.path / "prompts").string()).find(": a directory (expected a regular file)") != std::string::npos);
    CHECK(load_error((d.path / "big.txt").string()).find("larger than the limit of 1048576 bytes") != std::string::npos);
}

TEST_CASE("a key given twice in any object is an error naming its key path") {
    agent_dir d;
    const std::string f = d.file() + ": ";
    CHECK(error_of(d, R"({"name": "a", "name": "b", "model": "model.gguf", "instructions": "x"})") ==
          f + "name: duplicate key (a key may appear once in an object)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x",
                          "tools": [{"name": "read_file", "settings": {"roots": ["/tmp"], "roots": ["/"]}}]})") ==
          f + "tools[0].settings.roots: duplicate key (a key may appear once in an object)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x",
                          "output_schema": {"type": "object", "properties": {"s": {"type": "string", "type": "integer"}}}})") ==
          f + "output_schema.properties.s.type: duplicate key (a key may appear once in an object)");
}

TEST_CASE("grounding must name a grounded argument of the tool") {
    agent_dir d;
    const std::string f = d.file() + ": ";
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x",
                          "tools": [{"name": "get_trace", "settings": {"root": "/"}, "grounding": {"traceid": "^[0-9a-f]+$"}}]})") ==
          f + "tools[0].grounding.traceid: tool get_trace has no argument 'traceid' (its arguments: trace_id)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x",
                          "tools": [{"name": "search_logs", "settings": {"root": "/"}, "grounding": {"since": "^[0-9]+$"}}]})") ==
          f + "tools[0].grounding.since: argument 'since' of tool search_logs is not grounded (x-grounded), so a pattern has no values to narrow");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x",
                          "tools": [{"name": "http_get", "grounding": {"host": "^a$"}}]})") ==
          f + "tools[0].grounding.host: tool http_get has no argument 'host' (its arguments: url)");
    auto ok = parse(d, R"({"name": "a", "model": "model.gguf", "instructions": "x",
                           "tools": [{"name": "verify_root_cause", "settings": {"root": "/"}, "grounding": {"evidence[]": "^[a-z]+:[0-9]+$"}}]})");
    CHECK_MESSAGE(ok.ok(), (ok.ok() ? "" : ok.err().message));
}

TEST_CASE("an output schema no answer can satisfy is named at load with its key path") {
    agent_dir d;
    const std::string f = d.file() + ": ";
    auto with_schema = [&](const std::string& schema) {
        return error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "output_schema": )" + schema + "}");
    };
    CHECK(with_schema(R"({"type": "object", "properties": {"service": {"type": "string"}}, "required": ["servce"]})") ==
          f + "output_schema.required: names 'servce', which is not in properties (properties: service)");
    // Bounds no value meets (json_schema::unsatisfiable words these).
    CHECK(with_schema(R"({"type": "object", "properties": {"s": {"type": "string", "minLength": 5, "maxLength": 3}}})")
              .find(f + "output_schema.properties.s.minLength: ") == 0);
    CHECK(with_schema(R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 10, "maximum": 1}}})")
              .find(f + "output_schema.properties.n.minimum: ") == 0);
    CHECK(with_schema(R"({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object", "properties": {"y": {}}, "required": ["x"]}}}})") ==
          f + "output_schema.properties.l.items.required: names 'x', which is not in properties (properties: y)");
    // A schema json_schema cannot compile is named now, not when a run starts.
    CHECK(with_schema(R"({"type": 5})").find(f + "output_schema: ") == 0);
}

TEST_CASE("the model must be a GGUF file and a literal tool root a directory, at load") {
    agent_dir d;
    const std::string f = d.file() + ": ";
    std::filesystem::create_directories(d.path / "models");
    std::ofstream(d.path / "notes.txt") << "not a model";
    CHECK(error_of(d, R"({"name": "a", "model": "models", "instructions": "x"})") ==
          f + "model: " + (d.path / "models").string() + ": a directory (expected a regular file) (expected a GGUF model file)");
    CHECK(error_of(d, R"({"name": "a", "model": "notes.txt", "instructions": "x"})") ==
          f + "model: " + (d.path / "notes.txt").string() + " is not a GGUF file (it does not start with \"GGUF\")");
    const std::string missing = (d.path / "no-such-dir").string();
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "tools": [{"name": "search_logs", "settings": {"root": ")" +
                          missing + "\"}}]}") ==
          f + "tools[0].settings.root: '" + missing + "' is not a directory (a tool root must be an existing directory)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "tools": [{"name": "read_file", "settings": {"roots": [")" +
                          d.path.string() + "\", \"" + missing + "\"]}}]}") ==
          f + "tools[0].settings.roots: '" + missing + "' is not a directory (a tool root must be an existing directory)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "verify": {"checks": [{"tool": "verify_root_cause", "settings": {"root": ")" +
                          missing + "\"}}]}}") ==
          f + "verify.checks[0].settings.root: '" + missing + "' is not a directory (a tool root must be an existing directory)");
}

TEST_CASE("inputs: declarations are read, placeholders must name one, bad declarations are named") {
    agent_dir d;
    const std::string f = d.file() + ": ";
    auto r = parse(d, R"({"name": "a", "model": "model.gguf", "instructions_file": "prompt.txt",
                          "inputs": {"incident_dir": {"type": "directory", "description": "the incident's files"}, "ticket": {"type": "string"}},
                          "tools": [{"name": "search_logs", "settings": {"root": "{incident_dir}"}}]})");
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.err().message));
    CHECK(r->declares_inputs);
    REQUIRE(r->inputs.size() == 2);
    CHECK(r->inputs.at("incident_dir").type == agent_input_type::directory);
    CHECK(r->inputs.at("incident_dir").description == "the incident's files");
    CHECK(r->inputs.at("ticket").type == agent_input_type::string);

    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions_file": "prompt.txt", "inputs": {"dir": {"type": "directory"}}})") ==
          f + "instructions_file: placeholder {incident_dir} is not a declared input (inputs: dir)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "inputs": {},
                          "tools": [{"name": "search_logs", "settings": {"root": "{incident_dir}"}}]})") ==
          f + "tools[0].settings.root: placeholder {incident_dir} is not a declared input (inputs: none)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "inputs": {"dir": {"type": "folder"}}})") ==
          f + "inputs.dir.type: expected \"string\", \"file\", \"directory\" or \"path\", got \"folder\"");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "inputs": {"dir": {}}})") ==
          f + "inputs.dir.type: missing (required)");
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "inputs": {"incident-dir": {"type": "string"}}})")
              .find(f + "inputs.incident-dir: not an input name") == 0);
    CHECK(error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "inputs": {"dir": {"type": "path", "default": "/"}}})") ==
          f + "inputs.dir.default: unknown key (expected one of: type, description)");
}

TEST_CASE("check_run_inputs: declared inputs are required, typed, and confined to the data roots for remote callers") {
    agent_dir d;
    std::filesystem::create_directories(d.path / "data" / "incident");
    std::filesystem::create_directories(d.path / "outside");
    std::ofstream(d.path / "data" / "notes.txt") << "n";
    std::filesystem::create_directory_symlink(d.path / "outside", d.path / "data" / "escape");
    const std::string data = (d.path / "data").string(), incident = (d.path / "data" / "incident").string();
    auto agent = parse(d, R"({"name": "a", "model": "model.gguf", "instructions": "Look in {incident_dir}.",
                              "inputs": {"incident_dir": {"type": "directory"}, "ticket": {"type": "string"}},
                              "tools": [{"name": "search_logs", "settings": {"root": "{incident_dir}"}}]})");
    REQUIRE_MESSAGE(agent.ok(), (agent.ok() ? "" : agent.err().message));
    auto err_of = [&](const agent_definition& a, std::map<std::string, std::string> in, const input_confinement* c) {
        auto r = check_run_inputs(a, in, c);
        REQUIRE_FALSE(r.ok());
        CHECK(r.err().code == errc::invalid_argument);
        return r.err().message;
    };
    auto err = [&](std::map<std::string, std::string> in, const input_confinement* c) {
        auto r = check_run_inputs(*agent, in, c);
        REQUIRE_FALSE(r.ok());
        CHECK(r.err().code == errc::invalid_argument);
        return r.err().message;
    };
    const input_confinement roots{{data}};
    const input_confinement none{};

    // Local: declarations are checked, nothing is confined.
    auto local = check_run_inputs(*agent, {{"incident_dir", (d.path / "outside").string()}, {"ticket", "T-1"}});
    REQUIRE_MESSAGE(local.ok(), (local.ok() ? "" : local.err().message));
    CHECK(local->at("incident_dir") == (d.path / "outside").string());
    CHECK(err({{"ticket", "T-1"}}, nullptr) == "inputs.incident_dir: missing (agent 'a' declares it as a directory)");
    CHECK(err({{"incident_dir", incident}, {"ticket", "T-1"}, {"extra", "x"}}, nullptr) ==
          "inputs.extra: not an input of agent 'a' (declared: incident_dir, ticket)");
    CHECK(err({{"incident_dir", data + "/notes.txt"}, {"ticket", "T-1"}}, nullptr) ==
          "inputs.incident_dir: '" + data + "/notes.txt' is a file (expected a directory)");
    CHECK(err({{"incident_dir", data + "/nope"}, {"ticket", "T-1"}}, nullptr) ==
          "inputs.incident_dir: '" + data + "/nope' does not exist (expected a directory)");

    // Remote: inside one root, after resolving symlinks.
    auto inside = check_run_inputs(*agent, {{"incident_dir", data + "/./incident"}, {"ticket", "T-1"}}, &roots);
    REQUIRE_MESSAGE(inside.ok(), (inside.ok() ? "" : inside.err().message));
    CHECK(inside->at("incident_dir") == std::filesystem::canonical(incident).string());
    CHECK(err({{"incident_dir", "/etc"}, {"ticket", "T-1"}}, &roots) == "inputs.incident_dir: '/etc' is outside the data roots (" + data + ")");
    CHECK(err({{"incident_dir", data + "/escape"}, {"ticket", "T-1"}}, &roots) ==
          "inputs.incident_dir: '" + data + "/escape' is outside the data roots (" + data + ")");
    CHECK(err({{"incident_dir", data + "/../outside"}, {"ticket", "T-1"}}, &roots) ==
          "inputs.incident_dir: '" + data + "/../outside' is outside the data roots (" + data + ")");
    CHECK(err({{"incident_dir", data + "2"}, {"ticket", "T-1"}}, &roots).find("is outside the data roots") != std::string::npos);
    CHECK(err({{"incident_dir", incident}, {"ticket", "T-1"}}, &none) ==
          "inputs.incident_dir: path inputs are refused: the server has no data roots (start it with --data-root DIR)");

    // An agent without an "inputs" declaration takes inputs locally only.
    auto open = parse(d, R"({"name": "b", "model": "model.gguf", "instructions": "Look in {dir}."})");
    REQUIRE(open.ok());
    CHECK(check_run_inputs(*open, {{"dir", "/anything"}, {"more", "x"}}).ok());
    CHECK(err_of(*open, {}, nullptr) == "inputs.dir: missing (agent 'b' uses {dir})");
    CHECK(err_of(*open, {{"dir", incident}}, &roots).find("inputs.dir: not accepted: agent 'b' declares no inputs") == 0);
    CHECK(err_of(*open, {}, &roots).find("inputs.dir: cannot be given: agent 'b' declares no inputs") == 0);
}

TEST_CASE("check_run_inputs: a tool root filled from an input must be a directory, named with the file and key") {
    agent_dir d;
    auto agent = parse(d, R"({"name": "a", "model": "model.gguf", "instructions": "x",
                              "tools": [{"name": "search_logs", "settings": {"root": "{base}/logs"}}]})");
    REQUIRE(agent.ok());
    auto r = check_run_inputs(*agent, {{"base", d.path.string()}});
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message == d.file() + ": tools[0].settings.root: '" + d.path.string() +
                                 "/logs' (from {base}/logs) is not a directory (a tool root must be an existing directory)");
    std::filesystem::create_directories(d.path / "logs");
    CHECK(check_run_inputs(*agent, {{"base", d.path.string()}}).ok());
}

TEST_CASE("an output schema with an empty enum or another unsatisfiable keyword is named at load") {
    agent_dir d;
    const std::string f = d.file() + ": ";
    auto with_schema = [&](const std::string& schema) {
        return error_of(d, R"({"name": "a", "model": "model.gguf", "instructions": "x", "output_schema": )" + schema + "}");
    };
    CHECK(with_schema(R"({"type": "object", "properties": {"a": {"enum": []}}})") ==
          f + "output_schema.properties.a.enum: empty enum (expected at least one value)");
    CHECK(with_schema(R"({"type": "object", "properties": {"a": {"type": "integer", "enum": ["x", "y"]}}})")
              .starts_with(f + "output_schema.properties.a.enum: no enum value is valid for the rest of this schema"));
}

TEST_CASE("mcp_servers: entries load with argv, env, cwd, subset and read_only, mistakes are named") {
    agent_dir d;
    const std::string head = R"({"name": "a", "instructions": "x", "model": "model.gguf", "mcp_servers": )";
    auto a = parse(d, head + R"([{"name": "files", "command": ["/usr/bin/python3", "server.py"], "env": {"TOKEN": "t"}, "cwd": ".",
                                  "tools": ["echo"], "read_only": ["echo"], "grounded": {"echo": ["text"]}, "timeout_ms": 500}]})");
    REQUIRE_MESSAGE(a.ok(), a.err().message);
    REQUIRE(a->mcp_servers.size() == 1);
    const agent_mcp_server& m = a->mcp_servers[0];
    CHECK(m.name == "files");
    CHECK(m.command == std::vector<std::string>{"/usr/bin/python3", "server.py"});
    CHECK(m.env.at("TOKEN") == "t");
    CHECK(m.cwd == d.path.string() + "/");  // relative to the agent file's folder
    CHECK(m.tools == std::vector<std::string>{"echo"});
    CHECK(m.read_only == std::vector<std::string>{"echo"});
    CHECK(m.grounded.at("echo") == std::vector<std::string>{"text"});
    CHECK(m.timeout_ms == 500);

    CHECK(error_of(d, head + R"([{"name": "s"}]})").find("mcp_servers[0]: give exactly one of command") != std::string::npos);
    CHECK(error_of(d, head + R"([{"name": "s", "command": []}]})").find("mcp_servers[0].command: must name a program") != std::string::npos);
    CHECK(error_of(d, head + R"([{"name": "s", "command": ["x"], "port": 1}]})").find("mcp_servers[0].port: unknown key") != std::string::npos);
    CHECK(error_of(d, head + R"([{"name": "s", "command": ["x"]}, {"name": "s", "command": ["y"]}]})")
              .find("mcp_servers[1].name: server 's' is listed twice") != std::string::npos);
    CHECK(error_of(d, head + R"([{"name": "s", "command": ["x"], "cwd": "nowhere"}]})").find("mcp_servers[0].cwd: ") != std::string::npos);
    auto remote = parse(d, head + R"([{"name": "r", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Team": "blue"}, "bearer_env": "MCP_TOKEN"}]})");
    REQUIRE_MESSAGE(remote.ok(), remote.err().message);
    CHECK(remote->mcp_servers[0].url == "http://127.0.0.1:9/mcp");
    CHECK(remote->mcp_servers[0].headers.at("X-Team") == "blue");
    CHECK(remote->mcp_servers[0].bearer_env == "MCP_TOKEN");
    CHECK(error_of(d, head + R"([{"name": "s", "url": "https://example.org/mcp"}]})").find("mcp_servers[0].url: url 'https://example.org/mcp'") !=
          std::string::npos);
    CHECK(error_of(d, head + R"([{"name": "s", "url": "http://h/", "command": ["x"]}]})").find("give exactly one of command") != std::string::npos);
    CHECK(error_of(d, head + R"([{"name": "s", "command": ["x"], "bearer_env": "T"}]})").find("mcp_servers[0].bearer_env: is for Streamable HTTP servers") !=
          std::string::npos);
    CHECK(error_of(d, head + R"([{"name": "s", "url": "http://h/", "bearer_env": "$T"}]})").find("expected the name of an environment variable") !=
          std::string::npos);
    CHECK(error_of(d, head + R"({}})").find("mcp_servers: expected an array of MCP server entries") != std::string::npos);
}

TEST_CASE("a model path too long for the file system is an error naming the key, not an exception") {
    agent_dir d;
    const std::string long_name(5000, 'm');
    const std::string message = error_of(d, R"({"name": "a", "instructions": "x", "model": ")" + long_name + R"(.gguf"})");
    CHECK(message.find("model: model file ") != std::string::npos);
    CHECK(message.find("does not exist") != std::string::npos);
}
