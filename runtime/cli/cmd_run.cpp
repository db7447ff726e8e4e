// `tachyon run AGENT.json --task TEXT`: one agent run with live progress,
// ending with the answer (verified when the agent has checks) and where the
// time went.
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

#include "runtime/agent/agent_service.h"
#include "runtime/cli/cli.h"
#include "runtime/common/json_util.h"
#include "runtime/agent/run_report.h"
#include "runtime/agent/tool_catalog.h"
#include "runtime/journal/journal.h"

namespace tachyon {
namespace {

// Plain progress lines on stderr (a terminal gets the same lines; they are
// short enough to read live).
class progress_printer : public run_observer {
public:
    void on_turn_start(int step) override { std::fprintf(stderr, "step %d: model turn\n", step); }
    void on_turn_end(const run_turn& t) override {
        const double decode_ms = t.end_ms - t.first_token_ms;
        std::fprintf(stderr, "step %d: %d prompt tokens (%d reused), %d generated in %.0f ms (%.0f tokens/s)\n", t.step,
                     t.prefill_tokens, t.reused_tokens, t.generated_tokens, t.end_ms - t.start_ms,
                     decode_ms > 0 && t.generated_tokens > 1 ? (t.generated_tokens - 1) * 1000.0 / decode_ms : 0.0);
    }
    void on_tool_start(const run_tool_call& c) override {
        std::fprintf(stderr, "  -> %s %s%s\n", c.name.c_str(), c.arguments.c_str(), c.early ? "  (dispatched while decoding)" : "");
    }
    void on_tool_end(const run_tool_call& c) override {
        std::fprintf(stderr, "  <- %s %s in %.0f ms\n", c.name.c_str(), c.ok ? "ok" : "failed", c.end_ms - c.start_ms);
    }
    void on_verify(int attempt, bool ok, const std::string& message) override {
        std::string first_line = message.substr(0, message.find('\n'));
        std::fprintf(stderr, "verify %d: %s: %s\n", attempt, ok ? "passed" : "failed", first_line.c_str());
    }
    // What never reached a tool, and answers sent back (in the journal already).
    void on_event(const journal::event& e) override {
        if (const auto* c = std::get_if<journal::call_rejected_event>(&e.body)) {
            std::fprintf(stderr, "  x  %s rejected: %s\n", c->name.empty() ? "call" : c->name.c_str(), first_line(c->error).c_str());
        } else if (const auto* a = std::get_if<journal::answer_rejected_event>(&e.body)) {
            std::fprintf(stderr, "step %lld: answer rejected: %s\n", static_cast<long long>(a->step), first_line(a->error).c_str());
        }
    }

private:
    static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }
};

// The decision on a call that requires approval: from --approve-all or
// --reject-all, else asked on the terminal; nullopt (the run parks) when
// stdin is not a terminal.
approval_hook make_approval_hook(const cli::parsed_args& args) {
    if (args.flag("approve-all")) return [](const run_tool_call&) { return std::optional<call_decision>(call_decision{{}, "approve", "--approve-all"}); };
    if (args.flag("reject-all")) return [](const run_tool_call&) { return std::optional<call_decision>(call_decision{{}, "reject", "--reject-all"}); };
    if (::isatty(STDIN_FILENO) == 0) return nullptr;
    return [](const run_tool_call& c) -> std::optional<call_decision> {
        std::fprintf(stderr, "approve %s: %s %s ? [y = approve, n REASON = reject] ", c.call_id.c_str(), c.name.c_str(), c.arguments.c_str());
        std::string line;
        if (!std::getline(std::cin, line)) return std::nullopt;  // no answer: the run waits
        if (!line.empty() && (line[0] == 'y' || line[0] == 'Y')) return call_decision{{}, "approve", {}};
        std::string reason = line.size() > 1 ? line.substr(line.find_first_not_of(" ", 1) == std::string::npos ? line.size() : line.find_first_not_of(" ", 1)) : std::string();
        return call_decision{{}, "reject", reason};
    };
}

// The request that continues run `id` (--resume), with --decide applied to
// every call it needs attention for.
result<run_request> resume_from(const cli::parsed_args& args, const std::string& id) {
    const std::string dir = args.get_or("journal-dir", "runs");
    std::vector<call_decision> decisions;
    if (auto decide = args.get("decide")) {
        if (*decide != "retry" && *decide != "skip")
            return make_error(errc::invalid_argument, "--decide '" + *decide + "': expected retry or skip");
        auto log = journal::read_journal(std::filesystem::path(dir) / (id + ".jsonl"));
        if (!log) return log.err();
        for (const auto& p : log->pending())
            if (p.reason == "attention") decisions.push_back({p.call_id, *decide, "tachyon run --decide " + *decide});
        if (decisions.empty()) return make_error(errc::invalid_argument, "--decide: run '" + id + "' has no call that needs attention");
    }
    auto log = read_resumable(dir, id, decisions);
    if (!log) return log.err();
    return resume_request(std::move(log).value(), std::move(decisions));
}

int run_command(const cli::parsed_args& args) {
    auto fail = [](const std::string& m) {
        std::cerr << "tachyon run: " << m << "\n";
        return 1;
    };
    run_request req;
    if (auto id = args.get("resume")) {
        if (args.positional(0) || args.get("task"))
            return fail("--resume " + *id + " continues the run from its journal: give no AGENT.json or --task");
        auto resumed = resume_from(args, *id);
        if (!resumed) return fail(resumed.err().message);
        req = std::move(resumed).value();
        std::fprintf(stderr, "resuming run %s from %s (%zu events)\n", id->c_str(), req.resume->log().path.c_str(),
                     req.resume->log().events.size());
        for (const auto& w : req.resume->log().warnings) std::fprintf(stderr, "note: %s\n", w.c_str());
    } else {
        if (!args.positional(0)) return fail("needs AGENT.json (or --resume RUN_ID)");
        if (!args.get("task")) return fail("needs --task TEXT (or --resume RUN_ID)");
        if (args.get("decide")) return fail("--decide goes with --resume RUN_ID");
        auto agent = load_agent_file(*args.positional(0), builtin_tool_names());
        if (!agent) return fail(agent.err().message);
        req.agent = std::make_shared<agent_definition>(std::move(agent).value());
        req.task = *args.get("task");
        auto given = cli::key_values(args.get_all("input"), "input");
        if (!given) return fail(given.err().message);
        req.inputs = std::move(given).value();
        req.journal_dir = args.get_or("journal-dir", "runs");
    }
    if (args.flag("approve-all") && args.flag("reject-all")) return fail("--approve-all and --reject-all exclude each other");
    req.approve = make_approval_hook(args);
    // The local user's inputs: checked against the agent's declarations, not confined.
    auto inputs = check_run_inputs(*req.agent, req.inputs);
    if (!inputs) return fail(inputs.err().message);
    if (!req.resume) {  // a resumed run keeps the switches it started with (its run_start)
        req.switches.early_dispatch = !args.flag("no-early-dispatch");
        req.switches.parallel_tools = !args.flag("no-parallel-tools");
        req.switches.kv_retain = !args.flag("no-kv-retain");
        req.switches.spec_decode = !args.flag("no-spec-decode");
        req.switches.jump_forward = !args.flag("no-jump-forward");
        req.switches.speculative_tools = !args.flag("no-speculative-tools");
        req.switches.call_drafts = !args.flag("no-call-drafts");
        req.switches.grounding = !args.flag("no-grounding");
        req.switches.constrain = !args.flag("no-constrain");
    }
    auto threads = args.get_int("threads");
    if (!threads || *threads < 0) return fail("--threads: expected an integer >= 0 (0: one per hardware thread)");

    // Tracing, when OTEL_EXPORTER_OTLP_ENDPOINT or --otlp-endpoint names a collector.
    auto tracer = telemetry::tracer_from_env(args.get_or("otlp-endpoint", ""));
    if (!tracer) return fail(tracer.err().message);

    service_options so;
    so.tracer = *tracer;
    so.engine.n_threads = static_cast<int>(*threads);
    so.engine.n_ctx = 16384;
    so.engine.prefix_cache = !args.flag("no-prefix-cache");
    agent_service service(so);
    auto cancel = std::make_shared<std::atomic<bool>>(false);

    // Ctrl-C: cancel gently (tools cancelled, journal closed); a second one exits.
    boost::asio::io_context signals_io;
    boost::asio::signal_set signals(signals_io, SIGINT, SIGTERM);
    signals.async_wait([&](boost::system::error_code ec, int) {
        if (ec) return;
        std::fprintf(stderr, "cancelling the run (Ctrl-C again to exit at once)\n");
        cancel->store(true);
        signals.async_wait([](boost::system::error_code e, int) {
            if (!e) std::_Exit(130);
        });
    });
    std::thread signal_thread([&] { signals_io.run(); });

    progress_printer printer;
    const bool json_out = args.flag("json");
    run_outcome out = service.run(req, json_out ? nullptr : &printer, cancel);
    signals_io.stop();
    signal_thread.join();
    // The run's spans go out before the process ends (a collector that does not answer is not waited for long).
    if (*tracer) (*tracer)->flush(std::chrono::seconds(2));

    if (json_out) {
        std::cout << outcome_json(out) << "\n";
    } else {
        std::cout << outcome_summary(out);
    }
    if (out.state == "needs_attention" || out.state == "awaiting_approval") return 3;  // parked: waits for a person
    return out.state == "succeeded" ? 0 : 1;
}

}  // namespace

