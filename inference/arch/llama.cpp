// Llama-family architecture: hyper-parameters, tensor binding and the batched
// forward pass over the shared blocks (blocks.h).
#include "inference/arch/llama.h"

#include <cmath>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "inference/arch/blocks.h"
#include "inference/gguf/quant.h"
#include "inference/kernels/batch_attention.h"
#include "inference/kernels/kernels.h"

namespace tachyon::arch {
namespace {

struct layer_weights {
    const float* attn_norm;  // [n_embd]
    attention_weights attn;
    const float* ffn_norm;   // [n_embd]
    ffn_weights ffn;
};

class llama_model final : public model {
public:
    void forward(kernel_context& ctx, const forward_batch& batch, kv_cache& kv, float* logits) override;

    status bind(std::unique_ptr<gguf_file> file);

private:
    result<weight_ref> matrix(const std::string& name, int64_t n_rows, int64_t n_cols, bool optional = false) {
        return bind_matrix(*file_, name, n_rows, n_cols, optional);
    }
    result<const float*> vector(const std::string& name, int64_t n, bool optional = false) {
        return bind_vector(*file_, name, n, owned_, optional);
    }
    void layer(kernel_context& ctx, activations& A, const forward_batch& batch, kv_cache& kv, int il);
    void pack_small_model();

    // Float weights up to this size in all are packed as panels.
    static constexpr size_t max_packed_bytes = size_t{16} << 20;

