#include "tools/logformat/log_level.h"

namespace tachyon::logformat {

std::string_view to_string(severity s) {
    switch (s) {
        case severity::trace: return "trace";
        case severity::debug: return "debug";
        case severity::info: return "info";
        case severity::notice: return "notice";
        case severity::warn: return "warn";
        case severity::error: return "error";
        case severity::critical: return "critical";
        case severity::fatal: return "fatal";
        case severity::unknown: break;
    }
    return "unknown";
}

std::optional<severity> severity_from_word(std::string_view word) {
    if (word.empty() || word.size() > 11) return std::nullopt;
    char buf[11];
    for (std::size_t i = 0; i < word.size(); ++i) {
        char c = word[i];
        buf[i] = (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
    }
    const std::string_view w(buf, word.size());
    if (w == "error" || w == "err" || w == "eror" || w == "failure" || w == "severe") return severity::error;
    if (w == "warn" || w == "warning" || w == "wrn") return severity::warn;
    if (w == "info" || w == "information" || w == "informational" || w == "inf") return severity::info;
    if (w == "notice") return severity::notice;
    if (w == "debug" || w == "dbg" || w == "dbug" || w == "fine" || w == "config") return severity::debug;
    if (w == "trace" || w == "verbose" || w == "finer" || w == "finest" || w == "trc") return severity::trace;
    if (w == "critical" || w == "crit" || w == "alert") return severity::critical;
    if (w == "fatal" || w == "emerg" || w == "emergency" || w == "panic" || w == "dpanic") return severity::fatal;
    return std::nullopt;
}

std::optional<severity> severity_from_letter(char c) {
    switch (c) {
        case 'V': return severity::trace;
        case 'D': return severity::debug;
        case 'I': return severity::info;
        case 'N': return severity::notice;
        case 'W': return severity::warn;
        case 'E': return severity::error;
        case 'C': return severity::critical;
        case 'F': case 'A': return severity::fatal;
        default: return std::nullopt;
    }
}

severity severity_from_syslog(int value) {
    switch (value & 7) {
        case 0: return severity::fatal;
        case 1: case 2: return severity::critical;
        case 3: return severity::error;
        case 4: return severity::warn;
        case 5: return severity::notice;
        case 6: return severity::info;
        default: return severity::debug;
    }
}

std::optional<severity> severity_from_number(std::int64_t v) {
    if (v >= 0 && v <= 7) return severity_from_syslog(int(v));
    switch (v) {
        case 10: return severity::trace;
        case 20: return severity::debug;
        case 30: return severity::info;
        case 40: return severity::warn;
        case 50: return severity::error;
        case 60: return severity::fatal;
        default: return std::nullopt;
    }
}

std::optional<severity> severity_from_http_status(int status) {
    if (status >= 100 && status < 400) return severity::info;
    if (status >= 400 && status < 500) return severity::warn;
    if (status >= 500 && status < 600) return severity::error;
    return std::nullopt;
}

}  // namespace tachyon::logformat
