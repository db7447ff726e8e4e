// A tool for the MCP server tests: its call waits until it is cancelled, and
// tells when it has started and when it saw the cancellation.
#pragma once

#include <atomic>
#include <chrono>
#include <string_view>
#include <thread>

#include "tools/core/tool.h"

namespace mcp_test {

class waiting_tool final : public tachyon::tools::tool {
public:
    std::string_view name() const override { return "wait"; }
    std::string_view description() const override { return "Waits until cancelled."; }
    std::string_view parameters_schema() const override { return R"({"type":"object","properties":{}})"; }
    tachyon::result<std::string> invoke(std::string_view, const tachyon::tools::call_context& ctx) override {
        started = true;
        while (!ctx.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        saw_cancel = true;
        return tachyon::make_error(tachyon::errc::cancelled, "wait: cancelled");
    }
    std::atomic<bool> started{false}, saw_cancel{false};
};

}  // namespace mcp_test