    weight_ref tok_embd_;                    // [n_vocab, n_embd]
    std::vector<layer_weights> layers_;      // [n_layer]
    const float* output_norm_ = nullptr;     // [n_embd]
    weight_ref output_;                      // [n_vocab, n_embd] (token_embd when tied)
    std::vector<std::vector<float>> owned_;  // norms/biases converted to f32 when stored otherwise
    std::vector<weight_panels> panels_;      // owners of the weight_ref::panels
    std::optional<batch_attention> attention_;  // made once the shape is known (bind)
    activation_pool pool_;
};

status llama_model::bind(std::unique_ptr<gguf_file> file) {
    file_ = std::move(file);
    model_hparams& hp = hparams_;
    hp.arch = *file_->get_string("general.architecture");
    if (auto name = file_->get_string("general.name")) hp.name = *name;
    const std::string a = hp.arch + ".";
    auto need_uint = [&](const std::string& key, int& out) -> status {
        auto v = file_->get_uint(key);
        if (!v) return v.err();
        if (*v == 0 || *v > (1u << 24))
            return make_error(errc::out_of_range, file_->path() + ": " + key + ": " + std::to_string(*v) + " (expected an integer in [1, 16777216])");
        out = static_cast<int>(*v);
        return {};
    };
    TACHYON_TRY(need_uint(a + "embedding_length", hp.n_embd));
    TACHYON_TRY(need_uint(a + "block_count", hp.n_layer));
    TACHYON_TRY(need_uint(a + "attention.head_count", hp.n_head));
    TACHYON_TRY(need_uint(a + "feed_forward_length", hp.n_ff));
    hp.n_head_kv = hp.n_head;
    if (file_->find(a + "attention.head_count_kv")) TACHYON_TRY(need_uint(a + "attention.head_count_kv", hp.n_head_kv));
    hp.n_ctx_train = 2048;
    if (file_->find(a + "context_length")) TACHYON_TRY(need_uint(a + "context_length", hp.n_ctx_train));
    if (hp.n_embd % hp.n_head != 0 || hp.n_head % hp.n_head_kv != 0) {
        return make_error(errc::parse_error, file_->path() + ": head counts (" + std::to_string(hp.n_head) + ", kv " +
                                                 std::to_string(hp.n_head_kv) + ") do not divide embedding_length " + std::to_string(hp.n_embd));
    }
    hp.head_dim = hp.n_embd / hp.n_head;
    if (file_->find(a + "attention.key_length")) TACHYON_TRY(need_uint(a + "attention.key_length", hp.head_dim));
    hp.n_rot = hp.head_dim;
    if (file_->find(a + "rope.dimension_count")) TACHYON_TRY(need_uint(a + "rope.dimension_count", hp.n_rot));
    if (hp.n_rot != hp.head_dim || hp.head_dim % 2 != 0) {
        return make_error(errc::unsupported, file_->path() + ": rope.dimension_count " + std::to_string(hp.n_rot) +
                                                 " with head_dim " + std::to_string(hp.head_dim) + " (expected an even head_dim, fully rotated)");
    }
    // A NaN, zero or infinite epsilon or rope base loads fine and generates
    // garbage: each float read here must be finite and > 0 (also as a float,
    // since the forward pass computes in f32), and a value of the wrong type
    // is an error rather than a silent default.
    auto positive_float = [&](const std::string& key, float& out) -> status {
        if (!file_->find(key)) return {};
        auto v = file_->get_float(key);
        if (!v) return v.err();
        const float f = static_cast<float>(*v);
        if (!std::isfinite(*v) || !std::isfinite(f) || !(f > 0.0f)) {
            std::ostringstream os;
            os << file_->path() << ": " << key << ": " << *v << " (expected a finite number > 0)";
            return make_error(errc::out_of_range, os.str());
        }
        out = f;
        return {};
    };
    TACHYON_TRY(positive_float(a + "attention.layer_norm_rms_epsilon", hp.rms_eps));
    TACHYON_TRY(positive_float(a + "rope.freq_base", hp.rope_base));
    // Not read by the llama forward pass, but a file that carries them broken is broken.
    for (const char* key : {"attention.layer_norm_epsilon", "rope.scaling.factor", "rope.freq_scale"}) {
        float unused = 0.0f;
        TACHYON_TRY(positive_float(a + key, unused));
    }
    hp.rope = hp.arch == "qwen2" ? rope_mode::neox : rope_mode::normal;

    const gguf_tensor_info* embd = file_->find_tensor("token_embd.weight");
    if (embd == nullptr) return make_error(errc::not_found, file_->path() + ": missing tensor 'token_embd.weight'");
    if (embd->shape.size() != 2) return make_error(errc::parse_error, file_->path() + ": tensor 'token_embd.weight' should be 2-D");
    hp.n_vocab = static_cast<int>(embd->shape[1]);
    if (!can_dequantize(embd->type)) {
        return make_error(errc::unsupported, file_->path() + ": tensor 'token_embd.weight' has unsupported type " + std::string(to_string(embd->type)));
    }
    auto tok = matrix("token_embd.weight", hp.n_vocab, hp.n_embd);
    if (!tok) return tok.err();
    tok_embd_ = *tok;

    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv(), n_ff = hp.n_ff;
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int il = 0; il < hp.n_layer; ++il) {
        layer_weights& L = layers_[static_cast<size_t>(il)];
        const std::string p = "blk." + std::to_string(il) + ".";
#define TACHYON_BIND(field, expr)          \
    do {                                   \
        auto r_ = (expr);                  \
        if (!r_) return r_.err();          \
        L.field = *r_;                     \
    } while (false)
        TACHYON_BIND(attn_norm, vector(p + "attn_norm.weight", n_embd));
        TACHYON_BIND(attn.wq, matrix(p + "attn_q.weight", n_q, n_embd));
        TACHYON_BIND(attn.wk, matrix(p + "attn_k.weight", n_kv, n_embd));
        TACHYON_BIND(attn.wv, matrix(p + "attn_v.weight", n_kv, n_embd));
        TACHYON_BIND(attn.wo, matrix(p + "attn_output.weight", n_embd, n_q));
        TACHYON_BIND(attn.bq, vector(p + "attn_q.bias", n_q, true));
        TACHYON_BIND(attn.bk, vector(p + "attn_k.bias", n_kv, true));
        TACHYON_BIND(attn.bv, vector(p + "attn_v.bias", n_kv, true));
        TACHYON_BIND(ffn_norm, vector(p + "ffn_norm.weight", n_embd));
        TACHYON_BIND(ffn.gate, matrix(p + "ffn_gate.weight", n_ff, n_embd));
        TACHYON_BIND(ffn.up, matrix(p + "ffn_up.weight", n_ff, n_embd));
        TACHYON_BIND(ffn.down, matrix(p + "ffn_down.weight", n_embd, n_ff));
#undef TACHYON_BIND
        hp.qkv_bias = hp.qkv_bias || L.attn.bq != nullptr;
    }
    auto norm = vector("output_norm.weight", n_embd);
    if (!norm) return norm.err();
    output_norm_ = *norm;
    auto out = matrix("output.weight", hp.n_vocab, n_embd, /*optional=*/true);
    if (!out) return out.err();
    output_ = out->data != nullptr ? *out : tok_embd_;
    if (output_.data == tok_embd_.data && !has_kernels(tok_embd_.type)) {
        return make_error(errc::unsupported, file_->path() + ": tied output uses token_embd.weight of type " +
                                                 std::string(to_string(tok_embd_.type)) + ", which tachyon cannot multiply");
    }
    pack_small_model();
    attention_.emplace(attention_shape{hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim});
    return {};
}

// Float models small enough that their weights stay in cache get their
// matrices packed as panels too (kernels.h): decode of several sequences
// and the verification of drafts then multiply without transposes or
// horizontal sums. Larger models stream their weights from memory, where a
// second copy would only add to what is read and held.
void llama_model::pack_small_model() {
    std::vector<weight_ref*> all;
    for (auto& L : layers_)
        for (weight_ref* w : {&L.attn.wq, &L.attn.wk, &L.attn.wv, &L.attn.wo, &L.ffn.gate, &L.ffn.up, &L.ffn.down}) all.push_back(w);
    all.push_back(&output_);
    size_t total = 0;
    for (const weight_ref* w : all) {
        if (!panels_pay(w->type, w->n_rows, w->n_cols)) continue;
        total += w->bytes();
    }
    if (total == 0 || total > max_packed_bytes) return;
    for (weight_ref* w : all) {
        auto p = pack_panels(w->type, w->data, w->n_rows, w->n_cols);
        if (p.data == nullptr) continue;
        w->panels = p.data;
        panels_.push_back(std::move(p));
    }
}

// One transformer block: norm → attention → residual → norm → SwiGLU → residual.
void llama_model::layer(kernel_context& ctx, activations& A, const forward_batch& batch, kv_cache& kv, int il) {
    const model_hparams& hp = hparams_;
    const layer_weights& L = layers_[static_cast<size_t>(il)];
    const int64_t n = static_cast<int64_t>(batch.size());
    const kernel_isa isa = ctx.isa();

    rms_norm(A.h.data(), A.x.data(), L.attn_norm, n, hp.n_embd, hp.rms_eps, isa);
    self_attention(ctx, L.attn, hp, batch, *attention_, kv, il, A.h.data(), A.rope.data(),
                   {A.q.data(), A.k.data(), A.v.data(), A.att.data()}, A.tmp.data());
    residual_add(A.x.data(), A.tmp.data(), n * hp.n_embd, isa);

    rms_norm(A.h.data(), A.x.data(), L.ffn_norm, n, hp.n_embd, hp.rms_eps, isa);
    swiglu_ffn(ctx, L.ffn, A.h.data(), n, A.gate.data(), A.up.data(), A.tmp.data());
    residual_add(A.x.data(), A.tmp.data(), n * hp.n_embd, isa);
}

void llama_model::forward(kernel_context& ctx, const forward_batch& batch, kv_cache& kv, float* logits) {
    const model_hparams& hp = hparams_;
    TACHYON_ASSERT(batch.size() > 0, "forward of an empty batch");
    const activation_pool::lease set = pool_.take(hp, batch.size());
    activations& A = *set;

    embed_tokens(tok_embd_, batch.tokens, A.x.data());
    rope_table(A.rope.data(), static_cast<int64_t>(batch.size()), hp.head_dim, batch.positions.data(), hp.rope_base);
    for (int il = 0; il < hp.n_layer; ++il) layer(ctx, A, batch, kv, il);
    // Final norm and output projection only for the rows that want logits.
    output_logits(ctx, batch, A.x.data(), output_norm_, hp.rms_eps, output_, A.out_h.data(), logits);
}

}  // namespace

result<std::unique_ptr<model>> load_llama(std::unique_ptr<gguf_file> file) {
    auto m = std::make_unique<llama_model>();
    TACHYON_TRY(m->bind(std::move(file)));
    return std::unique_ptr<model>(std::move(m));
}

}  // namespace tachyon::arch
