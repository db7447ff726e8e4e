// `tachyon run` as a user runs it, killed: the built binary runs the shipped
// model on an incident of the incident world, is killed with SIGKILL at
// random moments (loading, prefill, decode, a tool call, verification,
// journal writing), and every journal it leaves reads back and resumes
// (`tachyon run --resume`) to the answer of an uninterrupted twin.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;

const std::string tachyon_bin = std::string(TACHYON_BINARY_DIR) + "/runtime/tachyon";
const std::string world_bin = std::string(TACHYON_BINARY_DIR) + "/examples/incident/incident-world";
const std::string agent_file = std::string(TACHYON_SOURCE_DIR) + "/agents/incident-analyst.json";
const std::string task = "users report errors since the incident began; find the root cause";

struct outcome {
    int status = -1;
    std::string out;
};

// Runs a shell command line; captures stdout (stderr goes to /dev/null).
outcome run(const std::string& command) {
    outcome o;
    FILE* p = ::popen((command + " 2>/dev/null").c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf;
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) o.out.append(buf.data(), n);
    const int st = ::pclose(p);
    o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return o;
}

// The value of a top-level key of `tachyon run --json`'s one line (up to the next key).
std::string json_field(const std::string& line, const std::string& key, const std::string& next_key) {
    const std::string k = "\"" + key + "\": ";
    const size_t at = line.find(k);
    if (at == std::string::npos) return {};
    const size_t start = at + k.size();
    const size_t end = line.find(", \"" + next_key + "\": ", start);
    return end == std::string::npos ? std::string() : line.substr(start, end - start);
}

struct temp_dir {
    fs::path path = fs::path(TACHYON_BINARY_DIR) / "test_tmp" / ("cmd_run-" + std::to_string(::getpid()));
    temp_dir() {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() { fs::remove_all(path); }
};

std::vector<std::string> run_args(const std::string& incident, const std::string& runs) {
    return {tachyon_bin, "run", agent_file, "--task", task, "-i", "incident_dir=" + incident, "--journal-dir", runs, "--json"};
}

// Starts `args` with stdout and stderr to /dev/null.
pid_t spawn(const std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const int null_fd = ::open("/dev/null", O_WRONLY);
        ::dup2(null_fd, 1);
        ::dup2(null_fd, 2);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    return pid;
}

}  // namespace

TEST_CASE("tachyon run killed with SIGKILL at 50 random moments: every journal reads back and resumes to the uninterrupted answer") {
    if (!fs::exists(world_bin)) {
        MESSAGE("skipped: " << world_bin << " is absent (examples not built)");
        return;
    }
    temp_dir tmp;
    const std::string incident = (tmp.path / "incident").string();
    REQUIRE(run(world_bin + " generate --seed 1000003 --out " + incident).status == 0);

    // The uninterrupted twin (greedy: the shipped agent's sampling).
    const std::string twin_runs = (tmp.path / "twin").string();
    std::string twin_command;
    for (const auto& a : run_args(incident, twin_runs)) twin_command += "'" + a + "' ";
    const auto t0 = std::chrono::steady_clock::now();
    auto twin = run(twin_command);
    const double twin_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE_MESSAGE(twin.status == 0, twin.out);
    const std::string answer = json_field(twin.out, "answer", "error");
    REQUIRE(answer.size() > 2);
    REQUIRE(json_field(twin.out, "verified", "answer") == "true");

    // Kill moments over the whole life of a run, from a fixed seed.
    std::mt19937 rng(20261201);
    std::uniform_real_distribution<double> moment(0.0, twin_ms * 1.1);
    int n_interrupted = 0, n_finished = 0, n_before_journal = 0;
    for (int i = 0; i < 50; ++i) {
        CAPTURE(i);
        const std::string runs = (tmp.path / ("kill-" + std::to_string(i))).string();
        const double at_ms = moment(rng);
        const pid_t pid = spawn(run_args(incident, runs));
        std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(at_ms * 1000)));
        ::kill(pid, SIGKILL);
        int st = 0;
        REQUIRE(::waitpid(pid, &st, 0) == pid);

        std::vector<fs::path> journals;
        if (fs::is_directory(runs))
            for (const auto& e : fs::directory_iterator(runs)) journals.push_back(e.path());
        if (journals.empty()) {  // killed before the run began
            ++n_before_journal;
            continue;
        }
        REQUIRE(journals.size() == 1);
        const std::string id = journals[0].stem().string();
        // Every journal reads back, to its last complete event.
        auto shown = run("'" + tachyon_bin + "' runs show " + id + " --dir '" + runs + "'");
        CHECK_MESSAGE(shown.status == 0, shown.out);
        auto listed = run("'" + tachyon_bin + "' runs list --dir '" + runs + "'");
        REQUIRE(listed.status == 0);
        if (listed.out.find(" succeeded ") != std::string::npos) {  // the kill came after the end
            ++n_finished;
            continue;
        }
        CHECK(listed.out.find(" interrupted ") != std::string::npos);
        ++n_interrupted;
        auto resumed = run("'" + tachyon_bin + "' run --resume " + id + " --journal-dir '" + runs + "' --json");
        CHECK_MESSAGE(resumed.status == 0, resumed.out);
        CHECK(json_field(resumed.out, "state", "verified") == "\"succeeded\"");
        CHECK(json_field(resumed.out, "answer", "error") == answer);
        CHECK(json_field(resumed.out, "resumed", "pending") == "true");
        auto after = run("'" + tachyon_bin + "' runs list --dir '" + runs + "'");
        CHECK(after.out.find(" succeeded ") != std::string::npos);
    }
    MESSAGE(n_interrupted << " runs killed mid-way and resumed, " << n_finished << " killed after their end, " << n_before_journal
                          << " before their journal began");
    // The moments span a run's life: most kills land in the middle of one.
    CHECK(n_interrupted >= 10);
}

