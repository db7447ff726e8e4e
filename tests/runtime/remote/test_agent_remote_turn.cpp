// The agent loop on a remote model, end to end: the built `tachyon serve`
// serves the shipped model on a loopback port, and the incident agent runs
// against it in both tool modes on an incident of the incident world. Greedy
// on both sides and under the same constraints, the remote run writes the
// turns the built-in engine writes for the same seed. A fake backend that
// breaks its stream, answers 503 or hangs ends the run with an error that
// names it or is retried, never a crash.
#include "runtime/agent/agent_service.h"

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <cstdio>
#include <thread>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fake_backend.h"

using namespace tachyon;
namespace fs = std::filesystem;

namespace {

const std::string tachyon_bin = std::string(TACHYON_BINARY_DIR) + "/runtime/tachyon";
const std::string world_bin = std::string(TACHYON_BINARY_DIR) + "/examples/incident/incident-world";
const std::string shipped_model = std::string(TACHYON_SOURCE_DIR) + "/examples/incident/model/incident-analyst.gguf";
const std::string agent_file = std::string(TACHYON_SOURCE_DIR) + "/agents/incident-analyst.json";
const std::string task = "users report errors since the incident began; find the root cause";

struct temp_dir {
    fs::path path;
    explicit temp_dir(const std::string& name) : path(fs::path(TACHYON_BINARY_DIR) / "test_tmp" / (name + "-" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() { fs::remove_all(path); }
};

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// The shipped agent with its "model" replaced by `model_json`, as if its file said so.
std::shared_ptr<const agent_definition> agent_with_model(const std::string& model_json) {
    std::string text = read_file(agent_file);
    const std::string key = "\"model\": \"../examples/incident/model/incident-analyst.gguf\"";
    const size_t at = text.find(key);
    REQUIRE(at != std::string::npos);
    text.replace(at, key.size(), "\"model\": " + model_json);
    auto a = parse_agent_definition(text, agent_file);
    REQUIRE_MESSAGE(a.ok(), (a.ok() ? "" : a.err().message));
    return std::make_shared<const agent_definition>(std::move(a).value());
}

// `tachyon serve` on an ephemeral loopback port, stopped (SIGTERM) at the end.
struct served {
    pid_t pid = -1;
    uint16_t port = 0;
    explicit served(const std::vector<std::string>& extra) {
        int out[2];
        REQUIRE(::pipe(out) == 0);
        std::vector<std::string> args = {tachyon_bin, "serve", "--port", "0"};
        args.insert(args.end(), extra.begin(), extra.end());
        pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::dup2(out[1], 1);
            ::close(out[0]);
            std::vector<char*> argv;
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        ::close(out[1]);
        // "tachyon serve: listening on http://127.0.0.1:PORT (...)"
        std::string line;
        char c;
        while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
        ::close(out[0]);
        const std::string marker = "http://127.0.0.1:";
        const size_t at = line.find(marker);
        REQUIRE_MESSAGE(at != std::string::npos, "tachyon serve did not start: " << line);
        port = static_cast<uint16_t>(std::stoi(line.substr(at + marker.size())));
    }
    ~served() {
        ::kill(pid, SIGTERM);
        int st = 0;
        ::waitpid(pid, &st, 0);
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/v1"; }
};

struct reply {
    int status = 0;
    std::string body;
};

// One request on a fresh connection (synchronous Beast client).
reply send(uint16_t port, boost::beast::http::verb method, const std::string& target, const std::string& body = {}) {
    namespace bhttp = boost::beast::http;
    boost::asio::io_context io;
    boost::beast::tcp_stream stream(io);
    stream.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
    bhttp::request<bhttp::string_body> req{method, target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    if (!body.empty()) {
        req.set(bhttp::field::content_type, "application/json");
        req.body() = body;
    }
    req.prepare_payload();
    bhttp::write(stream, req);
    boost::beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64 << 20);
    boost::beast::error_code ec;
    bhttp::read(stream, buffer, parser, ec);
    reply r;
    if (ec) return r;
    r.status = parser.get().result_int();
    r.body = parser.get().body();
    return r;
}

run_request incident_run(std::shared_ptr<const agent_definition> agent, const std::string& incident) {
    run_request r;
    r.agent = std::move(agent);
    r.task = task;
    r.inputs = {{"incident_dir", incident}};
    r.journal_dir.clear();
    return r;
}

}  // namespace

TEST_CASE("remote model: the incident agent against tachyon serve runs the built-in engine's trajectory, with server-side and text tool calls") {
    if (!fs::exists(shipped_model) || !fs::exists(world_bin) || !fs::exists(tachyon_bin)) {
        MESSAGE("skipped: the shipped model, incident-world or the tachyon binary is absent");
        return;
    }
    temp_dir tmp("remote_agent");
    const std::string incident = (tmp.path / "incident").string();
    REQUIRE(std::system((world_bin + " generate --seed 1000003 --out " + incident + " > /dev/null").c_str()) == 0);

    service_options so;
    so.engine.n_ctx = 16384;
    agent_service service(so);
    auto local_agent = load_agent_file(agent_file);
    REQUIRE(local_agent.ok());
    served backend({"--model", shipped_model, "--ctx", "16384"});
    // What each mode asks the server to constrain: server mode the tools'
    // and the answer's schemas (grounding to the run's values is the
    // runner's, not the server's), text mode nothing. The local engine under
    // the same constraints, greedy, writes the same turns: the requests
    // render to the prompt the local engine reads, byte for byte.
    // Five steps: the conversation stays inside the model's trained context,
    // which the server holds requests to (the local engine runs past it).
    auto local_def = std::make_shared<agent_definition>(*local_agent);
    local_def->budgets.max_steps = 5;
    for (const char* mode : {"server", "text"}) {
        INFO("mode: " << std::string(mode));
        run_switches same;
        same.grounding = false;
        same.constrain = std::string(mode) == "server";
        run_request local_req = incident_run(local_def, incident);
        local_req.switches = same;
        const run_outcome local = service.run(std::move(local_req));
        auto remote_def = std::make_shared<agent_definition>(
            *agent_with_model(R"({"url": ")" + backend.url() + R"(", "name": "incident-analyst", "tools": ")" + mode + R"(", "timeout_s": 120})"));
        remote_def->budgets.max_steps = 5;
        REQUIRE(remote_def->remote != nullptr);
        run_request remote_req = incident_run(remote_def, incident);
        remote_req.switches = same;
        const run_outcome remote = service.run(std::move(remote_req));
        CHECK_MESSAGE(remote.error.find("remote model") == std::string::npos, remote.error);  // no transport failure
        // The first turn reads the same prompt under the same constraint: the
        // same text. Later turns may part where the model is unsure (ids it
        // makes up when grounding is off): prefill in one batch on the server
        // and token by token here round differently.
        REQUIRE_FALSE(remote.turns.empty());
        REQUIRE_FALSE(local.turns.empty());
        CHECK(remote.turns[0].text == local.turns[0].text);
        CHECK(remote.n_tool_calls > 0);
        // The server's prefix cache served each later turn: the conversation so far came again unchanged.
        REQUIRE(remote.turns.size() >= 2);
        for (size_t i = 1; i < remote.turns.size(); ++i) CHECK(remote.turns[i].reused_tokens > 0);
    }

    // With the run's grounding (the shipped agent as it is): the remote run
    // goes through the whole loop, calls checked against the values seen,
    // the answer's grounded fields sent to the server as enums.
    auto agent = agent_with_model(R"({"url": ")" + backend.url() + R"(", "name": "incident-analyst", "timeout_s": 120})");
    const run_outcome grounded = service.run(incident_run(agent, incident));
    CHECK_MESSAGE(grounded.error.find("remote model") == std::string::npos, grounded.error);
    CHECK(grounded.n_tool_calls > 0);
    CHECK(grounded.steps > 1);
}

TEST_CASE("remote model: a backend whose stream breaks, answers 503 then recovers, or hangs: a clear run error or a retried turn, never a crash") {
    temp_dir tmp("remote_agent_fake");
    const std::string incident = (tmp.path / "incident").string();
    fs::create_directories(incident + "/logs");
    std::ofstream(incident + "/logs/app.log") << "2026-03-14T14:00:00.000Z app[1]: ERROR boom\n";
    service_options so;
    agent_service service(so);

    fake_backend::server broken({fake_backend::sse({R"({"choices": [{"index": 0, "delta": {"content": "Let me"}}]})", "{\"choices\": [{"})});
    auto agent = agent_with_model(R"({"url": ")" + broken.url() + R"(", "name": "m"})");
    const run_outcome out = service.run(incident_run(agent, incident));
    CHECK(out.state == "failed");
    CHECK(out.error.rfind("remote model m at " + broken.url() + ": event stream: not valid JSON", 0) == 0);
    REQUIRE(out.turns.size() == 1);
    CHECK(out.turns[0].text == "Let me");  // the turn as far as it came, recorded

    // 503 with Retry-After, then an answer: the run goes on (here: a final answer the verifier rejects, then a bad call).
    fake_backend::server busy({fake_backend::status(503, "Service Unavailable", "{}", "Retry-After: 0\r\n"),
                               fake_backend::sse({R"({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "x", "function": {"name": "no_such_tool", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]})"})});
    auto busy_agent = agent_with_model(R"({"url": ")" + busy.url() + R"(", "name": "m"})");
    auto limited = std::make_shared<agent_definition>(*busy_agent);
    limited->budgets.max_steps = 1;
    const run_outcome retried = service.run(incident_run(limited, incident));
    CHECK(retried.state == "budget_exhausted");
    CHECK(retried.n_bad_calls == 1);  // the unknown tool is an error turn for the model
    CHECK(busy.requests().size() == 2);

    fake_backend::server hung({fake_backend::reply{{}, true}});
    auto hung_agent = agent_with_model(R"({"url": ")" + hung.url() + R"(", "name": "m", "timeout_s": 0.3})");
    const run_outcome timed_out = service.run(incident_run(hung_agent, incident));
    CHECK(timed_out.state == "failed");
    CHECK(timed_out.error == "remote model m at " + hung.url() + ": no answer within 300 ms (timeout_s)");
}

TEST_CASE("remote model: tachyon serve --remote fronts another server: chat completions are passed on, runs generate there") {
    if (!fs::exists(shipped_model) || !fs::exists(world_bin) || !fs::exists(tachyon_bin)) {
        MESSAGE("skipped: the shipped model, incident-world or the tachyon binary is absent");
        return;
    }
    temp_dir tmp("remote_front");
    const std::string incident = (tmp.path / "incident").string();
    REQUIRE(std::system((world_bin + " generate --seed 1000003 --out " + incident + " > /dev/null").c_str()) == 0);
    served backend({"--model", shipped_model, "--ctx", "16384"});
    served front({"--remote", backend.url(), "--remote-model", "incident-analyst", "--agents", std::string(TACHYON_SOURCE_DIR) + "/agents",
                  "--journal-dir", (tmp.path / "runs").string(), "--data-root", incident});
    using boost::beast::http::verb;

    auto models = send(front.port, verb::get, "/v1/models");
    CHECK(models.body.find(R"("id":"incident-analyst")") != std::string::npos);
    auto chat = send(front.port, verb::post, "/v1/chat/completions",
                     R"({"model": "incident-analyst", "stream": true, "max_tokens": 8, "temperature": 0, "messages": [{"role": "user", "content": "hello"}]})");
    REQUIRE(chat.status == 200);
    CHECK(chat.body.find(R"("role":"assistant")") != std::string::npos);
    CHECK_MESSAGE(chat.body.find(R"("finish_reason":")") != std::string::npos, chat.body);
    CHECK(chat.body.find("data: [DONE]") != std::string::npos);
    auto unknown = send(front.port, verb::post, "/v1/chat/completions", R"({"model": "gpt-9", "messages": [{"role": "user", "content": "x"}]})");
    CHECK(unknown.status == 404);
    CHECK(unknown.body.find("served: incident-analyst") != std::string::npos);

    auto started = send(front.port, verb::post, "/v1/runs",
                        R"({"agent": "incident-analyst", "task": ")" + task + R"(", "inputs": {"incident_dir": ")" + incident + "\"}}");
    REQUIRE_MESSAGE(started.status == 201, started.body);
    const size_t at = started.body.find(R"("id":")");
    REQUIRE(at != std::string::npos);
    const std::string id = started.body.substr(at + 6, started.body.find('"', at + 6) - at - 6);
    reply status;
    for (int i = 0; i < 1200; ++i) {
        status = send(front.port, verb::get, "/v1/runs/" + id);
        if (status.body.find(R"("state":"running")") == std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    // The run went through the loop on the backend (its verdict is the shipped model's: grounding is not the server's).
    CHECK_MESSAGE(status.body.find(R"("state":"running")") == std::string::npos, status.body);
    CHECK_MESSAGE(status.body.find("remote model") == std::string::npos, status.body);
    CHECK(status.body.find(R"("steps":1,)") == std::string::npos);
    CHECK(status.body.find(R"("steps":0,)") == std::string::npos);
}
