// Writing models: re-quantizing an existing GGUF model to another weight
// type, and making a llama model with random weights of a given shape (for
// benchmarks and tests; it has the shapes of a real model, not its skills).
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "inference/gguf/tensor_type.h"

namespace tachyon {

// Copies `in` to `out` with every 2-D weight matrix converted to `type`
// (f32, f16, bf16, q8_0 or q4_0); vectors (norms, biases) stay f32 and all
// metadata is kept. Matrices whose row length does not fit the type's block
// size stay as they are.
status requantize_model(const std::string& in, const std::string& out, tensor_type type);

struct synthetic_llama_shape {
    // general.architecture: "llama", "qwen2" (adds Q/K/V biases) or "qwen3"
    // (adds per-head Q/K norms); the same decoder shape otherwise.
    std::string arch = "llama";
    int n_vocab = 32000;
    int n_embd = 512;
    int n_layer = 8;
    int n_head = 8;
    int n_head_kv = 4;
    int n_ff = 1408;
    int n_ctx = 2048;
    bool tied_output = true;
    // A GGUF file whose tokenizer.* keys the model takes (its vocabulary
    // size then replaces n_vocab); empty: no tokenizer, for token ids only.
    std::string vocab_from;
    // The tokenizer.chat_template text to write (a family's template, for
    // chat tests on random weights); empty: the vocabulary file's, if any.
    std::string chat_template;
};

// Writes a GGUF of the shape's architecture with weights drawn from
// N(0, 0.02²) (norms 1, biases 0) in `type`, with the shape's tokenizer and
// chat template.
status write_synthetic_llama(const std::string& path, const synthetic_llama_shape& shape, tensor_type type, uint64_t seed);

}  // namespace tachyon
