// The blocks that llama-family architectures are built of, each a named
// function over explicit weights and buffers: token embedding, RMSNorm,
// grouped-query self-attention with RoPE (optional Q/K/V biases, fused QKV,
// per-head Q/K norms, sliding window), the gated feed-forward network
// (SwiGLU or GeGLU, gate and up apart or fused), the residual add and the
// output head. Also what
// every architecture needs to bind its tensors and to run forward calls at
// once: the checked lookup of a matrix or vector by name, and a pool of
// activation buffers.
//
// Row t of every [n, ...] buffer belongs to token t of the forward_batch.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "inference/arch/model.h"
#include "inference/kernels/batch_attention.h"
#include "inference/kernels/kernels.h"

namespace tachyon::arch {

// --- binding ---------------------------------------------------------------

// The matrix `name` of `file`, used in place: [n_rows, n_cols] (GGUF shape
// [n_cols, n_rows]) of a type the kernels multiply. An absent optional one
// comes back with data == nullptr.
result<weight_ref> bind_matrix(const gguf_file& file, const std::string& name, int64_t n_rows, int64_t n_cols, bool optional = false);
// The vector `name` of `file` as f32: [n]. One stored in another type is
// converted once into a buffer appended to `owned`, which must outlive the
// pointer (its vectors move, their data stays). An absent optional one is
// nullptr.
result<const float*> bind_vector(const gguf_file& file, const std::string& name, int64_t n, std::vector<std::vector<float>>& owned,
                                 bool optional = false);

// The f32 copy of `w` (any type dequantize_row reads), held in a buffer
// appended to `owned` (exact loading: the forward pass then multiplies
// floats and quantizes no activation).
weight_ref dequantize_matrix(const weight_ref& w, std::vector<std::vector<float>>& owned);

// --- activations -----------------------------------------------------------

// Activations of one forward call, grown to the largest batch seen (no
// allocation per step).
struct activations {
    size_t n_cap = 0;
    line_vector<float> x;     // [n, n_embd]    residual stream
    line_vector<float> h;     // [n, n_embd]    normed input of a block
    line_vector<float> q;     // [n, n_embd_q]
    line_vector<float> k;     // [n, n_embd_kv]
    line_vector<float> v;     // [n, n_embd_kv]
    line_vector<float> att;   // [n, n_embd_q]  attention output before wo
    line_vector<float> tmp;   // [n, n_embd]    output of a block before the residual add
    line_vector<float> gate;  // [n, n_ff]
    line_vector<float> up;    // [n, n_ff]
    line_vector<float> out_h; // [n_logits, n_embd]
    line_vector<float> rope;  // [n, n_rot]     cos/sin of each token's angles (rope_table), for every layer
    line_vector<float> rope_swa;  // [n, n_rot] the same for sliding-window layers with their own angles (traits.swa_own_rope)
    line_vector<float> fused; // [n, max(n_embd_q + 2 n_embd_kv, 2 n_ff)] fused QKV or gate+up output (phi3), else empty

    void grow(const model_hparams& hp, size_t n);
};

// Two forward calls may run at once (the engine's prefill/decode split):
// each takes a set of activations from the pool for its duration.
class activation_pool {
public:
    // A set grown to n tokens, back in the pool when the lease ends.
    class lease {
    public:
        lease(activation_pool& pool, std::unique_ptr<activations> set) : pool_(pool), set_(std::move(set)) {}
        ~lease() { pool_.put(std::move(set_)); }
        lease(const lease&) = delete;
        lease& operator=(const lease&) = delete;
        activations& operator*() const { return *set_; }

    private:
        activation_pool& pool_;
        std::unique_ptr<activations> set_;
    };
    lease take(const model_hparams& hp, size_t n);

private:
    void put(std::unique_ptr<activations> set);

