#include "tools/mcp/mcp_client.h"

#include <dirent.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tools/mcp/mcp_tools.h"

using namespace tachyon;
using namespace tachyon::tools::mcp;

namespace {

const std::string server_script = std::string(TACHYON_SOURCE_DIR) + "/tests/tools/mcp/fake_mcp_server.py";

server_config fake(const std::string& mode) {
    server_config c;
    c.name = "fake-" + mode;
    c.command = {"/usr/bin/python3", server_script, mode};
    c.request_timeout = std::chrono::milliseconds(3000);
    c.shutdown_grace = std::chrono::milliseconds(500);
    return c;
}

size_t count_entries(const char* dir) {
    size_t n = 0;
    if (DIR* d = ::opendir(dir)) {
        while (auto* e = ::readdir(d))
            if (e->d_name[0] != '.') ++n;
        ::closedir(d);
    }
    return n;
}

// Children of this process, from /proc/*/stat (field 4 is the parent's pid).
size_t count_children() {
    size_t n = 0;
    const std::string me = std::to_string(::getpid());
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(e.path() / "stat");
        std::string line;
        std::getline(in, line);
        const size_t close = line.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(line.substr(close + 2));
        std::string state, ppid;
        rest >> state >> ppid;
        if (ppid == me) ++n;
    }
    return n;
}

}  // namespace

TEST_CASE("mcp client: initialize negotiates the version the server answers and lists every page of tools") {
    auto c = client::connect(fake("normal"));
    REQUIRE_MESSAGE(c.ok(), c.err().message);
    CHECK((*c)->protocol_version() == "2025-06-18");
    auto tools = (*c)->tools();
    REQUIRE(tools.ok());
    std::vector<std::string> names;
    for (const auto& t : *tools) names.push_back(t.name);
    CHECK(names == std::vector<std::string>{"echo", "add", "slow", "fail", "boom", "grow", "bad_add", "big"});  // two pages
    CHECK((*tools)[0].read_only);   // readOnlyHint
    CHECK_FALSE((*tools)[1].read_only);
    // $ref inlined, $defs gone
    CHECK((*tools)[1].input_schema.find("$ref") == std::string::npos);
    CHECK((*tools)[1].input_schema.find("\"a\":{\"type\":\"number\"}") != std::string::npos);
    CHECK((*c)->ping().ok());
}

TEST_CASE("mcp client: tools/call results, isError and JSON-RPC errors") {
    auto c = client::connect(fake("normal"), [](std::string_view schema, std::string_view instance) -> status {
        // A stand-in validator: the runtime supplies its JSON Schema checker.
        if (schema.find("\"sum\"") != std::string_view::npos && instance.find("\"three\"") != std::string_view::npos)
            return make_error(errc::invalid_argument, "'sum' must be a number");
        return {};
    });
    REQUIRE(c.ok());
    auto echo = (*c)->call_tool("echo", R"({"text":"hello"})");
    REQUIRE(echo.ok());
    CHECK(echo->text == "hello");
    CHECK_FALSE(echo->is_error);

    auto add = (*c)->call_tool("add", R"({"a":2,"b":3})");
    REQUIRE(add.ok());
    CHECK(add->structured == R"({"sum":5})");

    auto fail = (*c)->call_tool("fail", "{}");
    REQUIRE(fail.ok());  // a tool result the model reads
    CHECK(fail->is_error);
    CHECK(fail->text == "no such order");

    auto boom = (*c)->call_tool("boom", "{}");
    REQUIRE_FALSE(boom.ok());  // a failed call
    CHECK(boom.err().message.find("mcp server fake-normal") != std::string::npos);
    CHECK(boom.err().message.find("unknown argument (JSON-RPC error -32602)") != std::string::npos);

    auto bad = (*c)->call_tool("bad_add", "{}");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("structuredContent does not match its outputSchema: 'sum' must be a number") != std::string::npos);

    // As tachyon tools: isError is an error result with the tool's own text.
    auto made = make_mcp_tools(*c);
    REQUIRE(made.ok());
    std::atomic<bool> cancel{false};
    tools::call_context ctx{&cancel};
    auto t_fail = std::find_if(made->begin(), made->end(), [](auto& t) { return t->name() == "fail"; });
    auto r = (*t_fail)->invoke("{}", ctx);
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().message == "no such order");
    CHECK(made->front()->flags().read_only);
}

