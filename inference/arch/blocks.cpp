#include "inference/arch/blocks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "base/assert.h"
#include "inference/gguf/quant.h"
#include "inference/kernels/ops.h"

namespace tachyon::arch {

result<weight_ref> bind_matrix(const gguf_file& file, const std::string& name, int64_t n_rows, int64_t n_cols, bool optional) {
    const gguf_tensor_info* t = file.find_tensor(name);
    if (t == nullptr) {
        if (optional) return weight_ref{};
        return make_error(errc::not_found, file.path() + ": missing tensor '" + name + "' (expected [" +
                                               std::to_string(n_cols) + ", " + std::to_string(n_rows) + "])");
    }
    if (t->shape.size() != 2 || t->shape[0] != n_cols || t->shape[1] != n_rows) {
        std::string got;
        for (int64_t d : t->shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
        return make_error(errc::parse_error, file.path() + ": tensor '" + name + "' has shape [" + got + "], expected [" +
                                                 std::to_string(n_cols) + ", " + std::to_string(n_rows) + "]");
    }
    if (!has_kernels(t->type)) {
        return make_error(errc::unsupported, file.path() + ": tensor '" + name + "' has type " +
                                                 std::string(to_string(t->type)) +
                                                 ", which tachyon cannot multiply (supported: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs)");
    }
    return weight_ref{t->type, t->data, n_rows, n_cols};
}

result<const float*> bind_vector(const gguf_file& file, const std::string& name, int64_t n, std::vector<std::vector<float>>& owned,
                                 bool optional) {
    const gguf_tensor_info* t = file.find_tensor(name);
    if (t == nullptr) {
        if (optional) return static_cast<const float*>(nullptr);
        return make_error(errc::not_found, file.path() + ": missing tensor '" + name + "' (expected [" + std::to_string(n) + "])");
    }
    if (t->shape.size() != 1 || t->shape[0] != n) {
        return make_error(errc::parse_error, file.path() + ": tensor '" + name + "' should have shape [" + std::to_string(n) + "]");
    }
    if (t->type != tensor_type::f32 && !can_dequantize(t->type)) {
        return make_error(errc::unsupported, file.path() + ": tensor '" + name + "' has unsupported type " + std::string(to_string(t->type)));
    }
    // Small vectors (norms, biases) are copied (converted to f32 when stored
    // otherwise) once: read in the mapping at every forward, they would bring
    // back the page cache's folios around them, pages of the neighbouring
    // matrices whose packed copies replaced them.
    owned.emplace_back(static_cast<size_t>(n));
    if (t->type == tensor_type::f32) std::memcpy(owned.back().data(), t->data, static_cast<size_t>(n) * sizeof(float));
    else dequantize_row(t->type, t->data, owned.back().data(), n);
    return static_cast<const float*>(owned.back().data());
}

weight_ref dequantize_matrix(const weight_ref& w, std::vector<std::vector<float>>& owned) {
    if (w.data == nullptr || w.type == tensor_type::f32) return w;
    owned.emplace_back(static_cast<size_t>(w.n_rows * w.n_cols));
    float* out = owned.back().data();
    const size_t row = row_bytes(traits_of(w.type), w.n_cols);
    for (int64_t r = 0; r < w.n_rows; ++r)
        dequantize_row(w.type, static_cast<const std::byte*>(w.data) + row * static_cast<size_t>(r), out + r * w.n_cols, w.n_cols);
    return weight_ref{tensor_type::f32, out, w.n_rows, w.n_cols};
}

void activations::grow(const model_hparams& hp, size_t n) {
    if (n <= n_cap) return;
    n_cap = n;
    x.resize(n * hp.n_embd);
    h.resize(n * hp.n_embd);
    q.resize(n * hp.n_embd_q());
    k.resize(n * hp.n_embd_kv());
    v.resize(n * hp.n_embd_kv());
    att.resize(n * hp.n_embd_q());
    tmp.resize(n * hp.n_embd);
    gate.resize(n * hp.n_ff);
    up.resize(n * hp.n_ff);
    out_h.resize(n * hp.n_embd);
    rope.resize(n * static_cast<size_t>(hp.n_rot));
    if (hp.traits.swa_own_rope) rope_swa.resize(n * static_cast<size_t>(hp.n_rot));
    if (hp.traits.fused_qkv || hp.traits.fused_gate_up)
        fused.resize(n * static_cast<size_t>(std::max(hp.n_embd_q() + 2 * hp.n_embd_kv(), 2 * hp.n_ff)));
}

activation_pool::lease activation_pool::take(const model_hparams& hp, size_t n) {
    std::unique_ptr<activations> set;
    {
        std::lock_guard lock(mutex_);
        if (!free_.empty()) {
            set = std::move(free_.back());
            free_.pop_back();
        }
    }
    if (!set) set = std::make_unique<activations>();
    set->grow(hp, n);
    return lease(*this, std::move(set));
}

void activation_pool::put(std::unique_ptr<activations> set) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(set));
}

