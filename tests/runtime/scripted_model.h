// Test support: a "model" that emits a script. Every forward call that asks
// for logits makes the next scripted token the only likely one, so the agent
// loop can be driven deterministically through tool calls, answers, errors
// and budgets without a trained model. Used by unit tests only.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/formats/chat_format.h"
#include "inference/arch/model.h"
#include "inference/tokenizer/tokenizer.h"
#include "inference/tokenizer/vocab.h"

namespace scripted {

// A byte-level vocabulary (no merges) with the ChatML and tool-call markers.
inline tachyon::tokenizer chatml_tokenizer() {
    tachyon::byte_level_bpe_builder b;
    tachyon::token_id end = b.add_special("<|im_end|>");
    b.add_special("<|im_start|>");
    b.add_special("<|endoftext|>");
    b.add_special("<tool_call>");
    b.add_special("</tool_call>");
    b.add_special("<tool_response>");
    b.add_special("</tool_response>");
    tachyon::vocab v = b.build("qwen2");
    v.eos_id = end;
    v.eot_id = end;
    auto t = tachyon::tokenizer::create(std::move(v));
    return std::move(t).value();
}

class model final : public tachyon::model {
public:
    // Each turn is emitted followed by <|im_end|>.
    model(const tachyon::tokenizer& tok, const std::vector<std::string>& turns) {
        hparams_.arch = "scripted";
        hparams_.n_vocab = static_cast<int>(tok.n_tokens());
        hparams_.n_embd = 8;
        hparams_.n_layer = 1;
        hparams_.n_head = 1;
        hparams_.n_head_kv = 1;
        hparams_.head_dim = 8;
        hparams_.n_rot = 8;
        hparams_.n_ff = 8;
        hparams_.n_ctx_train = 1 << 16;
        const tachyon::token_id end = tok.find_token("<|im_end|>");
        end_ = end;
        for (const auto& t : turns) {
            for (auto id : tok.encode(t, {.add_special = false, .parse_special = true})) script_.push_back(id);
            script_.push_back(end);
        }
    }

    void forward(tachyon::kernel_context&, const tachyon::forward_batch& batch, tachyon::kv_cache&, float* logits) override {
        if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
        std::lock_guard lock(mutex_);
        const size_t n_vocab = static_cast<size_t>(hparams_.n_vocab);
        size_t row = 0;
        // Rows of one sequence that follow each other are a speculative draft
        // being verified: row j predicts script[j] only while the draft tokens
        // before it are the script's; the script advances by the rows the
        // engine can keep.
        size_t chain = 0;   // valid rows so far in the current chain
        bool valid = false;
        auto advance = [&] {
            for (size_t k = 0; k < chain && !script_.empty(); ++k) script_.pop_front();
            chain = 0;
        };
        for (size_t i = 0; i < batch.size(); ++i) {
            if (!batch.logits[i]) continue;
            const bool continues = i > 0 && batch.logits[i - 1] && batch.seqs[i - 1] == batch.seqs[i] &&
                                   batch.positions[i - 1] + 1 == batch.positions[i];
            if (!continues) {
                advance();
                valid = true;
            } else if (valid) {
                // The engine stops at the end of a turn: nothing after it is kept.
                valid = chain - 1 < script_.size() && batch.tokens[i] == script_[chain - 1] && script_[chain - 1] != end_;
            }
            float* l = logits + row * n_vocab;
            std::fill(l, l + n_vocab, 0.0f);
            // Past the script: keep ending turns.
            tachyon::token_id next = chain < script_.size() ? script_[chain] : end_fallback_;
            if (valid) ++chain;
            l[static_cast<size_t>(valid ? next : end_fallback_)] = 10.0f;
            ++row;
        }
        advance();
    }
    void set_fallback(tachyon::token_id id) { end_fallback_ = id; }
    // Each forward takes at least this long: a generation a test can interrupt.
    void set_forward_delay(std::chrono::microseconds d) { delay_ = d; }

private:
    std::mutex mutex_;
    std::deque<tachyon::token_id> script_;
    tachyon::token_id end_fallback_ = 0;
    tachyon::token_id end_ = -1;
    std::chrono::microseconds delay_{0};
};

}  // namespace scripted
