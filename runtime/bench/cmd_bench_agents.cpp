// `tachyon bench agents AGENT.json --seeds A-B`: time to a verified answer
// under each serving mode, side by side on the same incidents:
//   sequential    a stateless chat API under a simple agent loop: every turn
//                 re-prefills the conversation, tools start after the turn,
//                 one at a time, and the engine serves one request at a time;
//   conventional  a modern serving engine (continuous batching, chunked
//                 prefill, prefix cache) behind a stateless chat API, under a
//                 mainstream agent framework: each turn re-sends the
//                 conversation (the prefix cache finds most of it), and the
//                 calls of a turn run concurrently, but only after the turn;
//                 With --baseline http (the default with --replay) both
//                 are literally that: tachyon's agent loop as a client of
//                 `tachyon serve` on loopback (the remote backend of
//                 runtime/remote/: tools and the answer's schema sent, the
//                 server constrains and parses calls), the server with its
//                 prefix cache and batching (conventional) or serving one
//                 request at a time without it (sequential). With
//                 --baseline in-process (the default otherwise) they run on
//                 the engine itself with those switches: a server's JSON
//                 schema cannot hold what tachyon's grammar holds (grounded
//                 values in arguments, uniqueItems), and the shipped 1M
//                 model fails most tasks without it, so the HTTP baseline
//                 would not compare at equal task success;
//   tachyon       every switch on: tools dispatched the moment their call is
//                 complete in the stream, in parallel, the session's KV kept
//                 between turns, prefix cache, batching.
// Tool latency: every tool of a run is wrapped in a decorator whose calls
// first wait a network latency (lognormal) on an Asio timer, as log stores
// and trace backends answer (tool_latency.h).
// --replay TRANSCRIPTS --model MODEL.gguf: the same runs at the cost of a
// model of another size: MODEL replays the recorded turns as an oracle
// (replay.h), so every mechanism costs and saves what it would there.
// The recorded tokens then travel with each chat completion
// (tachyon_forced_tokens, allowed only by this command's own server).
// The floor column: what a run could not avoid at this engine's measured
// rates at the context each turn ran at (replay.h measure_engine_rates,
// after the first mode's runs, up to the longest context they reached):
// the prefill of the tokens no mode
// found computed, the decode steps of the tokens no draft or jump covered
// in any mode, and the tool wait no mode overlapped; each the least any
// mode needed for that incident.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "runtime/agent/agent_service.h"
#include "runtime/serve/http_server.h"
#include "runtime/bench/replay.h"
#include "runtime/cli/cli.h"
#include "runtime/bench/eval_support.h"
#include "runtime/bench/tool_latency.h"
#include "runtime/common/json_util.h"
#include "runtime/agent/tool_catalog.h"

namespace tachyon {
namespace {

struct mode {
    std::string name;
    run_switches switches;
    int max_active = 0;        // engine: 1 serves one request at a time
    bool prefix_cache = true;  // engine: shared KV blocks of common prefixes
    bool over_http = false;    // the runs are clients of a tachyon serve on loopback
};

// `tachyon serve` in this process on a loopback port, serving `host` as
// model "bench" (replaying: forced tokens allowed), for the modes that run
// as its clients.
struct bench_server {
    http::metrics stats;
    std::unique_ptr<http::server> server;
    std::shared_ptr<const remote::remote_model> model;

