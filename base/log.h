// Leveled logging to stderr. One line per message, prefixed with the time
// since start and the level, written with one write() so lines from several
// threads never interleave. The level comes from set_log_level() or from the
// TACHYON_LOG environment variable (trace, debug, info, warn, error, off).
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace tachyon {

enum class log_level { trace = 0, debug, info, warn, error, off };

std::optional<log_level> parse_log_level(std::string_view name);
std::string_view to_string(log_level level);

void set_log_level(log_level level);
log_level current_log_level();
inline bool log_enabled(log_level level) { return level >= current_log_level(); }

// Where lines go; tests redirect it. The default writes to stderr.
using log_sink = void (*)(std::string_view line);
void set_log_sink(log_sink sink);

void log_write(log_level level, std::string_view message);

}  // namespace tachyon

// TACHYON_LOG(info, "loaded " << n << " tensors from " << path);
// The stream expression is evaluated only when the level is enabled.
#define TACHYON_LOG(level, expr)                                           \
    do {                                                                   \
        if (::tachyon::log_enabled(::tachyon::log_level::level)) {         \
            std::ostringstream tachyon_log_os_;                            \
            tachyon_log_os_ << expr;                                       \
            ::tachyon::log_write(::tachyon::log_level::level, tachyon_log_os_.str()); \
        }                                                                  \
    } while (false)
