// TACHYON_ASSERT: a broken invariant is a bug; abort with file, line and a
// message rather than run on with corrupt state. Expected failures (bad input,
// failing tools) return tachyon::result instead. Active in every build type:
// the checks guard memory safety and cost little next to the work they guard.
#pragma once

#include <string_view>

namespace tachyon::detail {
[[noreturn]] void assert_fail(const char* expr, const char* file, int line, std::string_view message);
}  // namespace tachyon::detail

#define TACHYON_ASSERT(cond, message)                                                  \
    do {                                                                               \
        if (!(cond)) [[unlikely]]                                                      \
            ::tachyon::detail::assert_fail(#cond, __FILE__, __LINE__, (message));      \
    } while (false)
