#include "inference/gguf/model_writer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <unistd.h>
#include <filesystem>

#include "inference/gguf/gguf.h"
#include "inference/kernels/kernels.h"
#include "inference/arch/model.h"

using namespace tachyon;

namespace {

const std::string stories = std::string(TACHYON_CONFORMANCE_DIR) + "/models/stories260K.gguf";

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("tachyon_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

// Logits after each of `tokens` (one sequence, batched prefill): [n, n_vocab].
std::vector<float> all_logits(model& m, const std::vector<int32_t>& tokens) {
    kv_cache_config c;
    c.n_layer = m.hparams().n_layer;
    c.n_kv_embd = m.hparams().n_embd_kv();
    c.block_size = 16;
    c.n_blocks = 8;
    kv_cache kv(c);
    seq_id s = kv.create();
    forward_batch b;
    for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], s, static_cast<int32_t>(i), true);
    REQUIRE(kv.reserve(s, static_cast<int>(tokens.size())).ok());
    std::vector<float> out(tokens.size() * static_cast<size_t>(m.hparams().n_vocab));
    kernel_context ctx(1);
    m.forward(ctx, b, kv, out.data());
    return out;
}

}  // namespace

TEST_CASE("re-quantized models stay close to their f32 original") {
    if (!std::filesystem::exists(stories)) {
        MESSAGE("skipped: " << stories << " is absent");
        return;
    }
    // "Once upon a time, there was a little girl named Lily." and a few more tokens.
    const std::vector<int32_t> tokens{1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267};
    auto f32 = load_model(stories);
    REQUIRE(f32.ok());
    const auto reference = all_logits(**f32, tokens);
    const int n_vocab = (*f32)->hparams().n_vocab;

    // Measured on this model (logits span about -23..+9; every matrix including
    // the embeddings is converted, and activations are quantized to q8_0 for
    // the products): max |Δlogit| f16 0.011, q8_0 0.27, q4_0 4.6; relative RMS
    // error f16 ~0.03 %, q8_0 ~0.7 %, q4_0 ~12 %; argmax agrees at 20/20 for all.
    struct expectation {
        tensor_type type;
        float max_abs;
        int min_argmax_agree;
        float max_rel_rms;
    } cases[] = {{tensor_type::f16, 0.03f, 20, 0.002f}, {tensor_type::q8_0, 0.6f, 19, 0.02f}, {tensor_type::q4_0, 8.0f, 16, 0.25f}};
    for (const auto& c : cases) {
        CAPTURE(to_string(c.type));
        const std::string path = temp_path(std::string(to_string(c.type)) + ".gguf");
        auto st = requantize_model(stories, path, c.type);
        REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.err().message));
        auto q = load_model(path);
        REQUIRE(q.ok());
        // The matrices whose rows fit the block size changed type.
        CHECK((*q)->file().find_tensor("blk.0.attn_q.weight")->type == c.type);
        const auto got = all_logits(**q, tokens);
        float worst = 0.0f;
        int agree = 0;
        double err2 = 0, ref2 = 0;
        for (size_t p = 0; p < tokens.size(); ++p) {
            const float* a = &reference[p * static_cast<size_t>(n_vocab)];
            const float* b = &got[p * static_cast<size_t>(n_vocab)];
            for (int i = 0; i < n_vocab; ++i) {
                worst = std::max(worst, std::fabs(a[i] - b[i]));
                err2 += double(a[i] - b[i]) * (a[i] - b[i]);
                ref2 += double(a[i]) * a[i];
            }
            agree += std::max_element(a, a + n_vocab) - a == std::max_element(b, b + n_vocab) - b;
        }
        const double rel_rms = std::sqrt(err2 / ref2);
        MESSAGE(to_string(c.type) << ": max |logit - f32| = " << worst << ", relative RMS error " << rel_rms
                                  << ", argmax agrees at " << agree << "/" << tokens.size());
        CHECK(worst < c.max_abs);
        CHECK(rel_rms < c.max_rel_rms);
        CHECK(agree >= c.min_argmax_agree);
        std::filesystem::remove(path);
    }
}

TEST_CASE("a synthetic model has the requested shapes and runs") {
    synthetic_llama_shape s;
    s.n_vocab = 256;
    s.n_embd = 64;
    s.n_layer = 2;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_ff = 96;
    const std::string path = temp_path("synth.gguf");
    REQUIRE(write_synthetic_llama(path, s, tensor_type::q8_0, 3).ok());
    auto m = load_model(path);
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.err().message));
    CHECK((*m)->hparams().n_layer == 2);
    CHECK((*m)->hparams().n_head_kv == 2);
    CHECK((*m)->file().find_tensor("output.weight") == nullptr);  // tied
    auto logits = all_logits(**m, {1, 2, 3});
    for (float v : logits) CHECK(std::isfinite(v));
    std::filesystem::remove(path);
}

