#include "examples/incident/expert.h"

#include <doctest/doctest.h>

#include <set>

#include <unistd.h>

#include "examples/incident/messages.h"
#include "examples/incident/trajectories.h"
#include "examples/incident/world.h"

using namespace incident;

TEST_CASE("every root-cause message names its fault type") {
    // for each fault type, a few incidents where it strikes, many messages each
    std::set<fault_type> covered;
    for (uint64_t seed = 0; seed < 400; ++seed) {
        const incident_plan p = plan_incident(seed);
        if (covered.count(p.fault) && seed > 120) continue;
        covered.insert(p.fault);
        prng rng(seed);
        for (int i = 0; i < 40; ++i) {
            const log_message m = fault_message(p, p.root, rng, p.fault_start + i * 1000);
            CAPTURE(m.text);
            CHECK(m.lvl == level::error);
            CHECK(classify_fault(m.text) == to_string(p.fault));
        }
    }
    CHECK(covered.size() == static_cast<size_t>(n_fault_types));
}

TEST_CASE("caller timeouts and 5xx do not name a fault") {
    const incident_plan p = plan_incident(1);
    prng rng(5);
    for (int i = 0; i < 50; ++i) {
        const int caller = p.path[0];
        const int callee = p.path[1];
        const log_message m = caller_error(p, caller, callee, i % 2 == 0, rng);
        CAPTURE(m.text);
        const std::string f = classify_fault(m.text);
        CHECK((f.empty() || f == "bad_deploy"));  // at most a generic exception
    }
}

TEST_CASE("the expert solves a sample of incidents with the real tools") {
    trajectory_options o;
    o.instructions = "Investigate.";
    o.work_dir = std::filesystem::temp_directory_path();
    o.mistake_rate = 0.0;
    o.late_timestamp_rate = 0.0;
    for (uint64_t seed = 0; seed < 24; ++seed) {
        CAPTURE(seed);
        auto t = make_trajectory(seed, o);
        REQUIRE(t.ok());
        CHECK(t->run.trouble == "");
        CHECK(t->run.verified);
        CHECK(t->correct_service);
        CHECK(t->correct_fault);
        CHECK(t->correct_time);
        CHECK(t->run.n_answers == 1);
        CHECK_FALSE(std::filesystem::exists(o.work_dir / ("incident-" + std::to_string(::getpid()) + "-" + std::to_string(seed))));
    }
}

TEST_CASE("a deliberately late first_bad_timestamp is rejected and corrected from the verifier's words, and not learned") {
    trajectory_options o;
    o.instructions = "Investigate.";
    o.work_dir = std::filesystem::temp_directory_path();
    o.mistake_rate = 0.0;
    o.late_timestamp_rate = 1.0;
    int n_recovered = 0;
    for (uint64_t seed = 0; seed < 8; ++seed) {
        CAPTURE(seed);
        auto t = make_trajectory(seed, o);
        REQUIRE(t.ok());
        CHECK(t->run.verified);
        CHECK(t->correct_time);
        if (t->run.n_answers != 2) continue;
        ++n_recovered;
        // The wrong answer is context, not a target; the correction is a target.
        const auto& turns = t->run.convo.turns;
        REQUIRE(turns.size() >= 2);
        CHECK_FALSE(turns[turns.size() - 2].learn);
        CHECK(turns[turns.size() - 2].results.at(0).find("started failing at") != std::string::npos);
        CHECK(turns.back().learn);
    }
    CHECK(n_recovered >= 6);
}

TEST_CASE("a deliberately cited restart INFO line is rejected by the verifier, then the error lines are cited, and it is not learned") {
    trajectory_options o;
    o.instructions = "Investigate.";
    o.work_dir = std::filesystem::temp_directory_path();
    o.mistake_rate = 0.0;
    o.late_timestamp_rate = 0.0;
    o.info_evidence_rate = 1.0;
    int n_recovered = 0;
    for (uint64_t seed = 0; seed < 40; ++seed) {
        CAPTURE(seed);
        auto t = make_trajectory(seed, o);
        REQUIRE(t.ok());
        CHECK(t->run.verified);
        CHECK(t->correct_service);
        if (t->run.n_answers != 2) continue;  // its changes showed no log line of the service
        ++n_recovered;
        const auto& turns = t->run.convo.turns;
        REQUIRE(turns.size() >= 2);
        CHECK_FALSE(turns[turns.size() - 2].learn);
        CHECK(turns[turns.size() - 2].results.at(0).find("is an INFO line") != std::string::npos);
        CHECK(turns.back().learn);
        CHECK(t->run.answer.evidence.size() >= 1);
    }
    CHECK(n_recovered >= 3);
}

TEST_CASE("a deliberate wrong answer is rejected by verify_root_cause and then corrected") {
    trajectory_options o;
    o.instructions = "Investigate.";
    o.work_dir = std::filesystem::temp_directory_path();
    o.mistake_rate = 1.0;
    int n_recovered = 0;
    for (uint64_t seed = 0; seed < 8; ++seed) {
        CAPTURE(seed);
        auto t = make_trajectory(seed, o);
        REQUIRE(t.ok());
        CHECK(t->correct_service);
        CHECK(t->run.verified);
        if (!t->run.made_mistake) continue;
        ++n_recovered;
        CHECK(t->run.n_answers >= 2);
        const std::string text = join_segments(t->segments);
        CHECK(text.find("<tool_response>\nverify_root_cause: rejected: ") != std::string::npos);
        // The mistaken turns are shown but not learned: only the recovery is a target.
        int n_unlearned = 0;
        for (const auto& turn : t->run.convo.turns) n_unlearned += turn.learn ? 0 : 1;
        CHECK(n_unlearned >= 2);  // the mistaken investigation and the wrong answer
        CHECK(t->run.convo.turns.back().learn);
    }
    CHECK(n_recovered >= 6);
}
