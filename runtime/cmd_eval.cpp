// `tachyon eval AGENT.json --seeds A-B`: generates incidents with the
// incident-world program, runs the agent on each (answer.json moved out of
// the tools' reach first), and reports the verified-correct rate and the time
// to a verified answer.
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <mutex>
#include <sstream>

#include "runtime/agent_service.h"
#include "runtime/cli.h"
#include "runtime/eval_support.h"
#include "runtime/json_util.h"
#include "runtime/tool_catalog.h"

namespace tachyon {
namespace {

int eval_command(const cli::parsed_args& args) {
    auto fail = [](const std::string& m) {
        std::cerr << "tachyon eval: " << m << "\n";
        return 1;
    };
    auto seeds = parse_seed_range(*args.get("seeds"));
    if (!seeds) return fail(seeds.err().message);
    auto world = find_incident_world(args.get_or("world", ""));
    if (!world) return fail(world.err().message);
    auto agent = load_agent_file(*args.positional(0), builtin_tool_names());
    if (!agent) return fail(agent.err().message);
    auto concurrency = args.get_int("concurrency");
    if (!concurrency || *concurrency < 1 || *concurrency > 256) return fail("--concurrency must be in [1, 256]");
    auto threads = args.get_int("threads");
    if (!threads || *threads < 1) return fail("--threads must be a positive integer");

    run_switches sw;
    sw.grounding = !args.flag("no-grounding");
    sw.constrain = !args.flag("no-constrain");
    service_options so;
    so.engine.n_threads = static_cast<int>(*threads);
    so.engine.n_ctx = static_cast<int>(std::max<int64_t>(16384, *concurrency * 4096));
    agent_service service(so);
    auto shared_agent = std::make_shared<agent_definition>(std::move(agent).value());

    auto workspace = make_eval_workspace();
    if (!workspace) return fail(workspace.err().message);
    const bool keep = args.flag("keep");
    const bool quiet = args.flag("json");
    std::vector<eval_case> cases(seeds->second - seeds->first + 1);

    std::mutex mutex;
    size_t next = 0, finished = 0;
    std::promise<void> all_done;
    std::function<void()> launch;
    launch = [&] {
        size_t i;
        {
            std::lock_guard lock(mutex);
            if (next >= cases.size()) return;
            i = next++;
        }
        eval_case& c = cases[i];
        c.seed = seeds->first + i;
        auto prepared = prepare_incident(*world, *workspace, c.seed);
        if (!prepared) {
            c.error = prepared.err().message;
            std::lock_guard lock(mutex);
            if (++finished == cases.size()) all_done.set_value();
            return;
        }
        c.expected = prepared->expected;
        run_request req;
        req.agent = shared_agent;
        req.task = prepared->task;
        req.inputs = {{"incident_dir", prepared->incident_dir}};
        req.switches = sw;
        req.journal_dir = args.get_or("journal-dir", "runs");
        service.start(std::move(req), nullptr, nullptr, [&, i](run_outcome out) {
            score_case(cases[i], std::move(out));
            if (!quiet) std::fprintf(stderr, "%s\n", case_line(cases[i]).c_str());
            bool last;
            {
                std::lock_guard lock(mutex);
                last = ++finished == cases.size();
            }
            if (last) all_done.set_value();
            else launch();
        });
    };
    for (int64_t k = 0; k < *concurrency; ++k) launch();
    all_done.get_future().wait();
    if (!keep) std::filesystem::remove_all(*workspace);

    eval_summary summary = summarize(cases);
    if (quiet) {
        std::cout << summary_json(summary, cases, shared_agent->name) << "\n";
    } else {
        std::cout << summary_text(summary);
        if (keep) std::cout << "incidents kept in " << *workspace << "\n";
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
