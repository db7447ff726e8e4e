// The llama-family decoder that every architecture of families.h runs on
// (Llama 2/3, Mistral, Ministral 3, Qwen2/3, Granite, SmolLM3, Phi-3/4,
// Gemma 2/3, the shipped incident model): RMSNorm, RoPE, grouped-query
// attention, a gated FFN, tied or separate output, with each family's
// additions.
#pragma once

#include <memory>

#include "inference/arch/model.h"

namespace tachyon::arch {

// Binds the family named by general.architecture; an unknown one is an
// error naming the supported ones.
result<std::unique_ptr<model>> load_decoder(std::unique_ptr<gguf_file> file, const load_options& options);

}  // namespace tachyon::arch