TEST_CASE("a synthetic qwen2 or qwen3 model carries its architecture's tensors and loads as that architecture") {
    for (const char* arch : {"qwen2", "qwen3"}) {
        CAPTURE(arch);
        synthetic_llama_shape s;
        s.arch = arch;
        s.n_vocab = 256;
        s.n_embd = 64;
        s.n_layer = 2;
        s.n_head = 4;
        s.n_head_kv = 2;
        s.n_ff = 96;
        const std::string path = temp_path(std::string("synth_") + arch + ".gguf");
        REQUIRE(write_synthetic_llama(path, s, tensor_type::f32, 3).ok());
        auto file = gguf_file::open(path);
        REQUIRE(file.ok());
        CHECK(*(*file)->get_string("general.architecture") == arch);
        const bool qwen3 = std::string(arch) == "qwen3";
        CHECK(((*file)->find_tensor("blk.1.attn_q_norm.weight") != nullptr) == qwen3);
        CHECK(((*file)->find_tensor("blk.1.attn_k.bias") != nullptr) == !qwen3);
        auto m = load_model(path);
        REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.err().message));
        CHECK((*m)->hparams().arch == arch);
        auto logits = all_logits(**m, {1, 2, 3});
        for (float v : logits) CHECK(std::isfinite(v));
        std::filesystem::remove(path);
    }
    synthetic_llama_shape bad;
    bad.arch = "gemma9";
    auto st = write_synthetic_llama(temp_path("never_arch.gguf"), bad, tensor_type::f32, 1);
    REQUIRE_FALSE(st.ok());
    CHECK(st.err().message.find("gemma9") != std::string::npos);
}

TEST_CASE("a synthetic model takes another file's tokenizer and a chat template, for chat tests on random weights") {
    synthetic_llama_shape s;
    s.n_vocab = 7;  // replaced by the tokenizer's size
    s.n_embd = 64;
    s.n_layer = 1;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_ff = 64;
    s.vocab_from = stories;
    s.chat_template = "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}";
    const std::string path = temp_path("synth_vocab.gguf");
    REQUIRE(write_synthetic_llama(path, s, tensor_type::f32, 3).ok());
    auto source = gguf_file::open(stories);
    auto written = gguf_file::open(path);
    REQUIRE(source.ok());
    REQUIRE(written.ok());
    auto tokens = (*source)->get_string_array("tokenizer.ggml.tokens");
    REQUIRE(tokens.ok());
    CHECK(*(*written)->get_string_array("tokenizer.ggml.tokens") == *tokens);
    CHECK(*(*written)->get_string("tokenizer.ggml.model") == *(*source)->get_string("tokenizer.ggml.model"));
    CHECK(*(*written)->get_string("tokenizer.chat_template") == s.chat_template);
    auto m = load_model(path);
    REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.err().message));
    CHECK((*m)->hparams().n_vocab == static_cast<int>(tokens->size()));

    // A vocabulary file without a tokenizer is an error naming it.
    synthetic_llama_shape bare = s;
    bare.vocab_from.clear();
    bare.chat_template.clear();
    REQUIRE(write_synthetic_llama(path, bare, tensor_type::f32, 3).ok());
    CHECK_FALSE((*gguf_file::open(path))->get_string("tokenizer.chat_template").ok());
    s.vocab_from = path;
    const std::string other = temp_path("synth_vocab2.gguf");
    auto st = write_synthetic_llama(other, s, tensor_type::f32, 3);
    REQUIRE_FALSE(st.ok());
    CHECK(st.err().message.find(path) != std::string::npos);
    CHECK(st.err().message.find("tokenizer") != std::string::npos);
    std::filesystem::remove(path);
}

TEST_CASE("bad targets and shapes are refused with the reason") {
    const std::string path = temp_path("never.gguf");
    auto st = requantize_model("/nonexistent/model.gguf", path, tensor_type::q8_0);
    REQUIRE_FALSE(st.ok());
    CHECK(st.err().message.find("/nonexistent/model.gguf") != std::string::npos);
    auto bad_type = requantize_model(stories, path, tensor_type::q6_k);
    REQUIRE_FALSE(bad_type.ok());
    CHECK(bad_type.err().message.find("q6_k") != std::string::npos);
    synthetic_llama_shape s;
    s.n_head = 7;
    CHECK_FALSE(write_synthetic_llama(path, s, tensor_type::f32, 1).ok());
}