void embed_tokens(const weight_ref& tok_embd, std::span<const int32_t> tokens, float* x, const gguf_file* read_rows) {
    const int64_t n_embd = tok_embd.n_cols;
    const size_t embd_row = row_bytes(traits_of(tok_embd.type), n_embd);
    std::vector<std::byte> row(read_rows != nullptr ? embd_row : 0);
    for (size_t t = 0; t < tokens.size(); ++t) {
        const int32_t id = tokens[t];
        TACHYON_ASSERT(id >= 0 && id < tok_embd.n_rows, "forward: token id out of range");
        const std::byte* src = static_cast<const std::byte*>(tok_embd.data) + embd_row * static_cast<size_t>(id);
        if (read_rows != nullptr) {
            read_rows->copy_bytes(src, embd_row, row.data());
            src = row.data();
        }
        dequantize_row(tok_embd.type, src, x + t * n_embd, n_embd);
    }
}

void rms_norm(float* y, const float* x, const float* w, int64_t n, int64_t n_embd, float eps, kernel_isa isa) {
    for (int64_t t = 0; t < n; ++t) rmsnorm(y + t * n_embd, x + t * n_embd, w, n_embd, eps, isa);
}

void project(kernel_context& ctx, const weight_ref& w, const float* x, int64_t n, float* y) {
    matmul(ctx, w.type, w.data, w.n_rows, w.n_cols, x, n, y, w.panels);
}

void project_same_input(kernel_context& ctx, std::span<const std::pair<const weight_ref*, float*>> outputs, const float* x, int64_t n) {
    std::array<matmul_operand, max_same_input_matrices> ops;
    TACHYON_ASSERT(outputs.size() <= ops.size(), "project_same_input: too many matrices");
    const int64_t n_cols = outputs.front().first->n_cols;
    for (size_t i = 0; i < outputs.size(); ++i) {
        const weight_ref& w = *outputs[i].first;
        TACHYON_ASSERT(w.n_cols == n_cols, "project_same_input: matrices of different widths");
        ops[i] = {w.type, w.data, w.n_rows, outputs[i].second, w.panels};
    }
    matmul_same_input(ctx, std::span(ops.data(), outputs.size()), n_cols, x, n);
}

