// Llama-family architecture: hyper-parameters, tensor binding and the batched
// forward pass.
#include "inference/arch/llama.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>

#include "inference/kernels/attention.h"
#include "inference/gguf/fp16.h"
#include "inference/kernels/kernels.h"
#include "inference/gguf/quant.h"

namespace tachyon::arch {
namespace {

struct layer_weights {
    const float* attn_norm;  // [n_embd]
    weight_ref wq;           // [n_embd_q, n_embd]
    weight_ref wk;           // [n_embd_kv, n_embd]
    weight_ref wv;           // [n_embd_kv, n_embd]
    weight_ref wo;           // [n_embd, n_embd_q]
    const float* bq = nullptr;  // [n_embd_q]  (qwen2)
    const float* bk = nullptr;  // [n_embd_kv] (qwen2)
    const float* bv = nullptr;  // [n_embd_kv] (qwen2)
    const float* ffn_norm;   // [n_embd]
    weight_ref gate;         // [n_ff, n_embd]
    weight_ref up;           // [n_ff, n_embd]
    weight_ref down;         // [n_embd, n_ff]
};

class llama_model final : public model {
public:
    void forward(kernel_context& ctx, const forward_batch& batch, kv_cache& kv, float* logits) override;

    status bind(std::unique_ptr<gguf_file> file);

private:
    result<weight_ref> matrix(const std::string& name, int64_t n_rows, int64_t n_cols, bool optional = false);
    result<const float*> vector(const std::string& name, int64_t n, bool optional = false);
    struct activations;
    void attention(kernel_context& ctx, activations& A, const forward_batch& batch, kv_cache& kv, int layer);
    void layer(kernel_context& ctx, activations& A, const forward_batch& batch, kv_cache& kv, int il);
    void grow(activations& A, size_t n_tokens) const;
    void pack_small_model();

    // Runs of at least this many tokens of one sequence (prompt chunks,
    // drafts to verify) take the AMX-BF16 attention. A single token (two
    // query rows of the shipped model) fills too little of a 16-row tile:
    // decode measured 5 % slower on tiles than with AVX-512.
    static constexpr int min_tokens_bf16 = 2;
    // Float weights up to this size in all are packed as panels.
    static constexpr size_t max_packed_bytes = size_t{16} << 20;

    weight_ref tok_embd_;             // [n_vocab, n_embd]
    std::vector<layer_weights> layers_;
    const float* output_norm_ = nullptr;  // [n_embd]
    weight_ref output_;               // [n_vocab, n_embd] (token_embd when tied)
    std::vector<std::vector<float>> owned_;  // norms/biases converted to f32 when stored otherwise
    std::vector<weight_panels> panels_;      // owners of the weight_ref::panels

    // The K/V of sequences in AMX-BF16 tile order, per layer and KV head,
    // kept across forward calls: a call converts only the chunks of 32
    // positions written since (kv_cache::generation), not the whole context.
    struct tile_copy {
        attention_kv_bf16 kv;
        std::vector<std::array<uint32_t, 5>> keys;  // per chunk: its two blocks, their generations, positions seen
    };
    struct sequence_tiles {
        std::vector<tile_copy> heads;  // [layer][KV head]
    };
    std::mutex tiles_mutex_;
    std::unordered_map<seq_id, std::unique_ptr<sequence_tiles>> tiles_;

