#include "runtime/agent/agent_service.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <future>
#include <thread>

namespace tachyon {
namespace asio = boost::asio;

struct agent_service::impl {
    service_options options;
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    asio::thread_pool tool_pool;
    std::vector<std::thread> io_threads;
    std::mutex mutex;
    std::map<std::string, std::shared_ptr<model_host>> hosts;
    std::map<std::string, std::shared_ptr<call_predictor>> predictors;  // per agent: what its runs taught
    std::vector<std::weak_ptr<std::atomic<bool>>> cancels;
    std::shared_ptr<mcp_sessions> mcp = std::make_shared<mcp_sessions>();  // every agent's MCP servers, started on first use

    explicit impl(const service_options& o) : options(o), tool_pool(static_cast<size_t>(std::max(1, o.n_tool_threads))) {
        for (int i = 0; i < std::max(1, o.n_io_threads); ++i) io_threads.emplace_back([this] { io.run(); });
    }
    ~impl() {
        work.reset();
        io.stop();
        for (auto& t : io_threads) t.join();
        tool_pool.join();
    }
};

agent_service::agent_service(const service_options& options) : impl_(std::make_unique<impl>(options)) {}
agent_service::~agent_service() = default;

result<std::shared_ptr<model_host>> agent_service::host(const std::string& model_path, std::string_view chat_format) {
    std::lock_guard lock(impl_->mutex);
    auto it = impl_->hosts.find(model_path);
    if (it != impl_->hosts.end()) return it->second;
    auto h = model_host::open(model_path, impl_->options.engine, chat_format);
    if (!h) return h.err();
    impl_->hosts.emplace(model_path, *h);
    return *h;
}

void agent_service::add_host(const std::string& model_path, std::shared_ptr<model_host> host) {
    std::lock_guard lock(impl_->mutex);
    impl_->hosts[model_path] = std::move(host);
}

void agent_service::start(run_request request, run_observer* observer, std::shared_ptr<std::atomic<bool>> cancel,
                          std::function<void(run_outcome)> done) {
    if (!cancel) cancel = std::make_shared<std::atomic<bool>>(false);
    {
        std::lock_guard lock(impl_->mutex);
        impl_->cancels.push_back(cancel);
    }
    run_environment env;
    env.remote = impl_->options.remote ? impl_->options.remote : request.agent->remote;
    auto h = env.remote ? result<std::shared_ptr<model_host>>(nullptr) : host(request.agent->model, request.agent->chat_format);
    if (!h) {
        run_outcome out;
        out.state = "failed";
        out.error = h.err().message;
        asio::post(impl_->io, [done = std::move(done), out] { done(out); });
        return;
    }
    env.host = *h;
    env.tool_pool = &impl_->tool_pool;
    env.observer = observer;
    env.cancel = cancel;
    env.mcp = impl_->mcp;
    env.tracer = impl_->options.tracer;
    {
        std::lock_guard lock(impl_->mutex);
        auto& p = impl_->predictors[request.agent->file + "\n" + request.agent->name];
        if (!p) p = std::make_shared<call_predictor>();
        env.predictor = p;
    }
    asio::co_spawn(asio::make_strand(impl_->io), run_agent(std::move(env), std::move(request)),
                   [done = std::move(done)](std::exception_ptr e, run_outcome out) {
                       if (e) {
                           out = run_outcome{};
                           out.state = "failed";
                           out.error = "internal error in the agent loop";
                       }
                       done(std::move(out));
                   });
}

run_outcome agent_service::run(run_request request, run_observer* observer, std::shared_ptr<std::atomic<bool>> cancel) {
    std::promise<run_outcome> p;
    auto f = p.get_future();
    start(std::move(request), observer, std::move(cancel), [&p](run_outcome o) { p.set_value(std::move(o)); });
    return f.get();
}

void agent_service::cancel_all() {
    std::lock_guard lock(impl_->mutex);
    for (auto& w : impl_->cancels)
        if (auto c = w.lock()) c->store(true);
}

}  // namespace tachyon
