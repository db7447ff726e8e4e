#include "examples/incident/trajectories.h"

#include <fstream>
#include <sstream>

#include <simdjson.h>
#include <unistd.h>

#include "examples/incident/json_text.h"
#include "examples/incident/prng.h"
#include "tools/logs/builtin.h"

namespace incident {
namespace {

tachyon::result<incident_answer> read_answer(const std::filesystem::path& path) {
    simdjson::padded_string json;
    if (simdjson::padded_string::load(path.string()).get(json))
        return tachyon::make_error(tachyon::errc::io_error, "cannot read " + path.string());
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (parser.parse(json).get(doc)) return tachyon::make_error(tachyon::errc::parse_error, path.string() + ": not JSON");
    incident_answer a;
    std::string_view s;
    if (doc["root_cause_service"].get(s)) return tachyon::make_error(tachyon::errc::parse_error, path.string() + ": no root_cause_service");
    a.root_cause_service = std::string(s);
    if (doc["fault_type"].get(s) || !parse_fault_type(s, a.fault))
        return tachyon::make_error(tachyon::errc::parse_error, path.string() + ": bad fault_type");
    if (!doc["first_bad_timestamp"].get(s)) a.first_bad_timestamp = std::string(s);
    simdjson::dom::array ev;
    if (!doc["evidence"].get(ev))
        for (auto e : ev)
            if (!e.get(s)) a.evidence.emplace_back(s);
    uint64_t seed = 0;
    if (!doc["seed"].get(seed)) a.seed = seed;
    return a;
}

tachyon::result<std::string> read_file(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return tachyon::make_error(tachyon::errc::io_error, "cannot read " + path.string());
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

tachyon::result<std::vector<segment>> render(const expert_run& run, const std::string& instructions,
                                             const tachyon::tools::registry& tools, const std::string& task) {
    conversation c = run.convo;
    auto system = render_system_prompt(instructions, tools, agent_tool_names());
    if (!system) return system.err();
    c.system = std::move(*system);
    c.task = task;
    return render_segments(c);
}

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

}  // namespace

const std::vector<std::string>& agent_tool_names() {
    static const std::vector<std::string> names = {"error_summary", "get_trace", "search_logs", "recent_changes",
                                                   "read_lines"};
    return names;
}

bool wants_mistake(uint64_t seed, double rate) {
    uint64_t state = seed ^ 0xA11CEB0Bull;
    return static_cast<double>(splitmix64(state) % 1000000) < rate * 1e6;
}

tachyon::result<trajectory> make_trajectory(uint64_t seed, const trajectory_options& options) {
    trajectory t;
    t.seed = seed;
    const auto dir = options.work_dir / ("incident-" + std::to_string(::getpid()) + "-" + std::to_string(seed));
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    struct cleanup {
        std::filesystem::path dir;
        ~cleanup() {
            std::error_code e;
            std::filesystem::remove_all(dir, e);
        }
    } guard{dir};

    const incident_plan plan = plan_incident(seed, options.scale);
    auto gen = generate_incident(plan, dir);
    if (!gen) return gen.err();
    // the answer is read back as the evaluator would; it decides nothing but
    // whether this trajectory shows a wrong first answer and a recovery
    auto truth = read_answer(dir / "answer.json");
    if (!truth) return truth.err();
    t.truth = *truth;

    expert_options eo;
    eo.search_limit = options.search_limit;
    eo.mistake = wants_mistake(seed, options.mistake_rate);
    eo.late_timestamp = !eo.mistake && wants_mistake(seed ^ 0x7157A3Dull, options.late_timestamp_rate);
    eo.info_evidence = !eo.mistake && !eo.late_timestamp && wants_mistake(seed ^ 0x1AF0E1Dull, options.info_evidence_rate);
    for (int attempt = 0; attempt < 2; ++attempt) {
        tachyon::tools::registry tools;
        TACHYON_TRY(tachyon::tools::add_log_tools(tools, dir.string()));
        auto run = run_expert(tools, plan.task, eo);
        if (!run) return run.err();
        // a deliberate mistake that the verifier accepts, or one that is not
        // wrong, teaches nothing: solve this incident plainly instead
        const bool useless_mistake = run->made_mistake &&
                                     (run->n_answers < 2 || run->convo.turns.size() < 2 ||
                                      !run->verified || run->answer.service != t.truth.root_cause_service);
        if ((useless_mistake || !run->trouble.empty()) && attempt == 0 && (eo.mistake || eo.late_timestamp || eo.info_evidence)) {
            eo.mistake = false;
            eo.late_timestamp = false;
            eo.info_evidence = false;
            continue;
        }
        t.run = std::move(*run);
        auto segments = render(t.run, options.instructions, tools, plan.task);
        if (!segments) return segments.err();
        t.segments = std::move(*segments);
        break;
    }
    const expert_answer& a = t.run.answer;
    t.correct_service = a.service == t.truth.root_cause_service;
    t.correct_fault = a.fault_type == to_string(t.truth.fault);
    t.correct_time = a.first_bad_timestamp == t.truth.first_bad_timestamp;
    t.correct_evidence = a.evidence == t.truth.evidence;
    return t;
}

std::string trajectory_json(const trajectory& t) {
    std::string out = "{\"seed\": " + std::to_string(t.seed) + ", \"segments\": [";
    for (size_t i = 0; i < t.segments.size(); ++i) {
        if (i) out += ", ";
        out += "{\"text\": ";
        append_json_string(out, t.segments[i].text);
        out += t.segments[i].train ? ", \"train\": true}" : ", \"train\": false}";
    }
    out += "]}";
    return out;
}

tachyon::result<std::vector<segment>> solve_directory(const std::filesystem::path& dir, const std::string& instructions,
                                                      const expert_options& options) {
    auto task = read_file(dir / "task.txt");
    if (!task) return task.err();
    tachyon::tools::registry tools;
    TACHYON_TRY(tachyon::tools::add_log_tools(tools, dir.string()));
    auto run = run_expert(tools, trimmed(*task), options);
    if (!run) return run.err();
    return render(*run, instructions, tools, trimmed(*task));
}

}  // namespace incident