cli::command_spec make_run_command() {
    cli::command_spec c;
    c.name = "run";
    c.summary = "run an agent on a task to an answer (verified by the agent's checks, if it has any)";
    c.description = "Shows each model turn and tool call as it happens, then the answer and the timing summary.\n"
                    "The answer is 'verified' only when the agent's verify checks ran and passed; without checks it\n"
                    "is 'answered (no checks)'.\n"
                    "The run's journal goes to runs/<run-id>.jsonl ('tachyon runs show ID' draws it).\n"
                    "--resume RUN_ID continues a run whose process died, or one parked on a call: recorded turns and\n"
                    "tool results are reused, the run goes on from the first step without a recorded result. A call\n"
                    "of a tool that requires approval is asked about on the terminal (--approve-all, --reject-all\n"
                    "otherwise); without an answer the run parks in awaiting_approval. A call with side effects\n"
                    "that may have run before a crash parks it in needs_attention until --decide retry|skip.\n"
                    "Exit status 0 when an answer was accepted, 3 when the run is parked, 1 otherwise.";
    c.positionals = {{"AGENT.json", "agent definition file (not with --resume)", false}};
    c.options = {
        {"task", 0, cli::option_kind::value, "TEXT", "", "the task, as a user would write it (required without --resume)"},
        {"resume", 0, cli::option_kind::value, "RUN_ID", "", "continue this run from its journal in --journal-dir"},
        {"decide", 0, cli::option_kind::value, "retry|skip", "", "with --resume: what to do with the calls the run needs attention for"},
        {"approve-all", 0, cli::option_kind::flag, "", "", "approve every call that requires approval"},
        {"reject-all", 0, cli::option_kind::flag, "", "", "reject every call that requires approval (the model reads the rejection)"},
        {"input", 'i', cli::option_kind::multi, "KEY=VALUE", "", "value for a {placeholder} of the agent"},
        {"json", 0, cli::option_kind::flag, "", "", "print one JSON object (state, answer, verified, steps, timings, run id)"},
        {"journal-dir", 0, cli::option_kind::value, "DIR", "runs", "where journals are written"},
        {"threads", 't', cli::option_kind::value, "N", "0", "inference threads (0: one per hardware thread; a call too small to pay for the fan-out runs on one)"},
        {"otlp-endpoint", 0, cli::option_kind::value, "URL", "", "export the run's spans as OTLP/HTTP JSON to URL/v1/traces (else OTEL_EXPORTER_OTLP_ENDPOINT)"},
        {"no-early-dispatch", 0, cli::option_kind::flag, "", "", "start tools only after the turn ends"},
        {"no-parallel-tools", 0, cli::option_kind::flag, "", "", "run the calls of a turn one at a time"},
        {"no-kv-retain", 0, cli::option_kind::flag, "", "", "re-prefill the whole conversation every turn"},
        {"no-spec-decode", 0, cli::option_kind::flag, "", "", "decode one token per forward (no prompt-lookup drafts)"},
        {"no-jump-forward", 0, cli::option_kind::flag, "", "", "decode text the grammar forces token by token"},
        {"no-speculative-tools", 0, cli::option_kind::flag, "", "", "start tools only when the model has written the call"},
        {"no-call-drafts", 0, cli::option_kind::flag, "", "", "decode predicted calls token by token instead of drafting their text"},
        {"no-prefix-cache", 0, cli::option_kind::flag, "", "", "compute every prompt token even when another session already did"},
        {"no-constrain", 0, cli::option_kind::flag, "", "", "let the model write tool calls unconstrained"},
        {"no-grounding", 0, cli::option_kind::flag, "", "", "do not restrict identifier arguments to values seen in the run"},
    };
    c.run = run_command;
    return c;
}

}  // namespace tachyon
