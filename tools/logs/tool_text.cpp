#include "tools/logs/tool_text.h"

#include <charconv>

namespace tachyon::tools {

std::string cut(std::string_view s, std::size_t max) {
    if (s.size() <= max) return std::string(s);
    std::size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // not inside a UTF-8 sequence
    return std::string(s.substr(0, n)) + "...";
}

std::string line_id(std::string_view service, std::uint32_t line) {
    return std::string(service) + ":" + std::to_string(line);
}

std::optional<std::pair<std::string, std::uint32_t>> parse_line_id(std::string_view id) {
    std::size_t colon = id.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 >= id.size()) return std::nullopt;
    std::uint32_t line = 0;
    auto digits = id.substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), line);
    if (ec != std::errc() || end != digits.data() + digits.size() || line == 0) return std::nullopt;
    return std::make_pair(std::string(id.substr(0, colon)), line);
}

result<std::int64_t> time_argument(const tool_args& args, std::string_view key, const log_store& store) {
    auto v = args.string(key);
    if (!v) return v.err();
    if (!v->has_value()) return no_time;
    auto t = parse_time_argument(**v, store.first_time());
    if (!t)
        return args.fail(std::string("'").append(key) + "' must be a UTC time like 2026-03-14T14:05:00Z or 14:05; got '" +
                         cut(**v, 40) + "'");
    return *t;
}

std::string unknown_service_message(std::string_view name, const log_store& store) {
    std::string out = "unknown service '" + cut(name, 60) + "'; services:";
    std::size_t n = 0;
    for (const auto& s : store.services()) {
        if (++n > 30) {
            out += " ...";
            break;
        }
        out += (n == 1 ? " " : ", ") + s.name;
    }
    return out;
}

result<int> service_argument(const tool_args& args, std::string_view key, const log_store& store) {
    auto v = args.string(key);
    if (!v) return v.err();
    if (!v->has_value()) return -1;
    int s = store.find_service(**v);
    if (s < 0) return args.fail(unknown_service_message(**v, store));
    return s;
}

}  // namespace tachyon::tools
