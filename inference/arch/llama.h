// The llama family (Llama 2/3, Mistral, Qwen2, SmolLM, the shipped incident
// model): RMSNorm, RoPE, grouped-query attention, SwiGLU, tied or separate
// output. Qwen2 adds biases to Q, K and V and rotates NeoX-style.
#pragma once

#include <memory>

#include "inference/arch/model.h"

namespace tachyon::arch {

result<std::unique_ptr<model>> load_llama(std::unique_ptr<gguf_file> file);

}  // namespace tachyon::arch
