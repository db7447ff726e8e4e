#include "inference/arch/families.h"

#include <array>
#include <cmath>
#include <numbers>
#include <sstream>
#include <utility>

namespace tachyon::arch {
namespace {

arch_traits traits_of_family(std::string_view arch) {
    arch_traits t;
    if (arch == "qwen2") {
        t.rope = rope_mode::neox;
    } else if (arch == "qwen3") {
        t.rope = rope_mode::neox;
        t.qk_norm = true;
    } else if (arch == "smollm3") {
        t.no_rope_every = 4;  // hard-coded in the model, no key
    } else if (arch == "phi3") {
        t.rope = rope_mode::neox;
        t.fused_qkv = true;
        t.fused_gate_up = true;
    } else if (arch == "gemma2" || arch == "gemma3") {
        t.rope = rope_mode::neox;
        t.post_norms = true;
        t.act = ffn_activation::gelu_tanh;
        t.embd_scale_sqrt = true;
        t.tied_only = true;
        t.qk_norm = arch == "gemma3";
        t.swa_pattern = arch == "gemma2" ? 2 : 6;  // no key: gemma2 alternates, gemma3 has 5 local layers per global one
        t.swa_own_rope = arch == "gemma3";
    }
    return t;  // llama, mistral, granite, mistral3: the llama block
}

// In the order family_names() lists them.
constexpr std::array<std::string_view, 10> families = {"llama", "mistral", "mistral3", "qwen2", "qwen3", "granite",
                                                       "smollm3", "phi3",  "gemma2",   "gemma3"};

}  // namespace

const arch_traits* find_family(std::string_view arch) {
    static const auto table = [] {
        std::array<std::pair<std::string_view, arch_traits>, families.size()> t;
        for (size_t i = 0; i < families.size(); ++i) t[i] = {families[i], traits_of_family(families[i])};
        return t;
    }();
    for (const auto& [name, traits] : table)
        if (name == arch) return &traits;
    return nullptr;
}

std::string family_names() {
    std::string s;
    for (std::string_view f : families) s += (s.empty() ? "" : ", ") + std::string(f);
    return s;
}

void llama3_freq_factors(float* out, int n_rot, float base, float factor, int n_ctx_orig, float low_freq_factor,
                         float high_freq_factor) {
    const double low_wavelen = n_ctx_orig / static_cast<double>(low_freq_factor);
    const double high_wavelen = n_ctx_orig / static_cast<double>(high_freq_factor);
    for (int j = 0; j < n_rot / 2; ++j) {
        const double freq = std::pow(static_cast<double>(base), -2.0 * j / n_rot);
        const double wavelen = 2.0 * std::numbers::pi / freq;
        double f = 1.0;
        if (wavelen > low_wavelen) {
            f = factor;
        } else if (wavelen >= high_wavelen) {
            const double smooth = (n_ctx_orig / wavelen - low_freq_factor) / (static_cast<double>(high_freq_factor) - low_freq_factor);
            f = 1.0 / ((1.0 - smooth) / factor + smooth);
        }
        out[j] = static_cast<float>(f);
    }
}

status read_hparams(const gguf_file& file, model_hparams& hp) {
    const std::string a = hp.arch + ".";
    const arch_traits& tr = hp.traits;
    auto need_uint = [&](const std::string& key, int& out) -> status {
        auto v = file.get_uint(key);
        if (!v) return v.err();
        if (*v == 0 || *v > (1u << 24))
            return make_error(errc::out_of_range, file.path() + ": " + key + ": " + std::to_string(*v) + " (expected an integer in [1, 16777216])");
        out = static_cast<int>(*v);
        return {};
    };
    auto opt_uint = [&](const std::string& key, int& out) -> status {
        return file.find(key) ? need_uint(key, out) : status{};
    };
    TACHYON_TRY(need_uint(a + "embedding_length", hp.n_embd));
    TACHYON_TRY(need_uint(a + "block_count", hp.n_layer));
    TACHYON_TRY(need_uint(a + "attention.head_count", hp.n_head));
    TACHYON_TRY(need_uint(a + "feed_forward_length", hp.n_ff));
    hp.n_head_kv = hp.n_head;
    TACHYON_TRY(opt_uint(a + "attention.head_count_kv", hp.n_head_kv));
    hp.n_ctx_train = 2048;
    TACHYON_TRY(opt_uint(a + "context_length", hp.n_ctx_train));
    if (hp.n_head % hp.n_head_kv != 0) {
        return make_error(errc::parse_error, file.path() + ": head counts (" + std::to_string(hp.n_head) + ", kv " +
                                                 std::to_string(hp.n_head_kv) + ") do not divide embedding_length " + std::to_string(hp.n_embd));
    }
    const bool has_key_length = file.find(a + "attention.key_length") != nullptr;
    if (!has_key_length && hp.n_embd % hp.n_head != 0) {
        return make_error(errc::parse_error, file.path() + ": head counts (" + std::to_string(hp.n_head) + ", kv " +
                                                 std::to_string(hp.n_head_kv) + ") do not divide embedding_length " + std::to_string(hp.n_embd));
    }
    hp.head_dim = hp.n_embd / hp.n_head;
    TACHYON_TRY(opt_uint(a + "attention.key_length", hp.head_dim));
    int value_length = hp.head_dim;
    TACHYON_TRY(opt_uint(a + "attention.value_length", value_length));
    if (value_length != hp.head_dim) {
        return make_error(errc::unsupported, file.path() + ": " + a + "attention.value_length " + std::to_string(value_length) +
                                                 " differs from attention.key_length " + std::to_string(hp.head_dim) + " (expected them equal)");
    }
    hp.n_rot = hp.head_dim;
    TACHYON_TRY(opt_uint(a + "rope.dimension_count", hp.n_rot));
    if (hp.head_dim % 2 != 0 || hp.n_rot % 2 != 0 || hp.n_rot > hp.head_dim) {
        return make_error(errc::unsupported, file.path() + ": rope.dimension_count " + std::to_string(hp.n_rot) + " with head_dim " +
                                                 std::to_string(hp.head_dim) + " (expected an even head_dim and an even count up to it)");
    }
    // A NaN, zero or infinite epsilon, base or scale loads fine and
    // generates garbage: each float read here must be finite and > 0 (also
    // as a float, since the forward pass computes in f32), and a value of
    // the wrong type is an error rather than a silent default.
    auto positive_float = [&](const std::string& key, float& out) -> status {
        if (!file.find(key)) return {};
        auto v = file.get_float(key);
        if (!v) return v.err();
        const float f = static_cast<float>(*v);
        if (!std::isfinite(*v) || !std::isfinite(f) || !(f > 0.0f)) {
            std::ostringstream os;
            os << file.path() << ": " << key << ": " << *v << " (expected a finite number > 0)";
            return make_error(errc::out_of_range, os.str());
        }
        out = f;
        return {};
    };
    TACHYON_TRY(positive_float(a + "attention.layer_norm_rms_epsilon", hp.rms_eps));
    TACHYON_TRY(positive_float(a + "rope.freq_base", hp.rope_base));
    hp.rope_base_swa = hp.rope_base;
    TACHYON_TRY(positive_float(a + "rope.freq_base_swa", hp.rope_base_swa));
    // Not read by the forward pass, but a file that carries them broken is broken.
    for (const char* key : {"attention.layer_norm_epsilon", "rope.freq_scale"}) {
        float unused = 0.0f;
        TACHYON_TRY(positive_float(a + key, unused));
    }
    hp.rope = tr.rope;

    // RoPE scaling. A factor without a type is linear scaling.
    float factor = 1.0f;
    TACHYON_TRY(positive_float(a + "rope.scaling.factor", factor));
    const std::string type_key = a + "rope.scaling.type";
    if (file.find(type_key)) {
        auto type = file.get_string(type_key);
        if (!type) return type.err();
        if (*type == "none") hp.rope_scaling_type = rope_scaling::none;
        else if (*type == "linear") hp.rope_scaling_type = rope_scaling::linear;
        else if (*type == "yarn") hp.rope_scaling_type = rope_scaling::yarn;
        else if (*type == "llama3") hp.rope_scaling_type = rope_scaling::llama3;
        else
            return make_error(errc::unsupported, file.path() + ": " + type_key + " '" + *type + "' (expected none, linear, yarn or llama3)");
    } else if (factor != 1.0f) {
        hp.rope_scaling_type = rope_scaling::linear;
    }
    if (hp.rope_scaling_type == rope_scaling::linear || hp.rope_scaling_type == rope_scaling::yarn) hp.rope_freq_scale = 1.0f / factor;
    hp.n_ctx_orig = hp.n_ctx_train;
    TACHYON_TRY(opt_uint(a + "rope.scaling.original_context_length", hp.n_ctx_orig));
    TACHYON_TRY(positive_float(a + "rope.scaling.yarn_beta_fast", hp.yarn_beta_fast));
    TACHYON_TRY(positive_float(a + "rope.scaling.yarn_beta_slow", hp.yarn_beta_slow));
    float attn_factor = 1.0f;
    TACHYON_TRY(positive_float(a + "rope.scaling.attn_factor", attn_factor));
    float yarn_log_mul = 0.0f;
    TACHYON_TRY(positive_float(a + "rope.scaling.yarn_log_multiplier", yarn_log_mul));
    hp.rope_mscale = attn_factor;
    // YaRN grows cos and sin by 1 + 0.1 ln(factor); models that give a
    // yarn_log_multiplier (Ministral 3) fold that into their own scale,
    // which cancels it.
    if (hp.rope_scaling_type == rope_scaling::yarn && yarn_log_mul == 0.0f)
        hp.rope_mscale = attn_factor * (1.0f + 0.1f * std::log(1.0f / hp.rope_freq_scale));

    // Scales and caps.
    TACHYON_TRY(positive_float(a + "embedding_scale", hp.embedding_scale));
    if (tr.embd_scale_sqrt) hp.embedding_scale = std::sqrt(static_cast<float>(hp.n_embd));
    TACHYON_TRY(positive_float(a + "attention.scale", hp.attention_scale));
    TACHYON_TRY(positive_float(a + "residual_scale", hp.residual_scale));
    TACHYON_TRY(positive_float(a + "logit_scale", hp.logit_scale));
    if (hp.arch == "gemma2") {
        TACHYON_TRY(positive_float(a + "attn_logit_softcapping", hp.attn_softcap));
        TACHYON_TRY(positive_float(a + "final_logit_softcapping", hp.final_softcap));
    }
    if (tr.swa_pattern > 0) TACHYON_TRY(need_uint(a + "attention.sliding_window", hp.sliding_window));
    float temp_scale = 0.0f;
    TACHYON_TRY(positive_float(a + "attention.temperature_scale", temp_scale));
    hp.attn_temp_scale = temp_scale;
    hp.attn_temp_length = hp.n_ctx_orig;
    TACHYON_TRY(opt_uint(a + "attention.temperature_length", hp.attn_temp_length));
    return {};
}

}  // namespace tachyon::arch
