#include "tools/logs/builtin.h"

#include <charconv>
#include <memory>

#include "tools/logformat/log_time.h"
#include "tools/logs/log_store_cache.h"
#include "tools/logs/log_tools.h"

namespace tachyon::tools {

status add_log_tools(registry& tools, const std::string& root, const log_store_options& options) {
    log_store_getter store = [root, options] { return log_store_cache::shared().get(root, options); };
    TACHYON_TRY(tools.add(std::make_shared<list_services_tool>(store)));
    TACHYON_TRY(tools.add(std::make_shared<error_summary_tool>(store)));
    TACHYON_TRY(tools.add(std::make_shared<search_logs_tool>(store)));
    TACHYON_TRY(tools.add(std::make_shared<get_trace_tool>(store)));
    TACHYON_TRY(tools.add(std::make_shared<recent_changes_tool>(store)));
    TACHYON_TRY(tools.add(std::make_shared<read_lines_tool>(store)));
    TACHYON_TRY(tools.add(std::make_shared<verify_root_cause_tool>(store)));
    return {};
}

result<log_store_options> log_store_options_from(const std::map<std::string, std::string>& settings) {
    log_store_options out;
    if (auto it = settings.find("year"); it != settings.end()) {
        const std::string& v = it->second;
        int year = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), year);
        if (ec != std::errc() || end != v.data() + v.size() || year < 1970 || year > 9999)
            return make_error(errc::invalid_argument, "setting 'year' must be a year such as 2017; got '" + v + "'");
        out.year = year;
    }
    if (auto it = settings.find("tz"); it != settings.end()) {
        auto zone = logformat::parse_zone_hint(it->second);
        if (!zone)
            return make_error(errc::invalid_argument,
                              "setting 'tz' must be UTC or an offset such as +02:00 or -0700; got '" + it->second + "'");
        out.zone_minutes = *zone;
    }
    return out;
}

}  // namespace tachyon::tools