    // Activations of one forward call, grown to the largest batch seen (no
    // allocation per step). Two calls may run at once (the engine's
    // prefill/decode split): each takes a set from the pool for its duration.
    struct activations {
        size_t n_cap = 0;
        std::vector<float> x;     // [n, n_embd]    residual stream
        std::vector<float> h;     // [n, n_embd]    normed input of a block
        std::vector<float> q;     // [n, n_embd_q]
        std::vector<float> k;     // [n, n_embd_kv]
        std::vector<float> v;     // [n, n_embd_kv]
        std::vector<float> att;   // [n, n_embd_q]  attention output before wo
        std::vector<float> tmp;   // [n, n_embd]
        std::vector<float> gate;  // [n, n_ff]
        std::vector<float> up;    // [n, n_ff]
        std::vector<float> out_h; // [n_logits, n_embd]
        std::vector<float> rope;  // [n, head_dim]  cos/sin of each token's angles (rope_table), for every layer
    };
    std::mutex pool_mutex_;
    std::vector<std::unique_ptr<activations>> pool_;  // sets not in use
};

result<weight_ref> llama_model::matrix(const std::string& name, int64_t n_rows, int64_t n_cols, bool optional) {
    const gguf_tensor_info* t = file_->find_tensor(name);
    if (t == nullptr) {
        if (optional) return weight_ref{};
        return make_error(errc::not_found, file_->path() + ": missing tensor '" + name + "' (expected [" +
                                               std::to_string(n_cols) + ", " + std::to_string(n_rows) + "])");
    }
    if (t->shape.size() != 2 || t->shape[0] != n_cols || t->shape[1] != n_rows) {
        std::string got;
        for (int64_t d : t->shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
        return make_error(errc::parse_error, file_->path() + ": tensor '" + name + "' has shape [" + got + "], expected [" +
                                                 std::to_string(n_cols) + ", " + std::to_string(n_rows) + "]");
    }
    if (!has_kernels(t->type)) {
        return make_error(errc::unsupported, file_->path() + ": tensor '" + name + "' has type " +
                                                 std::string(to_string(t->type)) +
                                                 ", which tachyon cannot multiply (supported: f32, f16, bf16, q8_0, q4_0, q4_k, q6_k)");
    }
    return weight_ref{t->type, t->data, n_rows, n_cols};
}

result<const float*> llama_model::vector(const std::string& name, int64_t n, bool optional) {
    const gguf_tensor_info* t = file_->find_tensor(name);
    if (t == nullptr) {
        if (optional) return static_cast<const float*>(nullptr);
        return make_error(errc::not_found, file_->path() + ": missing tensor '" + name + "' (expected [" + std::to_string(n) + "])");
    }
    if (t->shape.size() != 1 || t->shape[0] != n) {
        return make_error(errc::parse_error, file_->path() + ": tensor '" + name + "' should have shape [" + std::to_string(n) + "]");
    }
    if (t->type == tensor_type::f32) return reinterpret_cast<const float*>(t->data);
    if (!can_dequantize(t->type)) {
        return make_error(errc::unsupported, file_->path() + ": tensor '" + name + "' has unsupported type " + std::string(to_string(t->type)));
    }
    // Small vectors (norms, biases) in another type are converted once.
    owned_.emplace_back(static_cast<size_t>(n));
    dequantize_row(t->type, t->data, owned_.back().data(), n);
    return static_cast<const float*>(owned_.back().data());
}

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
        TACHYON_BIND(wq, matrix(p + "attn_q.weight", n_q, n_embd));
        TACHYON_BIND(wk, matrix(p + "attn_k.weight", n_kv, n_embd));
        TACHYON_BIND(wv, matrix(p + "attn_v.weight", n_kv, n_embd));
        TACHYON_BIND(wo, matrix(p + "attn_output.weight", n_embd, n_q));
        TACHYON_BIND(bq, vector(p + "attn_q.bias", n_q, true));
        TACHYON_BIND(bk, vector(p + "attn_k.bias", n_kv, true));
        TACHYON_BIND(bv, vector(p + "attn_v.bias", n_kv, true));
        TACHYON_BIND(ffn_norm, vector(p + "ffn_norm.weight", n_embd));
        TACHYON_BIND(gate, matrix(p + "ffn_gate.weight", n_ff, n_embd));
        TACHYON_BIND(up, matrix(p + "ffn_up.weight", n_ff, n_embd));
        TACHYON_BIND(down, matrix(p + "ffn_down.weight", n_embd, n_ff));
#undef TACHYON_BIND
        hp.qkv_bias = hp.qkv_bias || L.bq != nullptr;
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
        for (weight_ref* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.gate, &L.up, &L.down}) all.push_back(w);
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

void llama_model::grow(activations& A, size_t n) const {
    if (n <= A.n_cap) return;
    const model_hparams& hp = hparams_;
    A.n_cap = n;
    A.x.resize(n * hp.n_embd);
    A.h.resize(n * hp.n_embd);
    A.q.resize(n * hp.n_embd_q());
    A.k.resize(n * hp.n_embd_kv());
    A.v.resize(n * hp.n_embd_kv());
    A.att.resize(n * hp.n_embd_q());
    A.tmp.resize(n * hp.n_embd);
    A.gate.resize(n * hp.n_ff);
    A.up.resize(n * hp.n_ff);
    A.out_h.resize(n * hp.n_embd);
    A.rope.resize(n * static_cast<size_t>(hp.head_dim));
}

// What a chunk of 32 positions of a sequence's tile copy was made from:
// its two blocks (-1 past the sequence), their write generations, and how
// many of its positions were seen.
std::array<uint32_t, 5> chunk_key(const kv_cache& kv, int layer, std::span<const int> blocks, int chunk, int n_pos) {
    std::array<uint32_t, 5> key{};
    for (int h = 0; h < 2; ++h) {
        const size_t b = static_cast<size_t>(2 * chunk + h);
        const bool in = b < blocks.size() && 32 * chunk + 16 * h < n_pos;
        key[static_cast<size_t>(2 * h)] = in ? static_cast<uint32_t>(blocks[b]) : ~0u;
        key[static_cast<size_t>(2 * h + 1)] = in ? kv.generation(layer, blocks[b]) : 0u;
    }
    key[4] = static_cast<uint32_t>(std::min(32, n_pos - 32 * chunk));
    return key;
}

// Causal attention of every batch token over its own sequence in the paged
// cache (positions 0..pos, the batch's own K/V already written).
void llama_model::attention(kernel_context& ctx, activations& A, const forward_batch& batch, kv_cache& kv, int il) {
    const model_hparams& hp = hparams_;
    const int hd = hp.head_dim, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
    const int group = hp.n_head / hp.n_head_kv;
    const int bs = kv.config().block_size;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const kernel_isa isa = ctx.isa();
    // Runs of at least min_tokens_bf16 tokens go to AMX-BF16 tiles of 16
    // rows, where the CPU has them.
    const bool bf16 = isa >= kernel_isa::amx && group <= max_attention_rows_bf16 && attention_bf16_supported(hd, bs);
    // Tiles: query rows (head, token) that share a KV head and a sequence:
    // the heads of one group, for consecutive tokens.
    struct tile {
        size_t t0;       // first batch token
        int n_tokens;    // consecutive tokens of one sequence
        int g;           // KV head
        int h0, n_heads; // query heads h0 .. h0 + n_heads - 1 of group g
        int run;         // prompt run whose converted K/V the tile reads (AMX-BF16), or -1
    };
    struct prompt_run {
        seq_id seq;
        int n_pos;  // positions the run's last token sees
    };
    thread_local std::vector<tile> tiles;
    thread_local std::vector<prompt_run> runs;
    tiles.clear();
    runs.clear();
    const int heads_per_tile = std::min(group, max_attention_rows);
    const int tokens_per_tile = std::max(1, max_attention_rows / heads_per_tile);
    const int tokens_per_tile_bf16 = max_attention_rows_bf16 / group;
    int max_pos = 0;
    for (size_t t = 0; t < batch.size();) {
        size_t run = 1;  // tokens of the same sequence at consecutive positions
        while (t + run < batch.size() && batch.seqs[t + run] == batch.seqs[t] && batch.positions[t + run] == batch.positions[t + run - 1] + 1)
            ++run;
        for (size_t k = t; k < t + run; ++k) max_pos = std::max(max_pos, batch.positions[k]);
        if (bf16 && run >= static_cast<size_t>(min_tokens_bf16)) {
            const int r = static_cast<int>(runs.size());
            runs.push_back({batch.seqs[t], batch.positions[t + run - 1] + 1});
            for (size_t t0 = t; t0 < t + run; t0 += static_cast<size_t>(tokens_per_tile_bf16))
                for (int g = 0; g < hp.n_head_kv; ++g)
                    tiles.push_back({t0, static_cast<int>(std::min(t + run - t0, static_cast<size_t>(tokens_per_tile_bf16))), g, g * group, group, r});
        } else {
            for (size_t t0 = t; t0 < t + run; t0 += static_cast<size_t>(tokens_per_tile))
                for (int g = 0; g < hp.n_head_kv; ++g)
                    for (int h0 = g * group; h0 < (g + 1) * group; h0 += heads_per_tile)
                        tiles.push_back({t0, static_cast<int>(std::min(t + run - t0, static_cast<size_t>(tokens_per_tile))), g, h0,
                                         std::min(heads_per_tile, (g + 1) * group - h0), -1});
        }
        t += run;
    }
    // The K and V of every prompt run's sequence in tile order, brought up
    // to date once for all of the run's tiles.
    thread_local std::vector<sequence_tiles*> run_tiles;
    run_tiles.clear();
    if (!runs.empty()) {
        std::lock_guard lock(tiles_mutex_);
        if (il == 0) std::erase_if(tiles_, [&](const auto& e) { return !kv.contains(e.first); });
        for (const prompt_run& pr : runs) {
            auto& t = tiles_[pr.seq];
            if (!t) {
                t = std::make_unique<sequence_tiles>();
                t->heads.resize(static_cast<size_t>(hp.n_layer) * hp.n_head_kv);
            }
            run_tiles.push_back(t.get());
        }
    }
    // The worker threads see these through references: a thread_local named
    // inside the lambdas would be each worker's own, empty one.
    const std::vector<prompt_run>& run_list = runs;
    const std::vector<sequence_tiles*>& run_copies = run_tiles;
    if (!runs.empty()) {
        const int64_t n_conv = static_cast<int64_t>(runs.size()) * hp.n_head_kv;
        ctx.parallel_for(n_conv, 1, [&](int64_t begin, int64_t end) {
            thread_local std::vector<const float*> k_blocks, v_blocks;
            for (int64_t i = begin; i < end; ++i) {
                const size_t r = static_cast<size_t>(i / hp.n_head_kv);
                const prompt_run& pr = run_list[r];
                // A sequence with several runs in the batch is converted once, for its last.
                bool later = false;
                for (size_t q = r + 1; q < run_list.size(); ++q) later = later || run_list[q].seq == pr.seq;
                if (later) continue;
                const int g = static_cast<int>(i % hp.n_head_kv);
                tile_copy& tc = run_copies[r]->heads[static_cast<size_t>(il * hp.n_head_kv + g)];
                std::span<const int> blocks = kv.block_table(pr.seq);
                const int n_chunks = (pr.n_pos + 31) / 32;
                int first = 0;
                std::vector<std::array<uint32_t, 5>>& keys = tc.keys;
                keys.resize(std::min(keys.size(), static_cast<size_t>(n_chunks)));
                for (; first < static_cast<int>(keys.size()); ++first) {
                    const std::array<uint32_t, 5> key = chunk_key(kv, il, blocks, first, pr.n_pos);
                    if (key != keys[static_cast<size_t>(first)]) break;
                }
                keys.resize(static_cast<size_t>(n_chunks));
                for (int ch = first; ch < n_chunks; ++ch) keys[static_cast<size_t>(ch)] = chunk_key(kv, il, blocks, ch, pr.n_pos);
                k_blocks.resize(blocks.size());
                v_blocks.resize(blocks.size());
                for (size_t b = 0; b < blocks.size(); ++b) {
                    k_blocks[b] = kv.k_block(il, blocks[b]) + static_cast<size_t>(g) * hd * bs;
                    v_blocks[b] = kv.v_block(il, blocks[b]) + g * hd;
                }
                const attention_args a{nullptr, k_blocks.data(), v_blocks.data(), bs, n_kv, 0, scale, nullptr, nullptr};
                convert_kv_bf16(a, hd, pr.n_pos, tc.kv, first);
            }
        });
    }
    // Split only when the work pays for the fan-out: ~positions × head_dim × rows per tile.
    const int64_t grain = std::max<int64_t>(1, 16384 / (static_cast<int64_t>(max_pos + 1) * hd * max_attention_rows));
    const std::vector<tile>& work = tiles;
    ctx.parallel_for(static_cast<int64_t>(work.size()), grain, [&](int64_t begin, int64_t end) {
        thread_local std::vector<float> scores;          // [max_attention_rows, max_pos + 1]
        thread_local std::vector<const float*> k_blocks; // [n_blocks of the sequence]
        thread_local std::vector<const float*> v_blocks;
        const size_t stride = static_cast<size_t>(max_pos + 1);
        if (scores.size() < stride * max_attention_rows) scores.resize(stride * max_attention_rows);
        seq_id bound = -1;
        int bound_g = -1;
        for (int64_t w = begin; w < end; ++w) {
            const tile& tl = work[static_cast<size_t>(w)];
            attention_row rows[max_attention_rows_bf16];
            int n_rows = 0;
            for (int i = 0; i < tl.n_tokens; ++i) {
                const size_t t = tl.t0 + static_cast<size_t>(i);
                for (int h = tl.h0; h < tl.h0 + tl.n_heads; ++h, ++n_rows) {
                    const size_t off = t * n_q + static_cast<size_t>(h) * hd;
                    rows[n_rows] = {A.q.data() + off, batch.positions[t] + 1, scores.data() + static_cast<size_t>(n_rows % max_attention_rows) * stride,
                                    A.att.data() + off};
                }
            }
            if (tl.run >= 0) {
                attend_rows_bf16(run_copies[static_cast<size_t>(tl.run)]->heads[static_cast<size_t>(il * hp.n_head_kv + tl.g)].kv, rows, n_rows, scale);
                continue;
            }
            // Consecutive tiles mostly share the sequence and KV head: bind block bases once.
            if (batch.seqs[tl.t0] != bound || tl.g != bound_g) {
                bound = batch.seqs[tl.t0];
                bound_g = tl.g;
                std::span<const int> blocks = kv.block_table(bound);
                k_blocks.resize(blocks.size());
                v_blocks.resize(blocks.size());
                for (size_t b = 0; b < blocks.size(); ++b) {
                    k_blocks[b] = kv.k_block(il, blocks[b]) + static_cast<size_t>(tl.g) * hd * bs;
                    v_blocks[b] = kv.v_block(il, blocks[b]) + tl.g * hd;
                }
            }
            attention_args shared{nullptr, k_blocks.data(), v_blocks.data(), bs, n_kv, 0, scale, nullptr, nullptr};
            attend_rows(shared, rows, n_rows, hd, isa);
        }
    });
}

// One transformer block: norm → attention → residual → norm → SwiGLU → residual.
void llama_model::layer(kernel_context& ctx, activations& A, const forward_batch& batch, kv_cache& kv, int il) {
    const model_hparams& hp = hparams_;
    const layer_weights& L = layers_[static_cast<size_t>(il)];
    const int64_t n = static_cast<int64_t>(batch.size());
    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv(), n_ff = hp.n_ff;
    const kernel_isa isa = ctx.isa();

    for (int64_t t = 0; t < n; ++t) rmsnorm(&A.h[t * n_embd], &A.x[t * n_embd], L.attn_norm, n_embd, hp.rms_eps, isa);
    matmul(ctx, L.wq.type, L.wq.data, n_q, n_embd, A.h.data(), n, A.q.data(), L.wq.panels);
    matmul(ctx, L.wk.type, L.wk.data, n_kv, n_embd, A.h.data(), n, A.k.data(), L.wk.panels);
    matmul(ctx, L.wv.type, L.wv.data, n_kv, n_embd, A.h.data(), n, A.v.data(), L.wv.panels);
    for (int64_t t = 0; t < n; ++t) {
        if (L.bq) add(&A.q[t * n_q], &A.q[t * n_q], L.bq, n_q, isa);
        if (L.bk) add(&A.k[t * n_kv], &A.k[t * n_kv], L.bk, n_kv, isa);
        if (L.bv) add(&A.v[t * n_kv], &A.v[t * n_kv], L.bv, n_kv, isa);
    }
    rope_apply(A.q.data(), n, hp.n_head, hp.head_dim, A.rope.data(), hp.rope);
    rope_apply(A.k.data(), n, hp.n_head_kv, hp.head_dim, A.rope.data(), hp.rope);
    for (int64_t t = 0; t < n; ++t) {
        const int pos = batch.positions[static_cast<size_t>(t)];
        const seq_id s = batch.seqs[static_cast<size_t>(t)];
        kv.write_k(il, s, pos, &A.k[t * n_kv]);
        std::memcpy(kv.v_row(il, s, pos), &A.v[t * n_kv], static_cast<size_t>(n_kv) * sizeof(float));
    }
    attention(ctx, A, batch, kv, il);
    matmul(ctx, L.wo.type, L.wo.data, n_embd, n_q, A.att.data(), n, A.tmp.data(), L.wo.panels);
    add(A.x.data(), A.x.data(), A.tmp.data(), n * n_embd, isa);

    for (int64_t t = 0; t < n; ++t) rmsnorm(&A.h[t * n_embd], &A.x[t * n_embd], L.ffn_norm, n_embd, hp.rms_eps, isa);
    matmul(ctx, L.gate.type, L.gate.data, n_ff, n_embd, A.h.data(), n, A.gate.data(), L.gate.panels);
    matmul(ctx, L.up.type, L.up.data, n_ff, n_embd, A.h.data(), n, A.up.data(), L.up.panels);
    silu_mul(A.gate.data(), A.gate.data(), A.up.data(), n * n_ff, isa);
    matmul(ctx, L.down.type, L.down.data, n_embd, n_ff, A.gate.data(), n, A.tmp.data(), L.down.panels);
    add(A.x.data(), A.x.data(), A.tmp.data(), n * n_embd, isa);
}

void llama_model::forward(kernel_context& ctx, const forward_batch& batch, kv_cache& kv, float* logits) {
    const model_hparams& hp = hparams_;
    const int64_t n = static_cast<int64_t>(batch.size());
    const int64_t n_embd = hp.n_embd;
    TACHYON_ASSERT(n > 0, "forward of an empty batch");
    std::unique_ptr<activations> set;
    {
        std::lock_guard lock(pool_mutex_);
        if (!pool_.empty()) {
            set = std::move(pool_.back());
            pool_.pop_back();
        }
    }
    if (!set) set = std::make_unique<activations>();
    activations& A = *set;
    grow(A, static_cast<size_t>(n));

    const size_t embd_row = row_bytes(traits_of(tok_embd_.type), n_embd);
    for (int64_t t = 0; t < n; ++t) {
        const int32_t id = batch.tokens[static_cast<size_t>(t)];
        TACHYON_ASSERT(id >= 0 && id < hp.n_vocab, "forward: token id out of range");
        dequantize_row(tok_embd_.type, static_cast<const std::byte*>(tok_embd_.data) + embd_row * static_cast<size_t>(id), &A.x[t * n_embd], n_embd);
    }
    rope_table(A.rope.data(), n, hp.head_dim, batch.positions.data(), hp.rope_base);
    for (int il = 0; il < hp.n_layer; ++il) layer(ctx, A, batch, kv, il);

    // Final norm and output projection only for the rows that want logits.
    int64_t n_out = 0;
    for (int64_t t = 0; t < n; ++t) {
        if (!batch.logits[static_cast<size_t>(t)]) continue;
        rmsnorm(&A.out_h[n_out * n_embd], &A.x[t * n_embd], output_norm_, n_embd, hp.rms_eps, ctx.isa());
        ++n_out;
    }
    if (n_out > 0) matmul(ctx, output_.type, output_.data, hp.n_vocab, n_embd, A.out_h.data(), n_out, logits, output_.panels);
    std::lock_guard lock(pool_mutex_);
    pool_.push_back(std::move(set));
}

}  // namespace

result<std::unique_ptr<model>> load_llama(std::unique_ptr<gguf_file> file) {
    auto m = std::make_unique<llama_model>();
    TACHYON_TRY(m->bind(std::move(file)));
    return std::unique_ptr<model>(std::move(m));
}

}  // namespace tachyon::arch