TEST_CASE("mcp client: an output over the budget is cut with a note") {
    auto cfg = fake("normal");
    cfg.max_output_bytes = 1000;
    auto c = client::connect(cfg);
    REQUIRE(c.ok());
    auto big = (*c)->call_tool("big", "{}");
    REQUIRE(big.ok());
    CHECK(big->text.size() < 1200);
    CHECK(big->text.find("output cut at 1000 bytes; 99000 more bytes dropped") != std::string::npos);
}

TEST_CASE("mcp client: progress extends the timeout up to the hard cap") {
    auto cfg = fake("normal");
    cfg.request_timeout = std::chrono::milliseconds(400);
    auto c = client::connect(cfg);
    REQUIRE(c.ok());
    int reports = 0;
    // 6 steps of 200 ms: 1.2 s in all, more than the timeout, but each step reports progress.
    auto slow = (*c)->call_tool("slow", R"({"steps":6,"ms":200})", nullptr,
                                [&](double p, std::optional<double> total, std::string_view) {
                                    ++reports;
                                    CHECK(total == 6.0);
                                    CHECK(p == reports);
                                });
    REQUIRE_MESSAGE(slow.ok(), slow.err().message);
    CHECK(slow->text == "done after 6 steps");
    CHECK(reports == 6);

    cfg.max_request_time = std::chrono::milliseconds(600);
    auto capped = client::connect(cfg);
    REQUIRE(capped.ok());
    auto cut = (*capped)->call_tool("slow", R"({"steps":6,"ms":200})");
    REQUIRE_FALSE(cut.ok());
    CHECK(cut.err().code == errc::timeout);
    // The session goes on after a cancelled request (this server finishes its steps first).
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    auto echo = (*capped)->call_tool("echo", R"({"text":"after"})");
    REQUIRE_MESSAGE(echo.ok(), echo.err().message);
    CHECK(echo->text == "after");
}

TEST_CASE("mcp client: a cancelled call returns promptly") {
    auto c = client::connect(fake("normal"));
    REQUIRE(c.ok());
    std::atomic<bool> cancel{false};
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        cancel = true;
    });
    auto r = (*c)->call_tool("slow", R"({"steps":20,"ms":100})", &cancel);
    stopper.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::cancelled);
}

TEST_CASE("mcp client: over stdio a call's trace context travels in params._meta, beside its progress token") {
    auto c = client::connect(fake("normal"));
    REQUIRE(c.ok());
    const std::string traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    auto traced = (*c)->call_tool("echo", R"({"text":"_meta"})", nullptr, {}, traceparent);
    REQUIRE_MESSAGE(traced.ok(), traced.err().message);
    CHECK(traced->text.find("\"progressToken\": ") != std::string::npos);
    CHECK(traced->text.find("\"traceparent\": \"" + traceparent + "\"") != std::string::npos);
    auto plain = (*c)->call_tool("echo", R"({"text":"_meta"})");
    REQUIRE(plain.ok());
    CHECK(plain->text.find("traceparent") == std::string::npos);  // none without a span
}

TEST_CASE("mcp client: notifications/tools/list_changed lists the tools again") {
    auto c = client::connect(fake("normal"));
    REQUIRE(c.ok());
    CHECK((*c)->tools()->size() == 8);
    REQUIRE((*c)->call_tool("grow", "{}").ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the notification comes before the answer; the answer is in
    auto after = (*c)->tools();
    REQUIRE(after.ok());
    CHECK(after->size() == 9);
    CHECK(after->back().name == "extra");
}

TEST_CASE("mcp client: a subset of tools, in the order asked, a missing one is named") {
    auto cfg = fake("normal");
    cfg.tools = {"add", "echo"};
    cfg.read_only = {"add"};
    auto c = client::connect(cfg);
    REQUIRE(c.ok());
    auto t = (*c)->tools();
    REQUIRE(t.ok());
    REQUIRE(t->size() == 2);
    CHECK((*t)[0].name == "add");
    CHECK((*t)[0].read_only);
    cfg.tools = {"echo", "nope"};
    auto missing = client::connect(cfg);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.err().message.find("mcp server fake-normal has no tool 'nope' (its tools: echo, add") != std::string::npos);
}

