#include "inference/engine/draft.h"

#include <doctest/doctest.h>

using namespace tachyon;

TEST_CASE("prompt lookup copies what followed the latest earlier occurrence of the context's suffix") {
    // ... 7 8 9 [1 2 3] 4 5 6 ... 1 2 3  → the draft continues with 4 5 6 ...
    std::vector<int32_t> ctx{7, 8, 9, 1, 2, 3, 4, 5, 6, 10, 11, 1, 2, 3};
    CHECK(prompt_lookup_draft(ctx, {.n_draft = 3}) == std::vector<int32_t>{4, 5, 6});
    CHECK(prompt_lookup_draft(ctx, {.n_draft = 100}) == std::vector<int32_t>{4, 5, 6, 10, 11, 1, 2, 3});

    // The latest occurrence wins.
    std::vector<int32_t> twice{1, 2, 50, 1, 2, 60, 1, 2};
    CHECK(prompt_lookup_draft(twice, {.n_draft = 1}) == std::vector<int32_t>{60});

    // The longest suffix that occurs is tried first: [5 1 2] occurred before 70, [1 2] last before 60.
    std::vector<int32_t> longest{5, 1, 2, 70, 9, 1, 2, 60, 5, 1, 2};
    CHECK(prompt_lookup_draft(longest, {.n_draft = 1}) == std::vector<int32_t>{70});
}

TEST_CASE("prompt lookup proposes nothing without an earlier match of at least min_ngram tokens") {
    CHECK(prompt_lookup_draft(std::vector<int32_t>{1, 2, 3, 4}, {}).empty());
    CHECK(prompt_lookup_draft(std::vector<int32_t>{}, {}).empty());
    // A single repeated token is below min_ngram = 2 ...
    std::vector<int32_t> one{4, 9, 5, 4};
    CHECK(prompt_lookup_draft(one, {}).empty());
    // ... unless asked for.
    CHECK(prompt_lookup_draft(one, {.min_ngram = 1, .n_draft = 2}) == std::vector<int32_t>{9, 5});
    CHECK(prompt_lookup_draft(std::vector<int32_t>{1, 2, 1, 2}, {.n_draft = 0}).empty());
}
