// `tachyon eval AGENT.json --seeds A-B`: generates incidents with the
// incident-world program, runs the agent on each (answer.json moved out of
// the tools' reach first), and reports the verified-correct rate and the time
// to a verified answer.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "runtime/agent/agent_service.h"
#include "runtime/cli/cli.h"
#include "runtime/bench/eval_support.h"
#include "runtime/agent/tool_catalog.h"

namespace tachyon {
namespace {

int eval_command(const cli::parsed_args& args) {
    auto fail = [](const std::string& m) {
        std::cerr << "tachyon eval: " << m << "\n";
        return 1;
    };
    auto setup = parse_eval_setup(args);
    if (!setup) return fail(setup.err().message);
    eval_run_options o;
    o.switches.grounding = !args.flag("no-grounding");
    o.switches.constrain = !args.flag("no-constrain");
    o.concurrency = setup->concurrency;
    o.journal_dir = args.get_or("journal-dir", "runs");
    service_options so;
    so.engine.n_threads = setup->threads;
    so.engine.n_ctx = std::max(16384, setup->concurrency * 6144);
    agent_service service(so);
    const auto& shared_agent = setup->agent;

    auto workspace = make_eval_workspace();
    if (!workspace) return fail(workspace.err().message);
    const bool quiet = args.flag("json");
    auto inputs = prepare_incidents(setup->world, *workspace, setup->first_seed, setup->last_seed);
    double wall_ms = 0;
    auto cases = run_cases(service, shared_agent, inputs, o,
                           [quiet](const eval_case& c) {
                               if (!quiet) std::fprintf(stderr, "%s\n", case_line(c).c_str());
                           },
                           &wall_ms);
    if (!args.flag("keep")) std::filesystem::remove_all(*workspace);

    eval_summary summary = summarize(cases);
    summary.wall_ms_sum = wall_ms;
    if (quiet) {
        std::cout << summary_json(summary, cases, shared_agent->name) << "\n";
    } else {
        std::cout << summary_text(summary);
        if (args.flag("keep")) std::cout << "incidents kept in " << workspace->string() << "\n";
    }
    return 0;
}

}  // namespace

cli::command_spec make_eval_command() {
    cli::command_spec c;
    c.name = "eval";
    c.summary = "run an agent on generated incidents and report verified-correct rate and time to answer";
    c.description = "Each seed's incident is made by the incident-world program; its answer.json is moved out of the\n"
                    "incident directory before the agent runs. A case succeeds when the answer is verified and its\n"
                    "root-cause service and fault type match the generator's answer. Seeds >= 1000000 are held out\n"
                    "from training.";
    c.positionals = {{"AGENT.json", "agent definition file (its tools read {incident_dir})"}};
    c.options = {
        {"seeds", 0, cli::option_kind::value, "A-B", "", "seed range, inclusive (e.g. 1000000-1000099)", true},
        {"concurrency", 'c', cli::option_kind::value, "C", "1", "runs in flight at once (they share the engine)"},
        {"threads", 't', cli::option_kind::value, "N", "1", "inference threads"},
        {"world", 0, cli::option_kind::value, "PATH", "", "the incident-world program (default: found beside tachyon or on PATH)"},
        {"journal-dir", 0, cli::option_kind::value, "DIR", "runs", "where run journals are written"},
        {"no-grounding", 0, cli::option_kind::flag, "", "", "do not restrict identifier arguments to values seen in the run"},
        {"no-constrain", 0, cli::option_kind::flag, "", "", "let the model write tool calls unconstrained"},
        {"keep", 0, cli::option_kind::flag, "", "", "keep the generated incidents"},
        {"json", 0, cli::option_kind::flag, "", "", "print one JSON object"},
    };
    c.run = eval_command;
    return c;
}

}  // namespace tachyon
