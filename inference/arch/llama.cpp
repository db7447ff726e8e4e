// The decoder of every family in families.h: hyper-parameters from the
// family's keys, tensor binding, and the batched forward pass over the
// shared blocks (blocks.h). The llama block is the plain case; each
// family's additions (fused projections, Q/K norms, post-norms, GeGLU,
// scales, caps, sliding windows, NoPE layers, RoPE variants) are branches
// per layer or per call, outside the kernels' inner loops.
#include "inference/arch/llama.h"

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>

#include "inference/arch/blocks.h"
#include "inference/arch/families.h"
#include "inference/gguf/quant.h"
#include "inference/kernels/batch_attention.h"
#include "inference/kernels/kernels.h"

namespace tachyon::arch {
namespace {

struct layer_weights {
    const float* attn_norm;  // [n_embd]
    attention_weights attn;
    const float* post_attn_norm = nullptr;  // [n_embd] or nullptr (gemma)
    const float* ffn_norm;   // [n_embd]
    ffn_weights ffn;
    const float* post_ffn_norm = nullptr;   // [n_embd] or nullptr (gemma)
};

class decoder_model final : public model {
public:
    void forward(kernel_context& ctx, const forward_batch& batch, kv_cache& kv, float* logits) override;
    std::vector<std::span<const std::byte>> decode_reads() const override;

    status bind(std::unique_ptr<gguf_file> file, const arch_traits& traits, const load_options& options);

private:
    result<weight_ref> matrix(const std::string& name, int64_t n_rows, int64_t n_cols, bool optional = false) {
        used_.insert(name);
        return bind_matrix(*file_, name, n_rows, n_cols, optional);
    }
    result<const float*> vector(const std::string& name, int64_t n, bool optional = false) {
        used_.insert(name);
        return bind_vector(*file_, name, n, owned_, optional);
    }
    status bind_rope(const load_options& options);
    status check_all_used() const;
    void dequantize_all();
    void layer(kernel_context& ctx, activations& A, const forward_batch& batch, kv_cache& kv, int il);
    void pack_weights(bool exact);
    // Every layer's matrices that the file has (not the output or the embeddings).
    std::vector<const weight_ref*> matrices() const;
    std::vector<weight_ref*> matrices();

    // Float weights up to this size in all are packed as panels.
    static constexpr size_t max_packed_bytes = size_t{16} << 20;

