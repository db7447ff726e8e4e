#include "inference/engine/draft.h"

#include <algorithm>

namespace tachyon {

std::vector<int32_t> prompt_lookup_draft(std::span<const int32_t> context, const draft_options& options) {
    const size_t n = context.size();
    if (options.n_draft <= 0) return {};
    for (int g = options.max_ngram; g >= std::max(options.min_ngram, 1); --g) {
        const size_t ng = static_cast<size_t>(g);
        if (n < ng + 1) continue;
        auto suffix = context.subspan(n - ng, ng);
        // Latest occurrence that ends before the suffix itself and has a continuation.
        for (size_t start = n - ng; start-- > 0;) {
            if (!std::equal(suffix.begin(), suffix.end(), context.begin() + static_cast<std::ptrdiff_t>(start))) continue;
            const size_t from = start + ng;
            const size_t len = std::min(static_cast<size_t>(options.n_draft), n - from);
            return {context.begin() + static_cast<std::ptrdiff_t>(from), context.begin() + static_cast<std::ptrdiff_t>(from + len)};
        }
    }
    return {};
}

}  // namespace tachyon
