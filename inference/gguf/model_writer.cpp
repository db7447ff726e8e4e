#include "inference/gguf/model_writer.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "inference/gguf/gguf.h"
#include "inference/gguf/quant.h"

namespace tachyon {
namespace {

bool quantizable_target(tensor_type t) {
    return t == tensor_type::f32 || t == tensor_type::f16 || t == tensor_type::bf16 || t == tensor_type::q8_0 ||
           t == tensor_type::q4_0;
}

// Converts rows of f32 into `type`: [n_rows, n_cols] → bytes.
std::vector<std::byte> encode_rows(const float* src, int64_t n_rows, int64_t n_cols, tensor_type type) {
    const size_t row = row_size(type, n_cols);
    std::vector<std::byte> out(row * static_cast<size_t>(n_rows));
    for (int64_t r = 0; r < n_rows; ++r) quantize_row(type, src + r * n_cols, out.data() + row * static_cast<size_t>(r), n_cols);
    return out;
}

std::vector<std::byte> f32_bytes(const std::vector<float>& v) {
    std::vector<std::byte> out(v.size() * sizeof(float));
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

}  // namespace

status requantize_model(const std::string& in, const std::string& out, tensor_type type) {
    if (!quantizable_target(type)) {
        return make_error(errc::unsupported, "requantize: target type " + std::string(to_string(type)) +
                                                 " is not one of f32, f16, bf16, q8_0, q4_0");
    }
    auto file = gguf_file::open(in);
    if (!file) return file.err();
    gguf_writer w;
    for (const auto& [key, value] : (*file)->metadata()) {
        if (key == "general.alignment") continue;  // the writer sets its own
        w.set_value(key, value);
    }
    const uint32_t block = traits_of(type).block_size;
    for (const gguf_tensor_info& t : (*file)->tensors()) {
        const int64_t n = t.n_elements();
        const bool matrix = t.shape.size() == 2 && t.shape[0] % block == 0;
        if (!can_dequantize(t.type) || (!matrix && t.type == tensor_type::f32)) {
            std::vector<std::byte> raw(t.data, t.data + t.n_bytes);
            w.add_tensor(t.name, t.shape, t.type, std::move(raw));
            continue;
        }
        std::vector<float> values(static_cast<size_t>(n));
        const int64_t n_cols = t.shape[0];
        const int64_t n_rows = n / n_cols;
        const size_t src_row = row_size(t.type, n_cols);
        for (int64_t r = 0; r < n_rows; ++r) dequantize_row(t.type, t.data + src_row * static_cast<size_t>(r), &values[static_cast<size_t>(r * n_cols)], n_cols);
        if (matrix) {
            w.add_tensor(t.name, t.shape, type, encode_rows(values.data(), n_rows, n_cols, type));
        } else {
            w.add_tensor(t.name, t.shape, tensor_type::f32, f32_bytes(values));
        }
    }
    return w.write(out);
}

status write_synthetic_llama(const std::string& path, const synthetic_llama_shape& shape, tensor_type type, uint64_t seed) {
    synthetic_llama_shape s = shape;
    std::vector<std::pair<std::string, gguf_value>> vocab_keys;
    if (!s.vocab_from.empty()) {
        auto file = gguf_file::open(s.vocab_from);
        if (!file) return file.err();
        for (const auto& [key, value] : (*file)->metadata())
            if (key.rfind("tokenizer.", 0) == 0) vocab_keys.emplace_back(key, value);
        auto tokens = (*file)->get_string_array("tokenizer.ggml.tokens");
        if (!tokens || tokens->empty())
            return make_error(errc::invalid_argument, s.vocab_from + ": expected a tokenizer (tokenizer.ggml.tokens) to copy");
        s.n_vocab = static_cast<int>(tokens->size());
    }
    if (!quantizable_target(type)) {
        return make_error(errc::unsupported, "synthetic model: type " + std::string(to_string(type)) + " is not one of f32, f16, bf16, q8_0, q4_0");
    }
    if (s.arch != "llama" && s.arch != "qwen2" && s.arch != "qwen3") {
        return make_error(errc::unsupported, "synthetic model: architecture '" + s.arch + "' (expected llama, qwen2 or qwen3)");
    }
    if (s.n_embd % s.n_head != 0 || s.n_head % s.n_head_kv != 0 || s.n_embd % 32 != 0 || s.n_ff % 32 != 0) {
        return make_error(errc::invalid_argument, "synthetic model: n_embd must divide by n_head and 32, n_head by n_head_kv, n_ff by 32");
    }
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    auto random_matrix = [&](int64_t n_rows, int64_t n_cols) {
        std::vector<float> v(static_cast<size_t>(n_rows * n_cols));
        for (float& x : v) x = normal(rng);
        return encode_rows(v.data(), n_rows, n_cols, type);
    };
    auto ones = [](int64_t n) { return f32_bytes(std::vector<float>(static_cast<size_t>(n), 1.0f)); };

    const int head_dim = s.n_embd / s.n_head;
    const int64_t n_kv = static_cast<int64_t>(s.n_head_kv) * head_dim;
    auto zeros = [](int64_t n) { return f32_bytes(std::vector<float>(static_cast<size_t>(n), 0.0f)); };
    const std::string a = s.arch + ".";
    gguf_writer w;
    w.set_string("general.architecture", s.arch);
    w.set_string("general.name", "synthetic-" + s.arch);
    w.set_uint32(a + "context_length", static_cast<uint32_t>(s.n_ctx));
    w.set_uint32(a + "embedding_length", static_cast<uint32_t>(s.n_embd));
    w.set_uint32(a + "block_count", static_cast<uint32_t>(s.n_layer));
    w.set_uint32(a + "feed_forward_length", static_cast<uint32_t>(s.n_ff));
    w.set_uint32(a + "attention.head_count", static_cast<uint32_t>(s.n_head));
    w.set_uint32(a + "attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
    w.set_uint32(a + "rope.dimension_count", static_cast<uint32_t>(head_dim));
    w.set_float32(a + "rope.freq_base", 10000.0f);
    w.set_float32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
    if (s.arch == "qwen3") {
        w.set_uint32(a + "attention.key_length", static_cast<uint32_t>(head_dim));
        w.set_uint32(a + "attention.value_length", static_cast<uint32_t>(head_dim));
    }
    w.set_uint32(a + "vocab_size", static_cast<uint32_t>(s.n_vocab));
    // No tokenizer: benchmarks feed token ids. "no_vocab" lets other GGUF engines load it too.
    if (vocab_keys.empty()) w.set_string("tokenizer.ggml.model", "no_vocab");
    for (const auto& [key, value] : vocab_keys)
        if (key != "tokenizer.chat_template" || s.chat_template.empty()) w.set_value(key, value);
    if (!s.chat_template.empty()) w.set_string("tokenizer.chat_template", s.chat_template);
    w.add_tensor("token_embd.weight", {s.n_embd, s.n_vocab}, type, random_matrix(s.n_vocab, s.n_embd));
    for (int il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        w.add_tensor(p + "attn_norm.weight", {s.n_embd}, tensor_type::f32, ones(s.n_embd));
        w.add_tensor(p + "attn_q.weight", {s.n_embd, s.n_embd}, type, random_matrix(s.n_embd, s.n_embd));
        w.add_tensor(p + "attn_k.weight", {s.n_embd, n_kv}, type, random_matrix(n_kv, s.n_embd));
        w.add_tensor(p + "attn_v.weight", {s.n_embd, n_kv}, type, random_matrix(n_kv, s.n_embd));
        if (s.arch == "qwen2") {
            w.add_tensor(p + "attn_q.bias", {s.n_embd}, tensor_type::f32, zeros(s.n_embd));
            w.add_tensor(p + "attn_k.bias", {n_kv}, tensor_type::f32, zeros(n_kv));
            w.add_tensor(p + "attn_v.bias", {n_kv}, tensor_type::f32, zeros(n_kv));
        }
        if (s.arch == "qwen3") {
            w.add_tensor(p + "attn_q_norm.weight", {head_dim}, tensor_type::f32, ones(head_dim));
            w.add_tensor(p + "attn_k_norm.weight", {head_dim}, tensor_type::f32, ones(head_dim));
        }
        w.add_tensor(p + "attn_output.weight", {s.n_embd, s.n_embd}, type, random_matrix(s.n_embd, s.n_embd));
        w.add_tensor(p + "ffn_norm.weight", {s.n_embd}, tensor_type::f32, ones(s.n_embd));
        w.add_tensor(p + "ffn_gate.weight", {s.n_embd, s.n_ff}, type, random_matrix(s.n_ff, s.n_embd));
        w.add_tensor(p + "ffn_up.weight", {s.n_embd, s.n_ff}, type, random_matrix(s.n_ff, s.n_embd));
        w.add_tensor(p + "ffn_down.weight", {s.n_ff, s.n_embd}, type, random_matrix(s.n_embd, s.n_ff));
    }
    w.add_tensor("output_norm.weight", {s.n_embd}, tensor_type::f32, ones(s.n_embd));
    if (!s.tied_output) w.add_tensor("output.weight", {s.n_embd, s.n_vocab}, type, random_matrix(s.n_vocab, s.n_embd));
    return w.write(path);
}

}  // namespace tachyon
