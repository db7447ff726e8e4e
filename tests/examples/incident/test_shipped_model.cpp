// The shipped model against the reference implementation that trained it:
// examples/incident/model/golden.json holds PyTorch's logits (F16-rounded
// weights, F32 arithmetic) for the first tokens of held-out transcripts.
#include <doctest/doctest.h>

#include <simdjson.h>

#include <cmath>
#include <filesystem>

#include "inference/kernels/kernels.h"
#include "inference/arch/model.h"

using namespace tachyon;

namespace {
const std::string model_dir = std::string(TACHYON_SOURCE_DIR) + "/examples/incident/model";
}

TEST_CASE("the shipped model's logits match the training implementation within 1e-3") {
    const std::string gguf = model_dir + "/incident-analyst.gguf";
    const std::string golden = model_dir + "/golden.json";
    REQUIRE_MESSAGE(std::filesystem::exists(gguf), gguf << " is missing: the project ships it");
    REQUIRE_MESSAGE(std::filesystem::exists(golden), golden << " is missing: the project ships it");
    auto m = load_model(gguf);
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.err().message));
    const int n_vocab = (*m)->hparams().n_vocab;

    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE_FALSE(parser.load(golden).get(doc));
    int n_cases = 0;
    for (auto c : doc["cases"].get_array()) {
        std::vector<int32_t> ids;
        for (auto v : c["ids"].get_array()) ids.push_back(static_cast<int32_t>(int64_t(v)));
        std::vector<float> expected;
        for (auto v : c["last_logits"].get_array()) expected.push_back(static_cast<float>(double(v)));
        REQUIRE(static_cast<int>(expected.size()) == n_vocab);

        for (kernel_isa isa : {kernel_isa::scalar, default_isa()}) {
            kv_cache_config kc;
            kc.n_layer = (*m)->hparams().n_layer;
            kc.n_kv_embd = (*m)->hparams().n_embd_kv();
            kc.n_blocks = static_cast<int>(ids.size()) / 16 + 2;
            kv_cache kv(kc);
            seq_id s = kv.create();
            forward_batch b;
            for (size_t i = 0; i < ids.size(); ++i) b.add(ids[i], s, static_cast<int32_t>(i), i + 1 == ids.size());
            REQUIRE(kv.reserve(s, static_cast<int>(ids.size())).ok());
            std::vector<float> logits(static_cast<size_t>(n_vocab));
            kernel_context ctx(1, isa);
            (*m)->forward(ctx, b, kv, logits.data());
            float worst = 0;
            for (int i = 0; i < n_vocab; ++i) worst = std::max(worst, std::fabs(logits[static_cast<size_t>(i)] - expected[static_cast<size_t>(i)]));
            MESSAGE("seed " << int64_t(c["seed"]) << " (" << to_string(isa) << "): max |logit - reference| = " << worst);
            CHECK(worst <= 1e-3f);
        }
        ++n_cases;
    }
    CHECK(n_cases >= 1);
}