TEST_CASE("the incident agent on random-weight qwen3 and Llama 3 models, in their own chat formats, ends with a budget and a complete journal") {
    const fs::path jinja = fs::path(TACHYON_CONFORMANCE_DIR) / "templates" / "jinja";
    if (!fs::exists(world_bin) || !fs::exists(jinja)) {
        MESSAGE("skipped: " << world_bin << " or the conformance templates at " << jinja.string() << " are absent");
        return;
    }
    temp_dir tmp;
    const std::string incident = (tmp.path / "incident").string();
    REQUIRE(run(world_bin + " generate --seed 1000301 --out " + incident).status == 0);
    std::ifstream in(agent_file, std::ios::binary);
    const std::string shipped((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string source_dir = TACHYON_SOURCE_DIR;
    const std::pair<std::string, std::string> models[] = {{"qwen3", "Qwen-Qwen3-0.6B"}, {"llama", "meta-llama-Llama-3.1-8B-Instruct"}};
    for (const auto& elem : models) {
        const auto& arch = std::get<0>(elem); const auto& template_name = std::get<1>(elem);
        CAPTURE(arch);
        const std::string model = (tmp.path / (arch + ".gguf")).string();
        REQUIRE(run("'" + tachyon_bin + "' bench synth-model '" + model + "' --arch " + arch + " --vocab-from '" + source_dir +
                    "/examples/incident/model/incident-analyst.gguf' --chat-template '" + (jinja / (template_name + ".jinja")).string() +
                    "' --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --seed 7")
                    .status == 0);
        // The shipped agent on that model, its chat format detected from the model's template.
        std::string text = shipped;
        auto replace = [&text](const std::string& from, const std::string& to) {
            const size_t at = text.find(from);
            REQUIRE_MESSAGE(at != std::string::npos, from);
            text.replace(at, from.size(), to);
        };
        replace("\"../examples/incident/model/incident-analyst.gguf\"", "\"" + model + "\"");
        replace("\"../examples/incident/instructions.txt\"", "\"" + source_dir + "/examples/incident/instructions.txt\"");
        replace("\"chat_format\": \"chatml\",", "");
        const std::string agent = (tmp.path / (arch + ".json")).string();
        std::ofstream(agent, std::ios::binary) << text;
        const std::string runs = (tmp.path / ("runs-" + arch)).string();
        auto out = run("'" + tachyon_bin + "' run '" + agent + "' --task '" + task + "' -i incident_dir=" + incident + " --journal-dir '" +
                       runs + "' --json");
        // Nonsense from the model is a run that spends its budget, never an internal error.
        CHECK_MESSAGE(out.status == 1, out.out);
        CHECK(json_field(out.out, "state", "verified") == "\"budget_exhausted\"");
        CHECK(json_field(out.out, "verified", "answer") == "false");
        auto listed = run("'" + tachyon_bin + "' runs list --dir '" + runs + "'");
        REQUIRE(listed.status == 0);
        CHECK_MESSAGE(listed.out.find(" budget_exhausted ") != std::string::npos, listed.out);
    }
}
