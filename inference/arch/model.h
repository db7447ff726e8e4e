// A loaded model: hyper-parameters, weights bound in place from the GGUF
// mapping (or dequantized, load_options::exact), and a batched forward
// pass. The families of inference/arch/families.h share one decoder;
// load_model() picks the family from general.architecture.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "inference/gguf/gguf.h"
#include "inference/kv/kv_cache.h"
#include "inference/kernels/ops.h"
#include "inference/gguf/tensor_type.h"

namespace tachyon {

class kernel_context;

// What the blocks of an architecture family hold, beyond the llama block
// (one row per general.architecture in inference/arch/families.cpp).
enum class ffn_activation { silu, gelu_tanh };
struct arch_traits {
    rope_mode rope = rope_mode::normal;
    bool fused_qkv = false;       // attn_qkv holds Q, K and V rows (phi3)
    bool fused_gate_up = false;   // ffn_up holds gate rows then up rows (phi3)
    bool qk_norm = false;         // per-head RMSNorm of Q and K before RoPE (qwen3, gemma3)
    bool post_norms = false;      // RMSNorm of each sublayer's output before the residual (gemma2, gemma3)
    ffn_activation act = ffn_activation::silu;
    bool embd_scale_sqrt = false; // embedding times sqrt(n_embd) (gemma)
    bool tied_only = false;       // the output is always token_embd (gemma)
    int no_rope_every = 0;        // > 0: layers with (il + 1) % no_rope_every == 0 apply no RoPE (smollm3)
    int swa_pattern = 0;          // > 0: layer il is sliding-window when il % swa_pattern < swa_pattern - 1 (gemma2 2, gemma3 6)
    bool swa_own_rope = false;    // sliding-window layers rotate with rope_base_swa and no scaling (gemma3)
};

enum class rope_scaling { none, linear, yarn, llama3 };

struct model_hparams {
    std::string arch;          // general.architecture
    std::string name;          // general.name (may be empty)
    arch_traits traits;
    int n_vocab = 0;
    int n_embd = 0;
    int n_layer = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;          // n_embd / n_head unless attention.key_length says otherwise
    int n_rot = 0;             // rotated dimensions per head (rope.dimension_count)
    int n_ff = 0;
    int n_ctx_train = 0;
    float rms_eps = 1e-5f;
    float rope_base = 10000.0f;
    rope_mode rope = rope_mode::normal;
    bool qkv_bias = false;

    // RoPE scaling (rope.scaling.*) and the angles of sliding-window layers.
    rope_scaling rope_scaling_type = rope_scaling::none;
    float rope_freq_scale = 1.0f;   // 1 / rope.scaling.factor for linear and YaRN
    int n_ctx_orig = 0;             // rope.scaling.original_context_length (0: n_ctx_train)
    float yarn_beta_fast = 32.0f;
    float yarn_beta_slow = 1.0f;
    float rope_mscale = 1.0f;       // magnitude of cos and sin (attn_factor, YaRN)
    float rope_base_swa = 10000.0f; // rope.freq_base_swa (swa_own_rope)
    bool rope_factors_long = false; // LongRoPE: rope_factors_long chosen (the context run exceeds n_ctx_orig), else the short ones

    // Scales and caps (1 and 0: absent).
    float embedding_scale = 1.0f;   // granite embedding_scale, gemma sqrt(n_embd)
    float attention_scale = 0.0f;   // score = attention_scale · q·k; 0: 1 / sqrt(head_dim)
    float residual_scale = 1.0f;    // each sublayer's output times this before the residual (granite)
    float logit_scale = 1.0f;       // logits divided by this (granite)
    float attn_softcap = 0.0f;      // score = cap · tanh(score / cap) (gemma2)
    float final_softcap = 0.0f;     // logits = cap · tanh(logits / cap) (gemma2)
    int sliding_window = 0;         // attention.sliding_window of the sliding-window layers
    float attn_temp_scale = 0.0f;   // Q times 1 + s · ln(floor(pos / attn_temp_length) + 1) (mistral3)
    int attn_temp_length = 0;

