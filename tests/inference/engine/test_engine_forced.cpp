// Forced tokens (request::forced): the oracle `bench agents --replay` runs
// recorded turns with.
#include "inference/engine/engine.h"

#include <doctest/doctest.h>

#include <filesystem>

using namespace tachyon;

namespace {

const std::string forced_stories = std::string(TACHYON_CONFORMANCE_DIR) + "/models/stories260K.gguf";

struct forced_run {
    std::vector<int32_t> tokens;
    request_stats stats;
};

forced_run run_forced(engine& e, std::vector<int32_t> prompt, std::vector<int32_t> forced, int max_tokens, int n_draft = 0,
                      mask_callback constrain = nullptr) {
    forced_run g;
    request r;
    r.session = e.create_session();
    r.append = std::move(prompt);
    r.max_tokens = max_tokens;
    r.forced = std::move(forced);
    r.n_draft = n_draft;
    r.constrain = std::move(constrain);
    r.on_token = [&g](int32_t t) {
        g.tokens.push_back(t);
        return true;
    };
    g.stats = e.run(std::move(r));
    return g;
}

}  // namespace

TEST_CASE("forced tokens: the request generates exactly them, drafts are kept where they match, errors name the position") {
    if (!std::filesystem::exists(forced_stories)) {
        MESSAGE("skipped: " << forced_stories << " is absent");
        return;
    }
    engine_options o;
    o.n_threads = 1;
    o.n_ctx = 1024;
    auto opened = engine::open(forced_stories, o);
    REQUIRE_MESSAGE(opened.ok(), (opened.ok() ? "" : opened.err().message));
    engine& e = **opened;

    // A sequence no model would pick on its own (a cycle of 4 ids), whatever the logits say.
    const std::vector<int32_t> prompt = {1, 400, 401, 402, 403, 400, 401, 402};
    std::vector<int32_t> forced;
    for (int i = 0; i < 40; ++i) forced.push_back(400 + (i + 3) % 4);  // 403 400 401 402 403 ...
    auto plain = run_forced(e, prompt, forced, 40);
    CHECK(plain.tokens == forced);
    CHECK(plain.stats.finish == finish_reason::length);
    CHECK(plain.stats.n_generated == 40);

    // Prompt lookup drafts the cycle: the drafts that match are kept, the output is the same.
    auto drafted = run_forced(e, prompt, forced, 40, 8);
    CHECK(drafted.tokens == forced);
    CHECK(drafted.stats.n_draft_accepted > 0);

    // A forced token the constraint forbids ends the request, naming it and its position.
    auto below_403 = [](std::span<const int32_t> generated, std::span<uint8_t> allowed) {
        for (size_t i = 0; i < allowed.size(); ++i) allowed[i] = generated.size() < 2 || i != 402 ? 1 : 0;
    };
    const std::vector<int32_t> short_forced = {400, 401, 402, 403};
    auto refused = run_forced(e, prompt, short_forced, 4, 0, below_403);
    CHECK(refused.stats.finish == finish_reason::error);
    CHECK(refused.stats.error.find("forced token 402 at position 2") != std::string::npos);
    CHECK(refused.tokens == std::vector<int32_t>{400, 401});

    // Generating past the forced tokens is an error, and so is a forced id outside the vocabulary.
    auto past = run_forced(e, prompt, {400, 401}, 4);
    CHECK(past.stats.finish == finish_reason::error);
    CHECK(past.stats.error.find("past the 2 forced tokens") != std::string::npos);
    auto outside = run_forced(e, prompt, {400, 1 << 30}, 2);
    CHECK(outside.stats.finish == finish_reason::error);
    CHECK(outside.stats.error.find("outside the vocabulary") != std::string::npos);
}
