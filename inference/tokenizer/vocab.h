// The vocabulary a tokenizer is built from, as GGUF stores it under
// tokenizer.ggml.*: token texts, scores, types, merges, special ids and
// flags. Loaded from a GGUF file (load_vocab), written into one
// (write_vocab, for the training export), or built in memory
// (byte_level_bpe_builder, for tests and the export).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"

namespace tachyon {

class gguf_file;
class gguf_writer;

using token_id = int32_t;
inline constexpr token_id no_token = -1;

// tokenizer.ggml.model
enum class vocab_model {
    spm,  // "llama": SentencePiece, score-ordered merges, byte fallback
    bpe,  // "gpt2": byte-level BPE with ranked merges and a pre-tokenizer
};

// tokenizer.ggml.token_type values.
enum class token_type : int32_t {
    undefined = 0,
    normal = 1,
    unknown = 2,
    control = 3,       // BOS, EOS, <|im_start|>: matched in text only when parsing specials
    user_defined = 4,  // added tokens: always matched in text as a whole
    unused = 5,
    byte = 6,          // <0xNN> byte-fallback pieces of SentencePiece
};

struct vocab {
    vocab_model model = vocab_model::bpe;
    std::string pre = "default";             // tokenizer.ggml.pre (BPE pre-tokenizer)
    std::vector<std::string> tokens;         // [n_tokens] token texts
    std::vector<float> scores;               // [n_tokens] or empty (SPM merge priority)
    std::vector<token_type> types;           // [n_tokens]
    std::vector<std::string> merges;         // [n_merges] "left right", rank = index (BPE)

    token_id bos_id = no_token;
    token_id eos_id = no_token;
    token_id eot_id = no_token;  // end of turn (<|eot_id|>, <|im_end|>)
    token_id eom_id = no_token;  // end of message (Llama 3.1 tool calls)
    token_id unk_id = no_token;
    token_id pad_id = no_token;

    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = false;  // SPM dummy prefix: "Hello" is encoded as " Hello"

    std::string chat_template;  // tokenizer.chat_template, empty when absent

    size_t n_tokens() const { return tokens.size(); }
};

// Reads tokenizer.ggml.* from `file`. Missing required keys, arrays of
// mismatched length and out-of-range special ids are errors naming the file
// and the key. Defaults follow the reference implementations: SPM adds BOS
// and the dummy prefix, BPE adds neither.
result<vocab> load_vocab(const gguf_file& file);

// Writes `v` as tokenizer.ggml.* keys (and tokenizer.chat_template).
void write_vocab(gguf_writer& writer, const vocab& v);

// Builds a byte-level BPE vocabulary in memory: the 256 byte tokens, one
// token per merge (in merge order), then special tokens. Merges are given as
// raw byte strings; the builder maps them to GPT-2's byte-level alphabet.
class byte_level_bpe_builder {
public:
    byte_level_bpe_builder();

    // Adds the merge left+right (both must already be tokens); returns the
    // id of the merged token. Merging to an existing token adds only the rule.
    token_id add_merge(std::string_view left, std::string_view right);
    // Adds a control (special) or user-defined token; returns its id.
    token_id add_special(std::string_view text, token_type type = token_type::control);

    // Id of the (non-special) token with these raw bytes, or no_token.
    token_id find(std::string_view raw) const;

    // The finished vocabulary with tokenizer.ggml.pre = `pre`.
    vocab build(std::string pre = "gpt-2") const;

private:
    vocab vocab_;
    std::unordered_map<std::string, token_id> normal_ids_;  // raw bytes → id, normal tokens only
};

// GPT-2's reversible byte ↔ printable-code-point mapping used by byte-level
// BPE vocabularies (space is 'Ġ' U+0120, newline 'Ċ' U+010A).
uint32_t byte_to_code_point(uint8_t byte);
// The byte a code point stands for, or -1 if it is not in the mapping.
int code_point_to_byte(uint32_t cp);
// `raw` bytes in the byte-level alphabet (UTF-8).
std::string bytes_to_byte_level(std::string_view raw);

}  // namespace tachyon