TEST_CASE("mcp client: env and cwd reach the server") {
    auto cfg = fake("env");
    cfg.env = {{"MCP_TEST", "from-the-agent-file"}};
    cfg.cwd = "/tmp";
    auto c = client::connect(cfg);
    REQUIRE(c.ok());
    auto r = (*c)->call_tool("echo", R"({"text":"x"})");
    REQUIRE(r.ok());
    CHECK(r->text == "from-the-agent-file|/tmp");
}

TEST_CASE("mcp client: bad servers get clear errors naming them") {
    SUBCASE("a command that does not exist") {
        server_config cfg;
        cfg.name = "ghost";
        cfg.command = {"no-such-mcp-server-program"};
        auto c = client::connect(cfg);
        REQUIRE_FALSE(c.ok());
        CHECK(c.err().message.find("mcp server ghost: command 'no-such-mcp-server-program' not found on PATH") != std::string::npos);
    }
    SUBCASE("a version nobody speaks") {
        auto c = client::connect(fake("version"));
        REQUIRE_FALSE(c.ok());
        CHECK(c.err().message.find("speaks protocol version '1999-01-01', which tachyon does not (supported: 2025-11-25, 2025-06-18, 2025-03-26)") !=
              std::string::npos);
    }
    SUBCASE("a server that hangs times out") {
        auto cfg = fake("hang");
        cfg.request_timeout = std::chrono::milliseconds(300);
        auto c = client::connect(cfg);
        REQUIRE_FALSE(c.ok());
        CHECK(c.err().code == errc::timeout);
        CHECK(c.err().message.find("mcp server fake-hang: tools/list got no answer") != std::string::npos);
    }
    SUBCASE("garbage lines are dropped; the session works") {
        auto c = client::connect(fake("garbage"));
        REQUIRE_MESSAGE(c.ok(), c.err().message);
        CHECK((*c)->call_tool("echo", R"({"text":"ok"})")->text == "ok");
    }
    SUBCASE("an answer with the wrong id") {
        auto cfg = fake("wrong_id");
        cfg.request_timeout = std::chrono::milliseconds(300);
        auto c = client::connect(cfg);
        REQUIRE(c.ok());
        auto r = (*c)->call_tool("echo", R"({"text":"x"})");
        REQUIRE_FALSE(r.ok());
        CHECK(r.err().message.find("mcp server fake-wrong_id: tools/call got no answer") != std::string::npos);
    }
    SUBCASE("a server that dies fails the call at once, and starts again for the next") {
        auto cfg = fake("die");
        cfg.request_timeout = std::chrono::milliseconds(5000);
        auto c = client::connect(cfg);
        REQUIRE(c.ok());
        const auto t0 = std::chrono::steady_clock::now();
        auto r = (*c)->call_tool("echo", R"({"text":"x"})");
        REQUIRE_FALSE(r.ok());
        CHECK(r.err().message.find("mcp server fake-die exited with status 3") != std::string::npos);
        CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(4000));  // not the timeout
        auto again = (*c)->ping();  // restarted after the backoff
        CHECK(again.ok());
        CHECK((*c)->n_starts() == 2);
    }
}

TEST_CASE("mcp client: a server that ignores the end of stdin and SIGTERM is killed") {
    auto cfg = fake("ignore_eof");
    cfg.shutdown_grace = std::chrono::milliseconds(200);
    const size_t before = count_children();
    {
        auto c = client::connect(cfg);
        REQUIRE(c.ok());
        CHECK(count_children() == before + 1);
        (*c)->close();
    }
    CHECK(count_children() == before);
}

// TACHYON_MCP_SESSIONS=1000 runs the check with more sessions by hand.
TEST_CASE("mcp client: many sessions leave no process, fd or thread behind") {
    int n = 200;
    if (const char* env = std::getenv("TACHYON_MCP_SESSIONS")) n = std::atoi(env);
    auto one = [] {
        auto c = client::connect(fake("normal"));
        REQUIRE(c.ok());
        REQUIRE((*c)->call_tool("echo", R"({"text":"x"})").ok());
    };
    one();  // first use: whatever the process keeps for good (log, locale) is made now
    const size_t fds = count_entries("/proc/self/fd");
    const size_t threads = count_entries("/proc/self/task");
    const size_t children = count_children();
    for (int i = 0; i < n; ++i) one();
    CHECK(count_children() == children);
    CHECK(count_entries("/proc/self/fd") == fds);
    CHECK(count_entries("/proc/self/task") == threads);
}
