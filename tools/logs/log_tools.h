// The incident tools over a log_store: list_services, error_summary,
// search_logs, read_lines (log_tools.cpp) and get_trace, recent_changes,
// verify_root_cause (trace_tools.cpp). Every tool of one root shares one
// store, loaded on the first call. Results are compact text, capped, in a
// deterministic order, with line ids "service:line" ready to copy.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tools/logs/log_store.h"
#include "tools/core/tool.h"
#include "tools/core/tool_args.h"

namespace tachyon::tools {

// Loads the store, parses the arguments against `allowed` keys and turns an
// exception inside a call into an error result.
// Where a tool finds its store at each call (log_store_cache::get for a
// root, or one fixed store); never returns null.
using log_store_getter = std::function<std::shared_ptr<log_store>()>;

class log_tool : public tool {
public:
    explicit log_tool(std::shared_ptr<log_store> store) : get_store_([store] { return store; }) {}
    explicit log_tool(log_store_getter get_store) : get_store_(std::move(get_store)) {}
    tool_flags flags() const override { return {.read_only = true, .idempotent = true}; }  // they only read the store
    result<std::string> invoke(std::string_view arguments_json, const call_context& ctx) final;

protected:
    virtual std::vector<std::string_view> argument_names() const = 0;
    virtual result<std::string> run(const log_store& store, const tool_args& args, const call_context& ctx) = 0;
    error cancelled() const;

private:
    log_store_getter get_store_;
};

#define TACHYON_LOG_TOOL(class_name)                                                       \
    class class_name final : public log_tool {                                             \
    public:                                                                                \
        using log_tool::log_tool;                                                          \
        std::string_view name() const override;                                           \
        std::string_view description() const override;                                    \
        std::string_view parameters_schema() const override;                               \
                                                                                           \
    protected:                                                                             \
        std::vector<std::string_view> argument_names() const override;          \
        result<std::string> run(const log_store& store, const tool_args& args, const call_context& ctx) override; \
    }

TACHYON_LOG_TOOL(list_services_tool);
TACHYON_LOG_TOOL(error_summary_tool);
TACHYON_LOG_TOOL(search_logs_tool);
TACHYON_LOG_TOOL(read_lines_tool);
TACHYON_LOG_TOOL(get_trace_tool);
TACHYON_LOG_TOOL(recent_changes_tool);
TACHYON_LOG_TOOL(verify_root_cause_tool);

#undef TACHYON_LOG_TOOL

}  // namespace tachyon::tools