    static result<std::unique_ptr<bench_server>> start(std::shared_ptr<model_host> host, bool replaying, int concurrency) {
        auto b = std::make_unique<bench_server>();
        http::server_options so;
        so.port = 0;
        so.n_threads = 1;
        so.body_limit = 64u << 20;  // a long conversation re-sent whole
        so.max_chat_requests = std::max(16, 4 * concurrency);
        // A sequential server queues the other runs' turns behind each one.
        so.read_timeout = so.write_timeout = so.idle_timeout = std::chrono::hours(1);
        so.generation.allow_forced_tokens = replaying;
        so.generation.cap_at_training_context = false;  // as the runs on the engine itself
        b->server = std::make_unique<http::server>(so, std::vector<http::metrics::model_entry>{{"bench", host}}, b->stats, nullptr);
        if (auto st = b->server->start(); !st) return st.err();
        remote::remote_model m;
        m.url = "http://127.0.0.1:" + std::to_string(b->server->port()) + "/v1";
        m.name = "bench";
        m.tools = remote::tool_mode::server;  // tools and the answer schema go to the server, which constrains them
        m.chat_format = std::string(to_string(host->format()));
        m.timeouts.first_token = m.timeouts.idle = std::chrono::hours(1);
        // The server refuses a max_tokens its context cannot hold beside the
        // prompt; the shipped agent's turns are far shorter (replayed turns
        // ask for their recorded length).
        m.max_turn_tokens = 512;
        m.provider = "tachyon";
        b->model = std::make_shared<const remote::remote_model>(std::move(m));
        return b;
    }
    ~bench_server() {
        if (server) server->shutdown();
    }
};

std::vector<mode> modes_for(const std::string& which, bool baseline_http) {
    mode seq{"sequential", {}, 1, false, baseline_http};
    seq.switches.early_dispatch = false;
    seq.switches.parallel_tools = false;
    seq.switches.kv_retain = false;
    seq.switches.spec_decode = false;
    seq.switches.jump_forward = false;
    seq.switches.speculative_tools = false;
    seq.switches.call_drafts = false;
    // A stateless chat API over a serving engine with a prefix cache and
    // continuous batching; the tools of a turn run together after the turn.
    mode conv{"conventional", {}, 0, true, baseline_http};
    conv.switches.early_dispatch = false;
    conv.switches.kv_retain = false;
    conv.switches.spec_decode = false;
    conv.switches.jump_forward = false;
    conv.switches.speculative_tools = false;
    conv.switches.call_drafts = false;
    mode all{"tachyon", {}, 0, true};
    if (which == "sequential") return {seq};
    if (which == "conventional") return {conv};
    if (which == "tachyon") return {all};
    if (which == "ablation") {
        mode no_early = all, no_parallel = all, no_kv = all, no_prefix = all, no_spec = all, no_jump = all, no_spec_tools = all, no_call_drafts = all;
        no_call_drafts.name = "tachyon -call_drafts";
        no_call_drafts.switches.call_drafts = false;
        no_spec_tools.name = "tachyon -speculative_tools";
        no_spec_tools.switches.speculative_tools = false;
        no_spec.name = "tachyon -spec_decode";
        no_spec.switches.spec_decode = false;
        no_jump.name = "tachyon -jump_forward";
        no_jump.switches.jump_forward = false;
        no_prefix.name = "tachyon -prefix_cache";
        no_prefix.prefix_cache = false;
        no_early.name = "tachyon -early_dispatch";
        no_early.switches.early_dispatch = false;
        no_parallel.name = "tachyon -parallel_tools";
        no_parallel.switches.parallel_tools = false;
        no_kv.name = "tachyon -kv_retain";
        no_kv.switches.kv_retain = false;
        return {all, no_early, no_parallel, no_kv, no_prefix, no_spec, no_jump, no_spec_tools, no_call_drafts};
    }
    return {seq, conv, all};
}

struct mode_result {
    std::string name;
    bool over_http = false;  // its runs were clients of a tachyon serve on loopback
    eval_summary s;
    double wall_ms = 0;
    double tasks_per_min = 0;
    double decode_tok_s = 0;
    double prefill_computed = 0, prefill_avoided = 0;
    double hidden_pct = 0;
    double drafted = 0, draft_accepted = 0;
    double engine_cpu_ms = 0;  // CPU time of the engine thread, all tasks
    int spec_calls = 0, spec_hits = 0;
    double spec_saved_ms = 0;
    std::vector<eval_case> cases;
    double floor_p50_ms = 0;  // of the successful cases: their floors' median
};

// A run's prefill and decode at the engine's rates, each turn's at the
// context it ran at: its prompt tokens at the middle of its prefill, its
// decode steps (the tokens no draft or jump covered, in the run's share)
// at the middle of its generation. Work the turns do not account for
// (a resumed run's) is priced at the context the last turn reached.
struct priced_work {
    double prefill_ms = 0, decode_ms = 0;
};
priced_work price_run(const run_outcome& o, const engine_rates& rates) {
    priced_work w;
    const double own_steps = o.generated_tokens > 0 ? static_cast<double>(o.generated_tokens - o.draft_accepted_tokens) / o.generated_tokens : 0;
    int prefilled = 0, generated = 0;
    double context = 0;
    for (const run_turn& t : o.turns) {
        const double start = t.reused_tokens;
        w.prefill_ms += t.prefill_tokens * rates.prefill.at(start + t.prefill_tokens / 2.0);
        const double gen_start = start + t.prefill_tokens;
        w.decode_ms += t.generated_tokens * own_steps * rates.decode.at(gen_start + t.generated_tokens / 2.0);
        prefilled += t.prefill_tokens;
        generated += t.generated_tokens;
        context = gen_start + t.generated_tokens;
    }
    if (o.prefill_tokens > prefilled) w.prefill_ms += (o.prefill_tokens - prefilled) * rates.prefill.at(context);
    if (o.generated_tokens > generated) w.decode_ms += (o.generated_tokens - generated) * own_steps * rates.decode.at(context);
    return w;
}

// The floor of each seed (header comment), from every mode's run of it.
std::map<uint64_t, double> agents_floors(const std::vector<mode_result>& results, const engine_rates& rates) {
    struct least {
        double prefill = 1e300, decode = 1e300, wait = 1e300;
    };
    std::map<uint64_t, least> by_seed;
    for (const auto& r : results) {
        for (const auto& c : r.cases) {
            if (!c.error.empty()) continue;
            least& l = by_seed[c.seed];
            const priced_work w = price_run(c.outcome, rates);
            l.prefill = std::min(l.prefill, w.prefill_ms);
            l.decode = std::min(l.decode, w.decode_ms);
            l.wait = std::min(l.wait, c.outcome.tool_wait_ms);
        }
    }
    std::map<uint64_t, double> floors;
    for (const auto& [seed, l] : by_seed) floors[seed] = l.prefill + l.decode + l.wait;
    return floors;
}

// The longest context a run's turns reached.
int longest_context(const std::vector<eval_case>& cases) {
    int n = 0;
    for (const auto& c : cases)
        for (const run_turn& t : c.outcome.turns) n = std::max(n, t.reused_tokens + t.prefill_tokens + t.generated_tokens);
    return n;
}

double agents_median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t mid = v.size() / 2;
    return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

int bench_agents(const cli::parsed_args& args) {
    auto fail = [](const std::string& m) {
        std::cerr << "tachyon bench agents: " << m << "\n";
        return 1;
    };
    auto setup = parse_eval_setup(args);
    if (!setup) return fail(setup.err().message);
    const int64_t concurrency = setup->concurrency;
    auto latency = parse_tool_latency(*args.get("tool-latency"));
    if (!latency) return fail(latency.err().message);
    const std::string which = *args.get("modes");
    if (which != "all" && which != "sequential" && which != "conventional" && which != "tachyon" && which != "ablation")
        return fail("--modes must be all, sequential, conventional, tachyon or ablation");
    std::shared_ptr<const agent_definition> shared_agent = setup->agent;
    const std::string replay_dir = args.get_or("replay", ""), replay_model = args.get_or("model", "");
    if (replay_dir.empty() != replay_model.empty()) return fail("--replay TRANSCRIPTS and --model MODEL.gguf go together");
    const bool replaying = !replay_dir.empty();
    std::map<uint64_t, replay_transcript> transcripts;
    if (replaying) {
        auto t = load_transcripts(replay_dir);
        if (!t) return fail(t.err().message);
        transcripts = std::move(t).value();
        for (uint64_t seed = setup->first_seed; seed <= setup->last_seed; ++seed) {
            auto it = transcripts.find(seed);
            if (it == transcripts.end())
                return fail("seed " + std::to_string(seed) + " has no transcript in " + replay_dir + " (record it: tachyon eval " +
                            *args.positional(0) + " --seeds " + *args.get("seeds") + " --journal-dir " + replay_dir + ")");
            if (!it->second.error.empty()) return fail("seed " + std::to_string(seed) + ": " + it->second.error);
        }
        if (!std::filesystem::is_regular_file(replay_model)) return fail("--model " + replay_model + ": not a file");
        agent_definition a = *setup->agent;
        a.model = replay_model;
        a.remote = nullptr;  // the oracle runs on the local engine, whatever the agent names
        // The agent's deadline is sized for the model that recorded the
        // runs; on a larger one it would cut off the runs being measured.
        a.budgets.deadline_ms = 86400000;
        shared_agent = std::make_shared<const agent_definition>(std::move(a));
    }
    auto workspace = make_eval_workspace();
    if (!workspace) return fail(workspace.err().message);
    struct workspace_remover {
        std::filesystem::path dir;
        ~workspace_remover() {
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
        }
    } remover{*workspace};
    auto inputs = prepare_incidents(setup->world, *workspace, setup->first_seed, setup->last_seed);
    const bool json_out = args.flag("json");
    engine_rates rates;

    std::vector<mode_result> results;
    const std::string baseline = args.get_or("baseline", replaying ? "http" : "in-process");
    if (baseline != "http" && baseline != "in-process") return fail("--baseline must be http or in-process, got '" + baseline + "'");
    for (const mode& m : modes_for(which, baseline == "http")) {
        service_options so;
        so.engine.n_threads = setup->threads;
        so.engine.split_prefill = args.flag("split-prefill");
        so.engine.draft_tuning = args.flag("draft-tuning");
        so.engine.n_ctx = static_cast<int>(std::max<int64_t>(16384, concurrency * 6144));
        so.engine.max_active = m.max_active;
        so.engine.prefix_cache = m.prefix_cache;
        so.n_tool_threads = std::max<int>(4, static_cast<int>(concurrency) * 2);
        // `service` hosts the engine; the runs go on it, or on `clients`
        // against `served` (the same engine behind HTTP).
        agent_service service(so);
        std::unique_ptr<bench_server> served;
        std::unique_ptr<agent_service> clients;
        std::shared_ptr<const agent_definition> run_agent = shared_agent;
        if (m.over_http) {
            auto host = service.host(shared_agent->model, shared_agent->chat_format);
            if (!host) return fail(host.err().message);
            auto b = bench_server::start(*host, replaying, static_cast<int>(concurrency));
            if (!b) return fail("mode " + m.name + ": starting its server: " + b.err().message);
            served = std::move(b).value();
            agent_definition a = *shared_agent;
            a.remote = served->model;
            run_agent = std::make_shared<const agent_definition>(std::move(a));
            service_options co;
            co.n_tool_threads = so.n_tool_threads;
            clients = std::make_unique<agent_service>(co);
        }
        agent_service& runs_on = clients ? *clients : service;
        eval_run_options o;
        o.switches = m.switches;
        o.latency = *latency;
        o.latency.seed = 12345;  // the same latencies for every mode
        o.concurrency = static_cast<int>(concurrency);
        o.journal_dir = args.get_or("journal-dir", "runs");
        if (replaying)
            o.prepare = [&transcripts](const eval_input& in, run_request& req) { req.forced_turns = transcripts.at(in.seed).turns; };
        if (results.empty()) {
            // Before any run: the model must read the recorded ids as the
            // recording did.
            auto host = service.host(shared_agent->model, shared_agent->chat_format);
            if (!host) return fail(host.err().message);
            if (replaying) {
                for (uint64_t seed = setup->first_seed; seed <= setup->last_seed; ++seed)
                    if (auto st = check_vocabulary(transcripts.at(seed), **host); !st) return fail(st.err().message);
            }
        }
        if (!json_out) std::fprintf(stderr, "mode %s ...\n", m.name.c_str());
        double cpu_before_ms = 0;
        if (auto h = service.host(shared_agent->model, shared_agent->chat_format)) cpu_before_ms = (*h)->eng().counters().busy_cpu_ms;
        double wall_ms = 0;
        auto cases = run_cases(runs_on, run_agent, inputs, o, nullptr, &wall_ms);
        if (replaying) {
            for (const auto& c : cases) {
                if (!c.error.empty()) return fail("seed " + std::to_string(c.seed) + ": " + c.error);
                if (auto st = check_replayed(transcripts.at(c.seed), c.outcome); !st) return fail("mode " + m.name + ", " + st.err().message);
            }
        }
        if (results.empty()) {
            // After the first mode's runs, on the engine they leave idle: the
            // rates up to the longest context those runs reached (every mode
            // runs the same conversations).
            if (auto h = service.host(shared_agent->model, shared_agent->chat_format))
                rates = measure_engine_rates((*h)->eng(), std::max(longest_context(cases), 512));
        }
        mode_result r;
        r.name = m.name;
        r.over_http = m.over_http;
        r.s = summarize(cases);
        r.wall_ms = wall_ms;
        r.tasks_per_min = wall_ms > 0 ? static_cast<double>(r.s.n) * 60000.0 / wall_ms : 0;
        double generated = 0, tool_ms = 0, hidden = 0;
        for (const auto& c : cases) {
            generated += c.outcome.generated_tokens;
            r.prefill_computed += c.outcome.prefill_tokens;
            r.prefill_avoided += c.outcome.reused_tokens;
            tool_ms += c.outcome.tool_ms;
            hidden += c.outcome.overlap_saved_ms;
            r.drafted += c.outcome.drafted_tokens;
            r.draft_accepted += c.outcome.draft_accepted_tokens;
            r.spec_calls += c.outcome.n_spec_calls;
            r.spec_hits += c.outcome.n_spec_hits;
            r.spec_saved_ms += c.outcome.spec_saved_ms;
        }
        r.decode_tok_s = wall_ms > 0 ? generated * 1000.0 / wall_ms : 0;
        if (auto h = service.host(shared_agent->model, shared_agent->chat_format)) r.engine_cpu_ms = (*h)->eng().counters().busy_cpu_ms - cpu_before_ms;
        r.hidden_pct = tool_ms > 0 ? 100.0 * hidden / tool_ms : 0;
        r.cases = std::move(cases);
        results.push_back(std::move(r));
    }
    const auto floors = agents_floors(results, rates);
    for (auto& r : results) {
        std::vector<double> v;
        for (const auto& c : r.cases)
            if (c.success) v.push_back(floors.at(c.seed));
        r.floor_p50_ms = agents_median(std::move(v));
    }

    const mode_result* base = nullptr;
    for (const auto& r : results)
        if (r.name == "sequential") base = &r;
    if (json_out) {
        std::ostringstream os;
        os << "{\"agent\": " << json::quote(shared_agent->name) << ", \"seeds\": " << json::quote(*args.get("seeds"))
           << ", \"concurrency\": " << concurrency << ", \"tool_latency\": " << json::quote(*args.get("tool-latency"))
           << ", \"model\": " << json::quote(shared_agent->model) << ", \"replay\": " << (replaying ? json::quote(replay_dir) : "null")
           << ", \"rates\": {\"prefill_ms_per_token\": " << rates.prefill.base_ms << ", \"prefill_ms_per_token_per_position\": "
           << rates.prefill.per_position_ms << ", \"decode_ms_per_step\": " << rates.decode.base_ms << ", \"decode_ms_per_step_per_position\": "
           << rates.decode.per_position_ms << ", \"measured_to\": " << rates.measured_to << "}"
           << ", \"modes\": [";
        for (size_t i = 0; i < results.size(); ++i) {
            const auto& r = results[i];
            os << (i ? ", " : "") << "{\"mode\": " << json::quote(r.name) << ", \"over_http\": " << (r.over_http ? "true" : "false") << ", \"cases\": " << r.s.n << ", \"success\": " << r.s.n_success
               << ", \"p50_ms\": " << r.s.p50_ms << ", \"p95_ms\": " << r.s.p95_ms << ", \"p50_end_ms\": " << r.s.p50_end_ms
               << ", \"p95_end_ms\": " << r.s.p95_end_ms << ", \"p50_tool_wait_ms\": " << r.s.p50_wait_ms
               << ", \"tasks_per_min\": " << r.tasks_per_min
               << ", \"decode_tok_s\": " << r.decode_tok_s << ", \"prefill_computed\": " << r.prefill_computed
               << ", \"prefill_avoided\": " << r.prefill_avoided << ", \"tool_time_hidden_pct\": " << r.hidden_pct
               << ", \"engine_cpu_ms\": " << r.engine_cpu_ms << ", \"speculative_calls\": " << r.spec_calls
               << ", \"speculative_hits\": " << r.spec_hits << ", \"speculative_saved_ms\": " << r.spec_saved_ms << ", \"drafted_tokens\": " << r.drafted << ", \"draft_accepted_tokens\": " << r.draft_accepted
               << ", \"floor_p50_ms\": " << r.floor_p50_ms << ", \"wall_ms\": " << r.wall_ms << "}";
        }
        os << "]}\n";
        std::cout << os.str();
        return 0;
    }
    if (replaying) std::printf("replay of %s on %s\n", replay_dir.c_str(), shared_agent->model.c_str());
    std::printf("engine rates (idle, context 0 / %d): prefill %.3f / %.3f ms per token, decode %.3f / %.3f ms per step\n", rates.measured_to,
                rates.prefill.at(0), rates.prefill.at(rates.measured_to), rates.decode.at(0), rates.decode.at(rates.measured_to));
    std::printf("%-28s %8s %9s %9s %9s %7s %8s %8s %9s %10s %12s %12s %8s %8s %9s %16s %10s %10s %10s\n", "mode", "success", "p50 s", "p95 s",
                "floor p50", "x floor", "end p50", "wait p50", "tasks/min", "decode t/s", "prefill", "avoided", "hidden", "spec acc", "cpu ms/t",
                "spec tools", "p50 ratio", "end ratio", "tpm ratio");
    for (const auto& r : results) {
        char p50r[32] = "-", tpmr[32] = "-", endr[32] = "-";
        if (base && base != &r && r.s.p50_end_ms > 0) std::snprintf(endr, sizeof endr, "%.2fx", base->s.p50_end_ms / r.s.p50_end_ms);
        if (base && base != &r && r.s.p50_ms > 0) std::snprintf(p50r, sizeof p50r, "%.2fx", base->s.p50_ms / r.s.p50_ms);
        if (base && base != &r && base->tasks_per_min > 0) std::snprintf(tpmr, sizeof tpmr, "%.2fx", r.tasks_per_min / base->tasks_per_min);
        char acc[32] = "-";
        if (r.drafted > 0) std::snprintf(acc, sizeof acc, "%.1f%%", 100.0 * r.draft_accepted / r.drafted);
        char spec_tools[48] = "-";
        if (r.spec_calls > 0)
            std::snprintf(spec_tools, sizeof spec_tools, "%d/%d %.0fms", r.spec_hits, r.spec_calls, r.spec_hits ? r.spec_saved_ms / r.spec_hits : 0.0);
        char over[32] = "-";
        if (r.floor_p50_ms > 0) std::snprintf(over, sizeof over, "%.2fx", r.s.p50_ms / r.floor_p50_ms);
        std::printf("%-28s %7.1f%% %9.2f %9.2f %9.2f %7s %8.2f %8.2f %9.1f %10.0f %12.0f %12.0f %7.1f%% %8s %9.1f %16s %10s %10s %10s\n", r.name.c_str(),
                    r.s.n ? 100.0 * static_cast<double>(r.s.n_success) / static_cast<double>(r.s.n) : 0.0, r.s.p50_ms / 1000, r.s.p95_ms / 1000,
                    r.floor_p50_ms / 1000, over, r.s.p50_end_ms / 1000, r.s.p50_wait_ms / 1000,
                    r.tasks_per_min, r.decode_tok_s, r.prefill_computed, r.prefill_avoided, r.hidden_pct, acc,
                    r.s.n ? r.engine_cpu_ms / static_cast<double>(r.s.n) : 0.0, spec_tools, p50r, endr, tpmr);
    }
    std::printf("p50/p95: time to a verified correct answer (successful cases); end p50: time to the end of the run, every case;\n"
                "floor p50: what a run could not avoid at the engine's measured rates at each turn's context (prefill no mode found\n"
                "  computed, decode steps no draft or jump covered in any mode, tool wait no mode overlapped), median over the\n"
                "  successful cases;\n"
                "  x floor: p50 / floor p50;\n"
                "wait p50: of the time to answer, what a run spent waiting for tool results and verification with nothing of it\n"
                "  decoding (successful cases); a faster engine cannot shorten it (it would hide less tool time under decoding);\n"
                "p50 ratio: sequential p50 / this mode's p50 (higher is faster); tpm ratio: tasks/min over sequential's;\n"
                "spec acc: draft tokens kept / verified (prompt lookup and jump-forward);\n"
                "cpu ms/t: engine thread CPU time per task (inference work, steady when the machine is busy);\n"
                "spec tools: speculative calls the model then made / started, and the tool time each hit had already run\n");
    return 0;
}

}  // namespace

cli::command_spec make_bench_agents_command() {
    cli::command_spec c;
    c.name = "bench agents";
    c.summary = "time to verified answer per serving mode (sequential, conventional, tachyon) on the same incidents";
    c.positionals = {{"AGENT.json", "agent definition file (its tools read {incident_dir})"}};
    c.options = {
        {"seeds", 0, cli::option_kind::value, "A-B", "", "seed range, inclusive", true},
        {"concurrency", 'c', cli::option_kind::value, "C", "1", "runs in flight at once"},
        {"tool-latency", 0, cli::option_kind::value, "SPEC", "lognormal:100:400", "network latency per tool call: none or lognormal:MEDIAN_MS:P95_MS"},
        {"modes", 0, cli::option_kind::value, "WHICH", "all", "all, sequential, conventional, tachyon or ablation"},
        {"threads", 't', cli::option_kind::value, "N", "1", "inference threads"},
        {"split-prefill", 0, cli::option_kind::flag, "", "",
         "prefill/decode split: prefill chunks on a thread of their own, beside the --threads decoding (inference/engine/engine.h)"},
        {"draft-tuning", 0, cli::option_kind::flag, "", "",
         "verify of each draft only the prefix the engine's measured step costs and kept-rates pay for, not the whole draft (inference/engine/draft_cost.h)"},
        {"world", 0, cli::option_kind::value, "PATH", "", "the incident-world program"},
        {"journal-dir", 0, cli::option_kind::value, "DIR", "runs", "where run journals are written"},
        {"replay", 0, cli::option_kind::value, "TRANSCRIPTS", "",
         "replay these journals (tachyon eval --journal-dir) on --model as an oracle: the recorded tokens at that model's cost"},
        {"model", 0, cli::option_kind::value, "MODEL.gguf", "", "with --replay: the model to replay on (made with the recording's tokenizer)"},
        {"baseline", 0, cli::option_kind::value, "HOW", "",
         "sequential and conventional as clients of a tachyon serve on loopback (http; the default with --replay) or on the engine "
         "itself with their switches (in-process; the default otherwise)"},
        {"json", 0, cli::option_kind::flag, "", "", "print one JSON object"},
    };
    c.run = bench_agents;
    return c;
}

}  // namespace tachyon