    weight_ref tok_embd_;                    // [n_vocab, n_embd]
    bool embd_rows_from_file_ = false;       // its pages released (a packed tied output)
    std::vector<layer_weights> layers_;      // [n_layer]
    const float* output_norm_ = nullptr;     // [n_embd]
    weight_ref output_;                      // [n_vocab, n_embd] (token_embd when tied)
    rope_angles rope_;                       // the angles of every layer (or of the global ones)
    rope_angles rope_swa_;                   // of the sliding-window layers (traits.swa_own_rope)
    std::vector<float> freq_factors_;        // [n_rot / 2] computed llama3 factors, when the file has none
    std::vector<std::vector<float>> owned_;  // norms/biases converted to f32 when stored otherwise; exact matrices
    std::vector<weight_panels> panels_;      // owners of the weight_ref::panels
    std::unordered_set<std::string> used_;   // tensor names the binding looked up
    std::optional<batch_attention> attention_;  // made once the shape is known (bind)
    activation_pool pool_;
};

status decoder_model::bind(std::unique_ptr<gguf_file> file, const arch_traits& traits, const load_options& options) {
    file_ = std::move(file);
    model_hparams& hp = hparams_;
    hp.arch = *file_->get_string("general.architecture");
    hp.traits = traits;
    if (auto name = file_->get_string("general.name")) hp.name = *name;
    TACHYON_TRY(read_hparams(*file_, hp));

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

    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv(), n_ff = hp.n_ff, hd = hp.head_dim;
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
        if (traits.fused_qkv) {
            TACHYON_BIND(attn.wqkv, matrix(p + "attn_qkv.weight", n_q + 2 * n_kv, n_embd));
        } else {
            TACHYON_BIND(attn.wq, matrix(p + "attn_q.weight", n_q, n_embd));
            TACHYON_BIND(attn.wk, matrix(p + "attn_k.weight", n_kv, n_embd));
            TACHYON_BIND(attn.wv, matrix(p + "attn_v.weight", n_kv, n_embd));
            TACHYON_BIND(attn.bq, vector(p + "attn_q.bias", n_q, true));
            TACHYON_BIND(attn.bk, vector(p + "attn_k.bias", n_kv, true));
            TACHYON_BIND(attn.bv, vector(p + "attn_v.bias", n_kv, true));
        }
        TACHYON_BIND(attn.wo, matrix(p + "attn_output.weight", n_embd, n_q));
        if (traits.qk_norm) {
            TACHYON_BIND(attn.q_norm, vector(p + "attn_q_norm.weight", hd));
            TACHYON_BIND(attn.k_norm, vector(p + "attn_k_norm.weight", hd));
        }
        if (traits.post_norms) TACHYON_BIND(post_attn_norm, vector(p + "post_attention_norm.weight", n_embd));
        TACHYON_BIND(ffn_norm, vector(p + "ffn_norm.weight", n_embd));
        if (traits.fused_gate_up) {
            TACHYON_BIND(ffn.up, matrix(p + "ffn_up.weight", 2 * n_ff, n_embd));
        } else {
            TACHYON_BIND(ffn.gate, matrix(p + "ffn_gate.weight", n_ff, n_embd));
            TACHYON_BIND(ffn.up, matrix(p + "ffn_up.weight", n_ff, n_embd));
        }
        TACHYON_BIND(ffn.down, matrix(p + "ffn_down.weight", n_embd, n_ff));
        if (traits.post_norms) TACHYON_BIND(post_ffn_norm, vector(p + "post_ffw_norm.weight", n_embd));
#undef TACHYON_BIND
        hp.qkv_bias = hp.qkv_bias || L.attn.bq != nullptr;
    }
    auto norm = vector("output_norm.weight", n_embd);
    if (!norm) return norm.err();
    output_norm_ = *norm;
    output_ = tok_embd_;
    if (!traits.tied_only) {
        auto out = matrix("output.weight", hp.n_vocab, n_embd, /*optional=*/true);
        if (!out) return out.err();
        if (out->data != nullptr) output_ = *out;
    }
    if (output_.data == tok_embd_.data && !has_kernels(tok_embd_.type)) {
        return make_error(errc::unsupported, file_->path() + ": tied output uses token_embd.weight of type " +
                                                 std::string(to_string(tok_embd_.type)) + ", which tachyon cannot multiply");
    }
    TACHYON_TRY(bind_rope(options));
    TACHYON_TRY(check_all_used());
    if (options.exact) dequantize_all();
    pack_weights(options.exact);
    attention_shape shape{hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim};
    shape.scale = hp.attention_scale;
    shape.softcap = hp.attn_softcap;
    shape.exact = options.exact;
    attention_.emplace(shape);
    return {};
}

// The angles of the layers: base, linear or YaRN scaling, frequency factors
// (rope_freqs, or phi3's LongRoPE pair chosen by the context the caller
// runs), magnitude.
status decoder_model::bind_rope(const load_options& options) {
    const model_hparams& hp = hparams_;
    const int64_t n_pairs = hp.n_rot / 2;
    rope_.n_rot = hp.n_rot;
    rope_.base = hp.rope_base;
    rope_.freq_scale = hp.rope_freq_scale;
    rope_.mscale = hp.rope_mscale;
    if (hp.rope_scaling_type == rope_scaling::yarn) {
        rope_.ext_factor = 1.0f;
        rope_yarn_corr_dims(hp.n_rot, hp.n_ctx_orig, hp.rope_base, hp.yarn_beta_fast, hp.yarn_beta_slow, rope_.corr_low, rope_.corr_high);
    }
    auto freqs = vector("rope_freqs.weight", n_pairs, true);
    if (!freqs) return freqs.err();
    rope_.freq_factors = *freqs;
    if (rope_.freq_factors == nullptr && hp.rope_scaling_type == rope_scaling::llama3) {
        // The factors Llama 3's converter would have written (its low/high
        // frequency factors 1 and 4 unless the file says otherwise).
        const std::string a = hp.arch + ".rope.scaling.";
        float low = 1.0f, high = 4.0f;
        if (auto v = file_->get_float(a + "low_freq_factor")) low = static_cast<float>(*v);
        if (auto v = file_->get_float(a + "high_freq_factor")) high = static_cast<float>(*v);
        if (!(low > 0.0f && high > low)) {
            return make_error(errc::out_of_range, file_->path() + ": " + a + "low_freq_factor / high_freq_factor (expected 0 < low < high)");
        }
        auto factor = file_->get_float(a + "factor");
        if (!factor) return factor.err();
        freq_factors_.resize(static_cast<size_t>(n_pairs));
        llama3_freq_factors(freq_factors_.data(), hp.n_rot, hp.rope_base, static_cast<float>(*factor), hp.n_ctx_orig, low, high);
        rope_.freq_factors = freq_factors_.data();
    }
    auto f_long = vector("rope_factors_long.weight", n_pairs, true);
    if (!f_long) return f_long.err();
    auto f_short = vector("rope_factors_short.weight", n_pairs, true);
    if (!f_short) return f_short.err();
    if ((*f_long == nullptr) != (*f_short == nullptr)) {
        return make_error(errc::not_found, file_->path() + ": rope_factors_long.weight and rope_factors_short.weight come as a pair (one is missing)");
    }
    if (*f_long != nullptr) {
        if (rope_.freq_factors != nullptr) {
            return make_error(errc::parse_error, file_->path() + ": both rope_freqs.weight and rope_factors_long/short.weight (expected one kind of factors)");
        }
        const int n_ctx = options.n_ctx > 0 ? options.n_ctx : hp.n_ctx_train;
        hparams_.rope_factors_long = n_ctx > hp.n_ctx_orig;
        rope_.freq_factors = hp.rope_factors_long ? *f_long : *f_short;
    }
    // Sliding-window layers of gemma3 rotate with their own base, unscaled.
    rope_swa_ = rope_;
    if (hp.traits.swa_own_rope) {
        rope_swa_.base = hp.rope_base_swa;
        rope_swa_.freq_scale = 1.0f;
        rope_swa_.freq_factors = nullptr;
        rope_swa_.ext_factor = 0.0f;
        rope_swa_.mscale = 1.0f;
    }
    return {};
}

// A tensor the binding never looked up would be silently ignored: the
// model would compute something other than what the file describes.
status decoder_model::check_all_used() const {
    for (const gguf_tensor_info& t : file_->tensors()) {
        if (used_.count(t.name) == 0) {
            return make_error(errc::unsupported, file_->path() + ": tensor '" + t.name + "' is not used by architecture '" +
                                                     hparams_.arch + "' (tachyon would ignore it)");
        }
    }
    return {};
}

std::vector<const weight_ref*> decoder_model::matrices() const {
    std::vector<const weight_ref*> all;
    for (const auto& L : layers_)
        for (const weight_ref* w : {&L.attn.wq, &L.attn.wk, &L.attn.wv, &L.attn.wqkv, &L.attn.wo, &L.ffn.gate, &L.ffn.up, &L.ffn.down})
            if (w->data != nullptr) all.push_back(w);
    return all;
}

std::vector<weight_ref*> decoder_model::matrices() {
    std::vector<weight_ref*> all;
    for (const weight_ref* w : std::as_const(*this).matrices()) all.push_back(const_cast<weight_ref*>(w));  // this model's own
    return all;
}

std::vector<std::span<const std::byte>> decoder_model::decode_reads() const {
    std::vector<const weight_ref*> all = matrices();
    if (output_.data != nullptr) all.push_back(&output_);
    std::vector<std::span<const std::byte>> out;
    for (const weight_ref* w : all) {
        if (w->panels != nullptr) out.emplace_back(w->panels, panels_bytes(w->type, w->n_rows, w->n_cols));
        else out.emplace_back(static_cast<const std::byte*>(w->data), w->bytes());
    }
    return out;
}

void decoder_model::dequantize_all() {
    const bool tied = output_.data == tok_embd_.data;
    for (weight_ref* w : matrices()) *w = dequantize_matrix(*w, owned_);
    tok_embd_ = dequantize_matrix(tok_embd_, owned_);
    output_ = tied ? tok_embd_ : dequantize_matrix(output_, owned_);
}

// Float models small enough that their weights stay in cache get their
// matrices packed as panels too (kernels.h): decode of several sequences
// and the verification of drafts then multiply without transposes or
// horizontal sums. Larger float models are packed only where the kernels
// then read nothing else (the AVX-512 level below AMX): elsewhere a second
// copy would only add to what is read and held. q2_K to q6_K and
// iq4_xs matrices are packed at every size (AVX2 and up), q4_0, iq4_nl,
// q5_0 and q8_0 at the AVX-512 level, and the kernels read nothing else
// (panels_replace_weights), so the mapping's pages of them then go and the
// model holds one copy. A tied output's token_embd.weight goes too: its
// lookups then read their rows from the file (embed_tokens), which maps
// none of it.
void decoder_model::pack_weights(bool exact) {
    std::vector<weight_ref*> all = matrices();
    all.push_back(&output_);
    // exact matrices are f32 copies of the model's own: packing them would add a third
    const auto replaced = [&](const weight_ref* w) { return !exact && panels_replace_weights(w->type, w->n_rows, w->n_cols); };
    size_t float_total = 0;
    for (const weight_ref* w : all) {
        if (packs_quantized(w->type) || replaced(w) || !panels_pay(w->type, w->n_rows, w->n_cols)) continue;
        float_total += w->bytes();
    }
    const bool pack_floats = float_total > 0 && float_total <= max_packed_bytes;
    // One allocation for all the panels, each at a 64-byte offset: whole
    // huge pages, where one per matrix left most matrices a part-used one.
    std::vector<std::pair<weight_ref*, size_t>> packed;  // matrix, offset
    size_t total = 0;
    for (weight_ref* w : all) {
        if (w->panels != nullptr || (!packs_quantized(w->type) && !replaced(w) && !pack_floats)) continue;
        const size_t bytes = panels_bytes(w->type, w->n_rows, w->n_cols);
        if (bytes == 0) continue;
        packed.emplace_back(w, total);
        total += (bytes + 63) / 64 * 64;
    }
    if (packed.empty()) return;
    weight_panels arena = allocate_weight_panels(total);
    for (auto [w, offset] : packed) {
        std::byte* dst = arena.storage.get() + offset;
        pack_panels_into(w->type, w->data, w->n_rows, w->n_cols, dst);
        w->panels = dst;
        if (!replaced(w)) continue;
        file_->release_pages(w->data, w->bytes());
        if (w->data == tok_embd_.data) embd_rows_from_file_ = true;
    }
    panels_.push_back(std::move(arena));
}

// One transformer block: norm → attention → (post-norm, scale) → residual →
// norm → gated FFN → (post-norm, scale) → residual.
void decoder_model::layer(kernel_context& ctx, activations& A, const forward_batch& batch, kv_cache& kv, int il) {
    const model_hparams& hp = hparams_;
    const layer_weights& L = layers_[static_cast<size_t>(il)];
    const int64_t n = static_cast<int64_t>(batch.size());
    const kernel_isa isa = ctx.isa();
    const int window = hp.layer_window(il);
    attention_layer how{nullptr, window};
    if (hp.layer_rope(il)) how.rope_cs = window > 0 && hp.traits.swa_own_rope ? A.rope_swa.data() : A.rope.data();

    rms_norm(A.h.data(), A.x.data(), L.attn_norm, n, hp.n_embd, hp.rms_eps, isa);
    self_attention(ctx, L.attn, hp, batch, *attention_, kv, il, A.h.data(), how, {A.q.data(), A.k.data(), A.v.data(), A.att.data()},
                   A.fused.data(), A.tmp.data());
    if (L.post_attn_norm) rms_norm(A.tmp.data(), A.tmp.data(), L.post_attn_norm, n, hp.n_embd, hp.rms_eps, isa);
    if (hp.residual_scale != 1.0f) scale(A.tmp.data(), n * hp.n_embd, hp.residual_scale);
    residual_add(A.x.data(), A.tmp.data(), n * hp.n_embd, isa);

    rms_norm(A.h.data(), A.x.data(), L.ffn_norm, n, hp.n_embd, hp.rms_eps, isa);
    gated_ffn(ctx, L.ffn, hp.traits.act, A.h.data(), n, A.gate.data(), A.up.data(), A.fused.data(), A.tmp.data());
    if (L.post_ffn_norm) rms_norm(A.tmp.data(), A.tmp.data(), L.post_ffn_norm, n, hp.n_embd, hp.rms_eps, isa);
    if (hp.residual_scale != 1.0f) scale(A.tmp.data(), n * hp.n_embd, hp.residual_scale);
    residual_add(A.x.data(), A.tmp.data(), n * hp.n_embd, isa);
}

void decoder_model::forward(kernel_context& ctx, const forward_batch& batch, kv_cache& kv, float* logits) {
    const model_hparams& hp = hparams_;
    TACHYON_ASSERT(batch.size() > 0, "forward of an empty batch");
    const activation_pool::lease set = pool_.take(hp, batch.size());
    activations& A = *set;
    const int64_t n = static_cast<int64_t>(batch.size());

    embed_tokens(tok_embd_, batch.tokens, A.x.data(), embd_rows_from_file_ ? file_.get() : nullptr);
    if (hp.embedding_scale != 1.0f) scale(A.x.data(), n * hp.n_embd, hp.embedding_scale);
    rope_table(A.rope.data(), n, batch.positions.data(), rope_);
    if (hp.traits.swa_own_rope) rope_table(A.rope_swa.data(), n, batch.positions.data(), rope_swa_);
    for (int il = 0; il < hp.n_layer; ++il) layer(ctx, A, batch, kv, il);
    // Final norm and output projection only for the rows that want logits.
    output_logits(ctx, batch, A.x.data(), output_norm_, hp.rms_eps, output_, A.out_h.data(), logits);
    const int64_t n_values = static_cast<int64_t>(batch.n_logits()) * hp.n_vocab;
    if (hp.logit_scale != 1.0f) scale(logits, n_values, 1.0f / hp.logit_scale);
    if (hp.final_softcap > 0.0f) softcap(logits, n_values, hp.final_softcap);
}

}  // namespace

result<std::unique_ptr<model>> load_decoder(std::unique_ptr<gguf_file> file, const load_options& options) {
    auto arch = file->get_string("general.architecture");
    if (!arch) return arch.err();
    const arch_traits* traits = find_family(*arch);
    if (traits == nullptr) {
        return make_error(errc::unsupported, file->path() + ": general.architecture '" + *arch + "' is not supported (expected one of " +
                                                 family_names() + ")");
    }
    auto m = std::make_unique<decoder_model>();
    TACHYON_TRY(m->bind(std::move(file), *traits, options));
    return std::unique_ptr<model>(std::move(m));
}

}  // namespace tachyon::arch
