// Prompt-lookup drafting for speculative decoding: the next tokens are
// guessed by finding the latest earlier place where the context's last few
// tokens occurred and copying what followed there. Agents copy a great deal
// (trace ids, service names, log lines from tool results), so the guesses
// are often right; the engine verifies a draft in one batched forward and
// keeps the longest prefix the model itself would have produced.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tachyon {

struct draft_options {
    int max_ngram = 4;  // longest suffix tried first
    int min_ngram = 2;  // shorter suffixes are too often coincidences
    int n_draft = 8;    // tokens proposed at most
};

// Up to n_draft tokens that followed the latest earlier occurrence of the
// longest suffix of `context` (between max_ngram and min_ngram tokens) that
// occurs earlier. Empty when none does. Cost: one backward scan per n-gram size.
std::vector<int32_t> prompt_lookup_draft(std::span<const int32_t> context, const draft_options& options);

}  // namespace tachyon
