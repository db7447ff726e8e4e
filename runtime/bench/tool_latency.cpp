#include "runtime/bench/tool_latency.h"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace tachyon {
namespace asio = boost::asio;

result<tool_latency> parse_tool_latency(const std::string& spec) {
    tool_latency l;
    if (spec == "none" || spec == "0") return l;
    double median = 0, p95 = 0;
    char tail = 0;
    if (std::sscanf(spec.c_str(), "lognormal:%lf:%lf%c", &median, &p95, &tail) == 2 && median > 0 && p95 >= median) {
        l.median_ms = median;
        l.p95_ms = p95;
        return l;
    }
    return make_error(errc::invalid_argument, "--tool-latency '" + spec + "': expected none or lognormal:MEDIAN_MS:P95_MS (P95 >= MEDIAN > 0)");
}

double latency_source::next_ms() {
    if (model_.median_ms <= 0) return 0;
    // ln(p95 / median) = sigma * z_0.95.
    const double sigma = model_.p95_ms > model_.median_ms ? std::log(model_.p95_ms / model_.median_ms) / 1.6448536 : 0.0;
    std::lock_guard lock(mutex_);
    // A fresh distribution per draw: one standard normal value per call, so
    // that a call's wait depends only on how many calls started before it.
    std::normal_distribution<double> z(0.0, 1.0);
    return model_.median_ms * std::exp(sigma * z(rng_));
}

namespace {

class latency_tool final : public tools::tool {
public:
    latency_tool(std::shared_ptr<tools::tool> inner, std::shared_ptr<latency_source> source)
        : inner_(std::move(inner)), source_(std::move(source)) {}

    std::string_view name() const override { return inner_->name(); }
    std::string_view description() const override { return inner_->description(); }
    std::string_view parameters_schema() const override { return inner_->parameters_schema(); }
    tools::tool_flags flags() const override { return inner_->flags(); }
    result<std::string> invoke(std::string_view arguments_json, const tools::call_context& ctx) override {
        return inner_->invoke(arguments_json, ctx);
    }

    // The wait comes before the inner tool begins: the work itself, and its
    // time on the pool, is the real tool's.
    void begin(const tools::call_start& start, std::function<void()> work) override {
        const double ms = source_->next_ms();
        if (ms <= 0) {
            inner_->begin(start, std::move(work));
            return;
        }
        auto timer = std::make_shared<asio::steady_timer>(start.executor, std::chrono::microseconds(static_cast<int64_t>(ms * 1000)));
        timer->async_wait(asio::bind_cancellation_slot(
            start.cut_off, [timer, inner = inner_, start = tools::call_start(start), work = std::move(work)](boost::system::error_code ec) mutable {
                // The wait is over: its cancellation handler goes (it names the
                // timer, gone after this), so that the call's later cut-off
                // signal, emitted when it finishes, finds nothing to cancel.
                start.cut_off.clear();
                if (!ec) inner->begin(start, std::move(work));
            }));
    }

private:
    std::shared_ptr<tools::tool> inner_;
    std::shared_ptr<latency_source> source_;
};

}  // namespace

std::shared_ptr<tools::tool> with_latency(std::shared_ptr<tools::tool> inner, std::shared_ptr<latency_source> source) {
    return std::make_shared<latency_tool>(std::move(inner), std::move(source));
}

tool_wrapper latency_wrapper(const tool_latency& model) {
    if (model.median_ms <= 0) return {};
    auto source = std::make_shared<latency_source>(model);
    return [source](std::shared_ptr<tools::tool> t) { return with_latency(std::move(t), source); };
}

}  // namespace tachyon