void self_attention(kernel_context& ctx, const attention_weights& w, const model_hparams& hp, const forward_batch& batch,
                    batch_attention& attn, kv_cache& kv, int layer, const float* h, const attention_layer& how,
                    const attention_buffers& buf, float* fused, float* out) {
    const int64_t n = static_cast<int64_t>(batch.size());
    const int64_t n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
    const kernel_isa isa = ctx.isa();
    if (w.wqkv.data != nullptr) {
        // One product for Q, K and V, then each row split into the three.
        project(ctx, w.wqkv, h, n, fused);
        const int64_t width = n_q + 2 * n_kv;
        for (int64_t t = 0; t < n; ++t) {
            const float* row = fused + t * width;
            std::copy(row, row + n_q, buf.q + t * n_q);
            std::copy(row + n_q, row + n_q + n_kv, buf.k + t * n_kv);
            std::copy(row + n_q + n_kv, row + width, buf.v + t * n_kv);
        }
    } else {
        const std::pair<const weight_ref*, float*> qkv[] = {{&w.wq, buf.q}, {&w.wk, buf.k}, {&w.wv, buf.v}};
        project_same_input(ctx, qkv, h, n);
    }
    for (int64_t t = 0; t < n; ++t) {
        if (w.bq) add(buf.q + t * n_q, buf.q + t * n_q, w.bq, n_q, isa);
        if (w.bk) add(buf.k + t * n_kv, buf.k + t * n_kv, w.bk, n_kv, isa);
        if (w.bv) add(buf.v + t * n_kv, buf.v + t * n_kv, w.bv, n_kv, isa);
    }
    // Each head of q and k is a row of head_dim for the norms.
    if (w.q_norm) rms_norm(buf.q, buf.q, w.q_norm, n * hp.n_head, hp.head_dim, hp.rms_eps, isa);
    if (w.k_norm) rms_norm(buf.k, buf.k, w.k_norm, n * hp.n_head_kv, hp.head_dim, hp.rms_eps, isa);
    if (how.rope_cs) {
        rope_apply(buf.q, n, hp.n_head, hp.head_dim, hp.n_rot, how.rope_cs, hp.rope);
        rope_apply(buf.k, n, hp.n_head_kv, hp.head_dim, hp.n_rot, how.rope_cs, hp.rope);
    }
    if (hp.attn_temp_scale > 0.0f) {
        // Far positions get sharper attention: 1 below attn_temp_length.
        for (int64_t t = 0; t < n; ++t) {
            const double steps = std::floor(static_cast<double>(batch.positions[static_cast<size_t>(t)]) / hp.attn_temp_length);
            const float f = static_cast<float>(1.0 + hp.attn_temp_scale * std::log(steps + 1.0));
            if (f != 1.0f) scale(buf.q + t * n_q, n_q, f);
        }
    }
    attn.run(ctx, {batch.seqs, batch.positions, buf.q, buf.k, buf.v, buf.att}, kv, layer, how.window);
    project(ctx, w.wo, buf.att, n, out);
}

void gated_ffn(kernel_context& ctx, const ffn_weights& w, ffn_activation act, const float* h, int64_t n, float* gate, float* up,
               float* fused, float* out) {
    const kernel_isa isa = ctx.isa();
    const int64_t n_ff = w.down.n_cols;
    if (w.gate.data == nullptr) {
        // gate and up in one product; the activation reads each row's two halves.
        project(ctx, w.up, h, n, fused);
        for (int64_t t = 0; t < n; ++t) {
            const float* g = fused + t * 2 * n_ff;
            if (act == ffn_activation::silu) silu_mul(gate + t * n_ff, g, g + n_ff, n_ff, isa);
            else gelu_tanh_mul(gate + t * n_ff, g, g + n_ff, n_ff);
        }
    } else {
        const std::pair<const weight_ref*, float*> gate_up[] = {{&w.gate, gate}, {&w.up, up}};
        project_same_input(ctx, gate_up, h, n);
        if (act == ffn_activation::silu) silu_mul(gate, gate, up, n * n_ff, isa);
        else gelu_tanh_mul(gate, gate, up, n * n_ff);
    }
    project(ctx, w.down, gate, n, out);
}

void residual_add(float* x, const float* y, int64_t n_values, kernel_isa isa) { add(x, x, y, n_values, isa); }

void output_logits(kernel_context& ctx, const forward_batch& batch, const float* x, const float* norm, float eps,
                   const weight_ref& output, float* out_h, float* logits) {
    const int64_t n = static_cast<int64_t>(batch.size());
    const int64_t n_embd = output.n_cols;
    int64_t n_out = 0;
    for (int64_t t = 0; t < n; ++t) {
        if (!batch.logits[static_cast<size_t>(t)]) continue;
        rmsnorm(out_h + n_out * n_embd, x + t * n_embd, norm, n_embd, eps, ctx.isa());
        ++n_out;
    }
    if (n_out > 0) project(ctx, output, out_h, n_out, logits);
}

}  // namespace tachyon::arch
