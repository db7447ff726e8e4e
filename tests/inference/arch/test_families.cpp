#include "inference/arch/families.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace tachyon;

TEST_CASE("every family of the table is found by name, with the traits of its blocks") {
    for (const char* arch : {"llama", "mistral", "mistral3", "qwen2", "qwen3", "granite", "smollm3", "phi3", "gemma2", "gemma3"}) {
        CAPTURE(arch);
        CHECK(arch::find_family(arch) != nullptr);
        CHECK(arch::family_names().find(arch) != std::string::npos);
    }
    CHECK(arch::find_family("mamba") == nullptr);
    CHECK(arch::find_family("qwen2")->rope == rope_mode::neox);
    CHECK(arch::find_family("llama")->rope == rope_mode::normal);
    CHECK(arch::find_family("phi3")->fused_qkv);
    CHECK(arch::find_family("qwen3")->qk_norm);
    CHECK(arch::find_family("smollm3")->no_rope_every == 4);
    CHECK(arch::find_family("gemma2")->act == ffn_activation::gelu_tanh);
}

TEST_CASE("sliding-window and NoPE layers follow the families' patterns") {
    model_hparams hp;
    hp.sliding_window = 8;
    hp.traits = *arch::find_family("gemma2");
    CHECK(hp.layer_window(0) == 8);
    CHECK(hp.layer_window(1) == 0);
    CHECK(hp.layer_window(2) == 8);
    hp.traits = *arch::find_family("gemma3");
    for (int il = 0; il < 12; ++il) CHECK(hp.layer_window(il) == (il == 5 || il == 11 ? 0 : 8));
    hp.traits = *arch::find_family("smollm3");
    for (int il = 0; il < 8; ++il) CHECK(hp.layer_rope(il) == (il != 3 && il != 7));
    hp.traits = *arch::find_family("llama");
    CHECK(hp.layer_window(0) == 0);
    CHECK(hp.layer_rope(3));
}

TEST_CASE("rope.scaling.type llama3 factors reproduce the rope_freqs Llama 3's converter wrote") {
    // Llama 3.2 values: base 5e5, 64 dims, factor 32, low/high 1 and 4, original context 8192.
    std::vector<float> f(32);
    arch::llama3_freq_factors(f.data(), 64, 5e5f, 32.0f, 8192, 1.0f, 4.0f);
    for (int j = 0; j < 15; ++j) CHECK(f[static_cast<size_t>(j)] == 1.0f);
    CHECK(f[15] == doctest::Approx(1.6513).epsilon(1e-4));
    CHECK(f[16] == doctest::Approx(3.2923).epsilon(1e-4));
    CHECK(f[17] == doctest::Approx(9.6667).epsilon(1e-4));
    for (int j = 18; j < 32; ++j) CHECK(f[static_cast<size_t>(j)] == 32.0f);

    const std::string path = std::string(TACHYON_CONFORMANCE_DIR) + "/arch/llama3.Q4_K_M.gguf";
    if (!std::filesystem::exists(path)) {
        MESSAGE("skipped: " << path << " is absent");
        return;
    }
    auto file = gguf_file::open(path);
    REQUIRE(file.ok());
    const gguf_tensor_info* t = (*file)->find_tensor("rope_freqs.weight");
    REQUIRE(t != nullptr);
    REQUIRE(t->type == tensor_type::f32);
    const float* stored = reinterpret_cast<const float*>(t->data);
    for (int j = 0; j < 32; ++j) CHECK(f[static_cast<size_t>(j)] == doctest::Approx(stored[j]).epsilon(1e-6));
}
