// The TLOG logits file: how `tachyon logits` writes the logits of a token
// sequence and reads another engine's for comparison. Little-endian: the
// ASCII magic "TLOG", u32 version (1), u32 n_pos, u32 n_vocab, then
// n_pos * n_vocab float32 values, position-major.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"

namespace tachyon {

struct logits_table {
    uint32_t n_pos = 0;
    uint32_t n_vocab = 0;
    std::vector<float> values;  // [n_pos, n_vocab]
};

status write_logits_file(const std::string& path, const logits_table& t);
// Errors name the file and what was expected (magic, version, size).
result<logits_table> read_logits_file(const std::string& path);

struct logits_difference {
    double rel_rms = 0;  // sqrt(sum (a-b)^2 / sum b^2), b the reference
    double max_abs = 0;
    int argmax_equal = 0;  // positions whose largest logit is at the same id
};
// `a` against the reference `ref`; their shapes must agree.
result<logits_difference> compare_logits(const logits_table& a, const logits_table& ref);

}  // namespace tachyon
