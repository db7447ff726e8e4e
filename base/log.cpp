#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace tachyon {
namespace {

log_level initial_level() {
    if (const char* env = std::getenv("TACHYON_LOG")) {
        if (auto level = parse_log_level(env)) return *level;
    }
    return log_level::warn;
}

std::atomic<int>& level_slot() {
    static std::atomic<int> level{static_cast<int>(initial_level())};
    return level;
}

void stderr_sink(std::string_view line) {
    // One write() per line: concurrent lines never interleave mid-line.
    ssize_t rc = ::write(STDERR_FILENO, line.data(), line.size());
    (void)rc;
}

std::atomic<log_sink>& sink_slot() {
    static std::atomic<log_sink> sink{&stderr_sink};
    return sink;
}

const auto start_time = std::chrono::steady_clock::now();

}  // namespace

std::optional<log_level> parse_log_level(std::string_view name) {
    if (name == "trace") return log_level::trace;
    if (name == "debug") return log_level::debug;
    if (name == "info") return log_level::info;
    if (name == "warn" || name == "warning") return log_level::warn;
    if (name == "error") return log_level::error;
    if (name == "off" || name == "none") return log_level::off;
    return std::nullopt;
}

std::string_view to_string(log_level level) {
    switch (level) {
        case log_level::trace: return "trace";
        case log_level::debug: return "debug";
        case log_level::info: return "info";
        case log_level::warn: return "warn";
        case log_level::error: return "error";
        case log_level::off: return "off";
    }
    return "?";
}

void set_log_level(log_level level) { level_slot().store(static_cast<int>(level)); }
log_level current_log_level() { return static_cast<log_level>(level_slot().load(std::memory_order_relaxed)); }
void set_log_sink(log_sink sink) { sink_slot().store(sink ? sink : &stderr_sink); }

void log_write(log_level level, std::string_view message) {
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
    char prefix[48];
    int n = std::snprintf(prefix, sizeof prefix, "[%9.3f %-5s] ", seconds, to_string(level).data());
    std::string line;
    line.reserve(static_cast<size_t>(n) + message.size() + 1);
    line.append(prefix, static_cast<size_t>(n));
    line.append(message);
    line.push_back('\n');
    sink_slot().load()(line);
}

}  // namespace tachyon
