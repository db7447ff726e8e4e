// Small text helpers shared by the log tools: cutting lines for the model,
// line ids, time arguments and the service argument.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "tools/logs/log_store.h"
#include "tools/core/tool_args.h"

namespace tachyon::tools {

constexpr std::size_t max_line_chars = 200;

// `s` cut to `max` bytes on a UTF-8 boundary, with "..." when cut.
std::string cut(std::string_view s, std::size_t max = max_line_chars);
// "payments:1842"
std::string line_id(std::string_view service, std::uint32_t line);
// "payments:1842" -> ("payments", 1842); nullopt when not of that form.
std::optional<std::pair<std::string, std::uint32_t>> parse_line_id(std::string_view id);

// Reads an optional time argument ("since", "until"): ISO time or HH:MM[:SS]
// on the day of the logs. Returns no_time when absent.
result<std::int64_t> time_argument(const tool_args& args, std::string_view key, const log_store& store);
// Reads an optional service argument and checks that it exists. Returns -1
// when absent.
result<int> service_argument(const tool_args& args, std::string_view key, const log_store& store);
// "unknown service 'x'; services: a, b, c"
std::string unknown_service_message(std::string_view name, const log_store& store);

}  // namespace tachyon::tools
