// A loaded model: hyper-parameters, weights bound in place from the GGUF
// mapping, and a batched forward pass. One implementation per architecture
// family lives in inference/arch/; load_model() picks it from
// general.architecture.
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

struct model_hparams {
    std::string arch;          // general.architecture
    std::string name;          // general.name (may be empty)
    int n_vocab = 0;
    int n_embd = 0;
    int n_layer = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;          // n_embd / n_head unless the file says otherwise
    int n_rot = 0;             // rotated dimensions per head
    int n_ff = 0;
    int n_ctx_train = 0;
    float rms_eps = 1e-5f;
    float rope_base = 10000.0f;
    rope_mode rope = rope_mode::normal;
    bool qkv_bias = false;

    int n_embd_q() const { return n_head * head_dim; }
    int n_embd_kv() const { return n_head_kv * head_dim; }
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

    // Runs the batch. For each token, K/V are written at its position of its
    // sequence (the caller reserved the room in `kv`, and every earlier
    // position of that sequence is already in `kv` or earlier in the batch).
    // `logits` receives [batch.n_logits(), n_vocab] rows in batch order.
    // The caller commits the positions to `kv` afterwards.
    virtual void forward(kernel_context& ctx, const forward_batch& batch, kv_cache& kv, float* logits) = 0;

protected:
    model_hparams hparams_;
    std::unique_ptr<gguf_file> file_;
};

// Opens `path` and binds the architecture named by general.architecture
// (llama, qwen2). Errors name the file and the key or tensor at fault.
result<std::unique_ptr<model>> load_model(const std::string& path);
result<std::unique_ptr<model>> load_model(std::unique_ptr<gguf_file> file);

}  // namespace tachyon
