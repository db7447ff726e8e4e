#include "tools/mcp/mcp_tools.h"

namespace tachyon::tools::mcp {
namespace {

class mcp_tool final : public tool {
public:
    mcp_tool(std::shared_ptr<client> session, remote_tool remote) : session_(std::move(session)), remote_(std::move(remote)) {}

    std::string_view name() const override { return remote_.name; }
    std::string_view description() const override { return remote_.description; }
    std::string_view parameters_schema() const override { return remote_.input_schema; }
    tool_flags flags() const override {
        return {remote_.read_only, remote_.idempotent, session_->config().max_request_time.count()};
    }

    result<std::string> invoke(std::string_view arguments_json, const call_context& ctx) override {
        auto r = session_->call_tool(remote_.name, arguments_json, ctx.cancel, {}, ctx.traceparent);
        if (!r) return r.err();
        if (r->is_error) {
            // The tool's own words, for the model to read and act on.
            return make_error(errc::invalid_argument, r->text.empty() ? remote_.name + ": failed (the server gave no reason)" : r->text);
        }
        return std::move(r->text);
    }

private:
    std::shared_ptr<client> session_;
    remote_tool remote_;
};

}  // namespace

result<std::vector<std::shared_ptr<tool>>> make_mcp_tools(const std::shared_ptr<client>& session) {
    auto listed = session->tools();
    if (!listed) return listed.err();
    std::vector<std::shared_ptr<tool>> out;
    for (auto& t : *listed) out.push_back(std::make_shared<mcp_tool>(session, std::move(t)));
    return out;
}

}  // namespace tachyon::tools::mcp
