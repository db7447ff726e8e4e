// The decoder families tachyon runs, one row each: what the blocks of a
// general.architecture hold (arch_traits) and how its hyper-parameters are
// read from the <arch>.* keys. The forward pass over them is one
// (llama.cpp); adding a family is a row here, plus its tensors' binding
// where they differ.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "inference/arch/model.h"

namespace tachyon::arch {

// The traits of `arch`, or nullptr when tachyon does not run it.
const arch_traits* find_family(std::string_view arch);

// "llama, mistral, qwen2, ...": every architecture find_family knows.
std::string family_names();

// Reads every hyper-parameter of the family from `file` into hp (arch,
// name and traits set by the caller; n_vocab comes from the tensors). A
// missing required key, a value out of range or of the wrong type, and a
// feature tachyon lacks are errors naming the file and the key.
status read_hparams(const gguf_file& file, model_hparams& hp);

// The frequency factors (θ_j divided by them) that Llama 3's converter
// writes as rope_freqs for rope.scaling.type llama3: 1 for the fast pairs,
// `factor` for the slow ones, blended in between.   out: [n_rot / 2]
void llama3_freq_factors(float* out, int n_rot, float base, float factor, int n_ctx_orig, float low_freq_factor,
                         float high_freq_factor);

}  // namespace tachyon::arch
