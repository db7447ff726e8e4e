#include "runtime/db/run_directory.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include "base/log.h"
#include "runtime/db/schema.h"

namespace tachyon::db {
namespace asio = boost::asio;

template <class T>
T run_directory::block_on(asio::awaitable<T> op) {
    // co_spawn's own completion would need a default-constructible T: the
    // value is kept here instead.
    std::lock_guard lock(request_mutex_);
    std::optional<T> out;
    asio::co_spawn(
        request_io_, [&]() -> asio::awaitable<void> { out.emplace(co_await std::move(op)); },
        [&](std::exception_ptr e) {
            if (e) out.emplace(make_error(errc::internal, "database '" + name_ + "': internal error in a query"));
        });
    request_io_.restart();
    request_io_.run();
    return std::move(*out);
}

result<std::unique_ptr<run_directory>> run_directory::open(const std::string& url, std::function<void(const std::string& id)> changed) {
    std::unique_ptr<run_directory> d(new run_directory());
    auto req = pg_connection::connect(url, d->request_io_.get_executor());
    if (!req) return req.err();
    d->requests_ = std::move(req).value();
    if (auto m = migrate(*d->requests_); !m) return m.err();
    auto lis = pg_connection::connect(url, d->listen_io_.get_executor());
    if (!lis) return lis.err();
    d->listener_ = std::move(lis).value();
    d->name_ = d->requests_->name();
    d->changed_ = std::move(changed);
    if (auto st = d->listener_->exec_script("LISTEN tachyon_events; LISTEN tachyon_runs"); !st) return st.err();
    run_directory* self = d.get();
    asio::co_spawn(
        d->listen_io_,
        [self]() -> asio::awaitable<void> {
            while (!self->stopping_) {
                auto n = co_await self->listener_->async_wait_notifications(std::chrono::seconds(1));
                if (!n) {
                    // Watchers then see no new events until the server restarts; requests still answer.
                    TACHYON_LOG(error, "run_directory: listening on " << self->name_ << ": " << n.err().message);
                    co_return;
                }
                for (const auto& note : *n) {
                    // tachyon_events: "<id>"; tachyon_runs: "<id> <state>".
                    const std::string id = note.payload.substr(0, note.payload.find(' '));
                    if (self->changed_ && !id.empty()) self->changed_(id);
                }
            }
        },
        asio::detached);
    d->listen_thread_ = std::thread([self] { self->listen_io_.run(); });
    return d;
}

run_directory::~run_directory() {
    asio::post(listen_io_, [this] {
        stopping_ = true;
        listener_->interrupt();
    });
    if (listen_thread_.joinable()) listen_thread_.join();
}

status run_directory::enqueue(const std::string& id, const std::string& agent, const std::string& task,
                              const std::map<std::string, std::string>& inputs) {
    return block_on(db::enqueue(*requests_, id, agent, task, inputs));
}

result<std::optional<run_snapshot>> run_directory::snapshot(const std::string& id, int64_t from_seq) {
    return block_on([this, id, from_seq]() -> asio::awaitable<result<std::optional<run_snapshot>>> {
        auto row = co_await get_run(*requests_, id);
        if (!row) co_return row.err();
        if (!*row) co_return std::optional<run_snapshot>{};
        run_snapshot s;
        s.row = std::move(**row);
        auto events = co_await events_since(*requests_, id, from_seq);
        if (!events) co_return events.err();
        s.events = std::move(events).value();
        co_return std::optional<run_snapshot>(std::move(s));
    }());
}

result<bool> run_directory::request_resume(const std::string& id, int64_t epoch, const std::vector<call_decision>& decisions) {
    return block_on(db::request_resume(*requests_, id, epoch, decisions));
}

result<std::optional<std::string>> run_directory::request_cancel(const std::string& id) {
    return block_on(db::request_cancel(*requests_, id));
}

result<std::pair<std::vector<run_row>, bool>> run_directory::list(const run_page_query& q) {
    return block_on(db::list_runs(*requests_, q));
}

}  // namespace tachyon::db
