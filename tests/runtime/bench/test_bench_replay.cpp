// `tachyon bench agents --replay`: runs recorded with the shipped model
// replayed on a random-weight model with its tokenizer reach the same
// verified answers in every mode; a seed without a transcript, a recording
// the replay leaves, and a model of another vocabulary are named.
#include "runtime/cli/commands.h"

#include <doctest/doctest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "tests/runtime/cli/cli_capture.h"

using tachyon::testing::tachyon_cli;

namespace {

std::string replay_read(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The journal in `dir` whose incident is `seed`'s.
std::filesystem::path replay_journal_of(const std::filesystem::path& dir, const std::string& seed) {
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (replay_read(e.path()).find("incident-" + seed + "\"") != std::string::npos) return e.path();
    return {};
}

}  // namespace

TEST_CASE("bench agents --replay: the recorded runs replayed on another model reach the recorded answers, divergence is named") {
    const std::string src = TACHYON_SOURCE_DIR, bin = TACHYON_BINARY_DIR;
    const std::string world = bin + "/examples/incident/incident-world";
    const std::string shipped = src + "/examples/incident/model/incident-analyst.gguf";
    const std::string agent = src + "/agents/incident-analyst.json";
    if (!std::filesystem::exists(world) || !std::filesystem::exists(shipped)) {
        MESSAGE("incident-world or the shipped model not found; skipped");
        return;
    }
    const auto dir = std::filesystem::temp_directory_path() / ("tachyon_replay_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string model = (dir / "m.gguf").string(), rec = (dir / "rec").string(), out = (dir / "out").string();
    auto o = tachyon_cli({"bench", "synth-model", model, "--vocab-from", shipped, "--dim", "64", "--layers", "2", "--heads", "4",
                          "--kv-heads", "2", "--ffn", "128"});
    REQUIRE_MESSAGE(o.code == 0, o.err);

    o = tachyon_cli({"eval", agent, "--seeds", "1000300-1000302", "--world", world, "--journal-dir", rec, "--json"});
    REQUIRE_MESSAGE(o.code == 0, o.err);
    simdjson::dom::parser parser;
    int64_t recorded_success = -1;
    simdjson::dom::element doc;
    REQUIRE(!parser.parse(simdjson::padded_string(o.out)).get(doc));
    REQUIRE(!doc["success"].get(recorded_success));

    o = tachyon_cli({"bench", "agents", agent, "--seeds", "1000300-1000302", "--world", world, "--replay", rec, "--model", model,
                     "--tool-latency", "none", "--journal-dir", out, "--json"});
    REQUIRE_MESSAGE(o.code == 0, o.err);
    REQUIRE(!parser.parse(simdjson::padded_string(o.out)).get(doc));
    // The floor's rates: measured over the contexts the runs reached (the
    // recorded prompts alone are hundreds of tokens), growing with them.
    int64_t measured_to = 0;
    double prefill_ms = 0, prefill_slope = -1, decode_ms = 0, decode_slope = -1;
    CHECK(!doc["rates"]["measured_to"].get(measured_to));
    CHECK(measured_to >= 512);
    CHECK(!doc["rates"]["prefill_ms_per_token"].get(prefill_ms));
    CHECK(!doc["rates"]["prefill_ms_per_token_per_position"].get(prefill_slope));
    CHECK(!doc["rates"]["decode_ms_per_step"].get(decode_ms));
    CHECK(!doc["rates"]["decode_ms_per_step_per_position"].get(decode_slope));
    CHECK(prefill_ms + prefill_slope * static_cast<double>(measured_to) > 0);
    CHECK(decode_ms + decode_slope * static_cast<double>(measured_to) > 0);
    CHECK(prefill_slope >= 0);
    CHECK(decode_slope >= 0);
    simdjson::dom::array modes;
    REQUIRE(!doc["modes"].get(modes));
    CHECK(modes.size() == 3);
    for (simdjson::dom::element m : modes) {
        int64_t success = -1;
        double floor_ms = -1;
        std::string_view name;
        bool over_http = false;
        CHECK(!m["mode"].get(name));
        CHECK(!m["over_http"].get(over_http));
        // Sequential and conventional replay as clients of a tachyon serve (the tokens travel with each request).
        CHECK(over_http == (name != "tachyon"));
        CHECK(!m["success"].get(success));
        CHECK(success == recorded_success);
        CHECK(!m["floor_p50_ms"].get(floor_ms));
        if (recorded_success > 0) CHECK(floor_ms > 0);
    }

    o = tachyon_cli({"bench", "agents", agent, "--seeds", "1000300", "--world", world, "--replay", rec, "--model", model, "--baseline", "ftp"});
    CHECK(o.code == 1);
    CHECK(o.err.find("--baseline must be http or in-process, got 'ftp'") != std::string::npos);

    // A seed the transcripts lack is named with the command that records it.
    o = tachyon_cli({"bench", "agents", agent, "--seeds", "1000300-1000303", "--world", world, "--replay", rec, "--model", model});
    CHECK(o.code == 1);
    CHECK(o.err.find("seed 1000303 has no transcript in " + rec) != std::string::npos);

    // Another incident under a recording: the recorded trace id is not one the
    // run has seen, the grammar refuses it, and the error names the turn and position.
    {
        const auto src300 = replay_journal_of(rec, "1000300");
        REQUIRE(!src300.empty());
        const auto moved = dir / "moved";
        std::filesystem::create_directories(moved);
        std::string text = replay_read(src300);
        for (size_t at = text.find("incident-1000300\""); at != std::string::npos; at = text.find("incident-1000300\"", at))
            text.replace(at, 16, "incident-1000301");
        { std::ofstream(moved / "moved.jsonl") << text; }
        o = tachyon_cli({"bench", "agents", agent, "--seeds", "1000301", "--world", world, "--replay", moved.string(), "--model", model,
                         "--modes", "tachyon", "--tool-latency", "none", "--journal-dir", out});
        CHECK(o.code == 1);
        CHECK(o.err.find("seed 1000301") != std::string::npos);
        CHECK(o.err.find("diverged from the recording at turn 2: forced token") != std::string::npos);
        CHECK(o.err.find(" at position ") != std::string::npos);
        CHECK(o.err.find("is not allowed by the constraint") != std::string::npos);
    }

    // A recording cut short (its last turn gone): the replay goes on past it, and says where.
    const auto cut = replay_journal_of(rec, "1000301");
    REQUIRE(!cut.empty());
    std::string kept, line, last_turn;
    {
        std::istringstream lines(replay_read(cut));
        std::vector<std::string> all;
        while (std::getline(lines, line)) all.push_back(line);
        size_t last = all.size();
        for (size_t i = 0; i < all.size(); ++i)
            if (all[i].find("\"type\": \"model_turn\"") != std::string::npos || all[i].find("\"type\":\"model_turn\"") != std::string::npos) last = i;
        REQUIRE(last < all.size());
        for (size_t i = 0; i < all.size(); ++i)
            if (i != last) kept += all[i] + "\n";
    }
    { std::ofstream(cut, std::ios::trunc) << kept; }
    o = tachyon_cli({"bench", "agents", agent, "--seeds", "1000301", "--world", world, "--replay", rec, "--model", model, "--modes",
                     "tachyon", "--tool-latency", "none", "--journal-dir", out});
    CHECK(o.code == 1);
    CHECK(o.err.find("seed 1000301") != std::string::npos);
    CHECK(o.err.find("the recording lacks") != std::string::npos);

    // A model of another tokenizer cannot read the recorded ids: the first one outside its vocabulary is named.
    const std::string stories = std::string(TACHYON_CONFORMANCE_DIR) + "/models/stories260K.gguf";
    if (std::filesystem::exists(stories)) {
        const std::string other = (dir / "other.gguf").string();
        o = tachyon_cli({"bench", "synth-model", other, "--vocab-from", stories, "--dim", "32", "--layers", "1", "--heads", "2",
                         "--kv-heads", "1", "--ffn", "32"});
        REQUIRE_MESSAGE(o.code == 0, o.err);
        o = tachyon_cli({"bench", "agents", agent, "--seeds", "1000300", "--world", world, "--replay", rec, "--model", other});
        CHECK(o.code == 1);
        CHECK(o.err.find("seed 1000300") != std::string::npos);
        CHECK(o.err.find("turn 1 position 0") != std::string::npos);
        CHECK(o.err.find("outside the model's vocabulary of 512") != std::string::npos);
    }
    std::filesystem::remove_all(dir);
}
