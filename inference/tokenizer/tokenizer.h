// Text ↔ token ids for the two vocabulary families GGUF models use:
// byte-level BPE (tokenizer.ggml.model = "gpt2", cut into words by the
// pre-tokenizer tokenizer.ggml.pre names) and SentencePiece BPE ("llama":
// score-ordered merges over the whole text, byte fallback, dummy prefix).
//
// Special tokens: user-defined tokens (added tokens) are always matched in
// the text as a whole, as the reference tokenizers do; control tokens
// (<|im_start|>, <s>) only when the caller asks to parse specials, so that
// untrusted text (tool output) cannot inject them. Matching is
// leftmost-longest.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "inference/tokenizer/pre_tokenizer.h"
#include "inference/tokenizer/vocab.h"

namespace tachyon {

class gguf_file;

struct encode_options {
    bool add_special = false;    // BOS/EOS as the vocabulary's add_bos/add_eos say
    bool parse_special = false;  // match control tokens written in the text
};

struct decode_options {
    bool render_special = false;       // write control tokens' text (otherwise they render empty)
    bool strip_leading_space = true;   // SPM: drop the dummy-prefix space of the first token
};

class tokenizer {
public:
    // Validates `v` and builds the lookup tables. Errors: unknown
    // pre-tokenizer, malformed merges, duplicate-free token lookups.
    static result<tokenizer> create(vocab v);
    static result<tokenizer> from_gguf(const gguf_file& file);

    std::vector<token_id> encode(std::string_view text, encode_options options = {}) const;

    // Bytes of a sequence of tokens (may end inside a UTF-8 sequence when the
    // ids were cut; see incremental_detokenizer for streaming).
    std::string decode(std::span<const token_id> ids, decode_options options = {}) const;

    // Bytes token `id` stands for: byte-level alphabet mapped back to bytes,
    // ▁ as space, <0xNN> as the byte; control tokens empty unless rendered.
    std::string token_to_piece(token_id id, bool render_special = false) const;
    // The token's text as stored in the vocabulary.
    const std::string& token_text(token_id id) const;
    // Exact vocabulary lookup of a stored token text, or no_token.
    token_id find_token(std::string_view text) const;

    const vocab& get_vocab() const { return *vocab_; }
    size_t n_tokens() const { return vocab_->tokens.size(); }
    token_id bos() const { return vocab_->bos_id; }
    token_id eos() const { return vocab_->eos_id; }
    token_id eot() const { return vocab_->eot_id; }
    bool is_control(token_id id) const;
    // End of generation: EOS, EOT, EOM and the control tokens that end a
    // turn (<|im_end|>, <|eot_id|>, <|end|>, <end_of_turn>, <|endoftext|>).
    bool is_eog(token_id id) const;

private:
    struct tables;
    explicit tokenizer(std::shared_ptr<const vocab> v, std::shared_ptr<const tables> t);

    // The piece without a copy; empty for unrendered control tokens.
    std::string_view piece_view(token_id id, bool render_special) const;
    void encode_bpe_text(std::string_view text, std::vector<token_id>& out) const;
    void encode_spm_text(std::string_view text, std::vector<token_id>& out) const;

    // Shared, immutable: a tokenizer is cheap to copy and safe to use from
    // several threads at once.
    std::shared_ptr<const vocab> vocab_;
    std::shared_ptr<const tables> tables_;
};

// Turns a stream of ids into text, emitting only complete UTF-8 characters:
// a character split over several byte tokens comes out once its last byte
// has arrived.
class incremental_detokenizer {
public:
    explicit incremental_detokenizer(const tokenizer& tok, decode_options options = {});

    // Text that became complete with `id` (possibly empty).
    std::string push(token_id id);
    // Whatever is still held back (an unfinished sequence, as raw bytes).
    std::string flush();

private:
    const tokenizer* tok_;
    decode_options options_;
    std::string pending_;  // bytes of an unfinished UTF-8 sequence
    bool at_start_ = true;
};

}  // namespace tachyon