    std::mutex mutex_;
    std::vector<std::unique_ptr<activations>> free_;  // sets not in use
};

// --- blocks ----------------------------------------------------------------

struct attention_weights {
    weight_ref wq;              // [n_embd_q, n_embd]  (empty when fused)
    weight_ref wk;              // [n_embd_kv, n_embd]
    weight_ref wv;              // [n_embd_kv, n_embd]
    weight_ref wqkv;            // [n_embd_q + 2 n_embd_kv, n_embd]: Q, K, V rows (phi3), or empty
    weight_ref wo;              // [n_embd, n_embd_q]
    const float* bq = nullptr;  // [n_embd_q]  or nullptr (qwen2)
    const float* bk = nullptr;  // [n_embd_kv] or nullptr
    const float* bv = nullptr;  // [n_embd_kv] or nullptr
    const float* q_norm = nullptr;  // [head_dim] per-head RMSNorm of Q before RoPE, or nullptr (qwen3, gemma3)
    const float* k_norm = nullptr;  // [head_dim]
};

struct ffn_weights {
    weight_ref gate;  // [n_ff, n_embd]  (empty when fused)
    weight_ref up;    // [n_ff, n_embd], or [2 n_ff, n_embd] gate rows then up rows (fused, phi3)
    weight_ref down;  // [n_embd, n_ff]
};

// What one layer's attention does beyond the weights.
struct attention_layer {
    const float* rope_cs;  // [n, hp.n_rot] rope_table of the batch's positions, or nullptr: no RoPE (smollm3's NoPE layers)
    int window = 0;        // > 0: sliding window of this many positions
};

// Scratch of self_attention.
struct attention_buffers {
    float* q;    // [n, n_embd_q]
    float* k;    // [n, n_embd_kv]
    float* v;    // [n, n_embd_kv]
    float* att;  // [n, n_embd_q]
};

// x: [n, n_embd] = rows of tok_embd (any type dequantize_row reads) for the
// batch's tokens. With read_rows, the rows are read from that file
// (gguf_file::copy_bytes) rather than through the mapping, whose pages of
// tok_embd were released.
void embed_tokens(const weight_ref& tok_embd, std::span<const int32_t> tokens, float* x, const gguf_file* read_rows = nullptr);

// y = RMSNorm of each row of x, times w.   x, y: [n, n_embd]; w: [n_embd]
void rms_norm(float* y, const float* x, const float* w, int64_t n, int64_t n_embd, float eps, kernel_isa isa);

// y = x Wᵀ for each of n rows.   x: [n, w.n_cols]; y: [n, w.n_rows]
void project(kernel_context& ctx, const weight_ref& w, const float* x, int64_t n, float* y);
// project for each (matrix, y) of the same width over the same x, in one
// split over the kernel threads (matmul_same_input).
void project_same_input(kernel_context& ctx, std::span<const std::pair<const weight_ref*, float*>> outputs, const float* x, int64_t n);

// Grouped-query self-attention of the batch: q, k, v = h Wᵀ (+ bias), the
// per-head Q/K norms, RoPE on q and k (where the layer has it), the
// attention temperature on q (hp.attn_temp_scale), k and v stored in
// `layer` of `kv`, causal attention of every token over its sequence or its
// window (`attn`), out = att woᵀ.
//   h: [n, n_embd] normed input; fused: [n, n_embd_q + 2 n_embd_kv] scratch
//   when w.wqkv is set; out: [n, n_embd]
void self_attention(kernel_context& ctx, const attention_weights& w, const model_hparams& hp, const forward_batch& batch,
                    batch_attention& attn, kv_cache& kv, int layer, const float* h, const attention_layer& how,
                    const attention_buffers& buf, float* fused, float* out);

// out = (act(h gateᵀ) * (h upᵀ)) downᵀ, act silu (SwiGLU) or the tanh GELU (GeGLU).
//   h: [n, n_embd]; gate, up: [n, n_ff] scratch; fused: [n, 2 n_ff] scratch
//   when gate and up are one matrix; out: [n, n_embd]
void gated_ffn(kernel_context& ctx, const ffn_weights& w, ffn_activation act, const float* h, int64_t n, float* gate, float* up,
               float* fused, float* out);

// x += y.   x, y: [n_values]
void residual_add(float* x, const float* y, int64_t n_values, kernel_isa isa);

// logits: [batch.n_logits(), output.n_rows] = RMSNorm(x) outputᵀ for the
// rows of x whose token wants logits, in batch order.
//   x: [n, n_embd]; norm: [n_embd]; out_h: [n_logits, n_embd] scratch
void output_logits(kernel_context& ctx, const forward_batch& batch, const float* x, const float* norm, float eps,
                   const weight_ref& output, float* out_h, float* logits);

}  // namespace tachyon::arch