    int n_embd_q() const { return n_head * head_dim; }
    int n_embd_kv() const { return n_head_kv * head_dim; }
    // Layer il rotates Q and K / attends over a sliding window (0: all positions).
    bool layer_rope(int il) const { return traits.no_rope_every <= 0 || (il + 1) % traits.no_rope_every != 0; }
    int layer_window(int il) const {
        return traits.swa_pattern > 0 && il % traits.swa_pattern < traits.swa_pattern - 1 ? sliding_window : 0;
    }
};

// How a model is loaded.
struct load_options {
    // Every weight matrix dequantized to f32 at load (held by the model):
    // the forward pass then computes in float with no activation
    // quantization, the reference computation.
    bool exact = false;
    // The context the caller will run (0: the model's context_length);
    // phi3 picks its long or short RoPE factors by it.
    int n_ctx = 0;
};

// A weight matrix used in place: [n_rows, n_cols] of `type`, rows contiguous
// (GGUF order: ne0 = n_cols).
struct weight_ref {
    tensor_type type = tensor_type::f32;
    const void* data = nullptr;
    int64_t n_rows = 0;
    int64_t n_cols = 0;
    const std::byte* panels = nullptr;  // the same weights packed for batches of a few tokens (pack_panels), or nullptr
    size_t bytes() const;
};

// The tokens of one forward call: many tokens of many sequences.
struct forward_batch {
    std::vector<int32_t> tokens;     // [n]
    std::vector<seq_id> seqs;        // [n] sequence of each token
    std::vector<int32_t> positions;  // [n] position of each token in its sequence
    std::vector<uint8_t> logits;     // [n] 1: compute the logits after this token

    size_t size() const { return tokens.size(); }
    void clear() {
        tokens.clear();
        seqs.clear();
        positions.clear();
        logits.clear();
    }
    void add(int32_t token, seq_id seq, int32_t pos, bool want_logits) {
        tokens.push_back(token);
        seqs.push_back(seq);
        positions.push_back(pos);
        logits.push_back(want_logits ? 1 : 0);
    }
    int n_logits() const {
        int n = 0;
        for (uint8_t l : logits) n += l;
        return n;
    }
};

class model {
public:
    virtual ~model() = default;

    const model_hparams& hparams() const { return hparams_; }
    const gguf_file& file() const { return *file_; }
    // False for a model built in memory without a GGUF file (tests).
    bool has_file() const { return file_ != nullptr; }

    // Runs the batch. For each token, K/V are written at its position of its
    // sequence (the caller reserved the room in `kv`, and every earlier
    // position of that sequence is already in `kv` or earlier in the batch).
    // `logits` receives [batch.n_logits(), n_vocab] rows in batch order.
    // The caller commits the positions to `kv` afterwards.
    virtual void forward(kernel_context& ctx, const forward_batch& batch, kv_cache& kv, float* logits) = 0;

    // The memory the matrices of one decoded token read: each matrix's
    // panels where it is packed, else its bytes in place (the output
    // projection included; the token embeddings, of which a token reads one
    // row, not). Empty when unknown.
    virtual std::vector<std::span<const std::byte>> decode_reads() const { return {}; }

protected:
    model_hparams hparams_;
    std::unique_ptr<gguf_file> file_;
};

// Opens `path` and binds the architecture named by general.architecture
// (supported_architectures()). Errors name the file and the key or tensor
// at fault; a tensor the architecture does not use is one.
result<std::unique_ptr<model>> load_model(const std::string& path, const load_options& options);
result<std::unique_ptr<model>> load_model(std::unique_ptr<gguf_file> file, const load_options& options);
result<std::unique_ptr<model>> load_model(const std::string& path);
result<std::unique_ptr<model>> load_model(std::unique_ptr<gguf_file> file);

// "llama, mistral, qwen2, ..." : the general.architecture values load_model takes.
std::string supported_architectures();

}  // namespace tachyon
