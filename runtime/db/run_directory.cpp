#include "runtime/db/run_directory.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "base/log.h"
#include "runtime/db/schema.h"

namespace tachyon::db {
namespace asio = boost::asio;

namespace {

// A request's statement is cancelled by the server after this long (one
// stuck on a lock answers with an error instead of holding its HTTP
// request, and the directory's close, for good).
constexpr const char* directory_statement_timeout = "SET statement_timeout = 30000";

// A request connection on `ex`, with the statement timeout set.
result<std::unique_ptr<pg_connection>> connect_for_requests(const std::string& url, asio::any_io_executor ex) {
    auto c = pg_connection::connect(url, std::move(ex));
    if (!c) return c.err();
    if (auto st = (*c)->exec_script(directory_statement_timeout); !st) return st.err();
    return c;
}

}  // namespace

template <class T>
asio::awaitable<T> run_directory::on_pool(std::function<asio::awaitable<T>(pg_connection&)> op) {
    // co_spawn's completion needs a default-constructible value: an
    // optional carries the result back.
    auto body = [this, op = std::move(op)]() -> asio::awaitable<std::optional<T>> {
        auto taken = co_await take();
        if (!taken) co_return std::optional<T>(T(taken.err()));
        // Back to the pool however the query ends, an exception included.
        struct lease {
            run_directory* d;
            pg_connection* c;
            ~lease() { d->give_back(c); }
        } held{this, *taken};
        T value = co_await op(*held.c);
        co_return std::optional<T>(std::move(value));
    };
    // Once closed, the thread may be gone: nothing is sent there.
    if (closed_.load()) co_return T(make_error(errc::cancelled, "database '" + name_ + "': the server is shutting down"));
    std::optional<T> out;
    try {
        out = co_await asio::co_spawn(io_, std::move(body), asio::use_awaitable);
    } catch (const std::exception& e) {
        TACHYON_LOG(error, __func__ << ": database " << name_ << ": " << e.what());
    }
    if (!out) co_return T(make_error(errc::internal, "database '" + name_ + "': internal error in a query"));
    co_return std::move(*out);
}

asio::awaitable<result<pg_connection*>> run_directory::take() {
    for (;;) {
        if (stopping_) co_return make_error(errc::cancelled, "database '" + name_ + "': the server is shutting down");
        if (!idle_.empty()) {
            pg_connection* c = idle_.back();
            idle_.pop_back();
            co_return c;
        }
        if (static_cast<int>(connections_.size()) < max_connections_) {
            // Blocking, on the directory's thread: a connect costs a few
            // milliseconds, and happens only while the pool grows to what
            // the load needs (connections are kept).
            auto c = connect_for_requests(url_, io_.get_executor());
            if (!c) co_return c.err();
            connections_.push_back(std::move(c).value());
            n_open_.store(static_cast<int>(connections_.size()));
            co_return connections_.back().get();
        }
        // All in use: wait for one to come back (give_back cancels the timer).
        auto t = std::make_shared<asio::steady_timer>(io_, asio::steady_timer::time_point::max());
        waiters_.push_back(t);
        (void)co_await t->async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

void run_directory::give_back(pg_connection* c) {
    if (c->ready()) {
        idle_.push_back(c);
    } else {
        // Broken, or left inside a query: replaced by a new one when needed.
        std::erase_if(connections_, [c](const std::unique_ptr<pg_connection>& p) { return p.get() == c; });
        n_open_.store(static_cast<int>(connections_.size()));
    }
    if (!waiters_.empty()) {
        waiters_.front()->cancel();
        waiters_.pop_front();
    }
}

result<std::unique_ptr<run_directory>> run_directory::open(const std::string& url, std::function<void(const std::string& id)> changed,
                                                           int max_connections) {
    std::unique_ptr<run_directory> d(new run_directory());
    d->url_ = url;
    d->max_connections_ = std::max(1, max_connections);
    auto req = connect_for_requests(url, d->io_.get_executor());
    if (!req) return req.err();
    if (auto m = migrate(**req); !m) return m.err();
    d->name_ = (*req)->name();
    d->idle_.push_back(req->get());
    d->connections_.push_back(std::move(req).value());
    d->n_open_.store(1);
    auto lis = pg_connection::connect(url, d->io_.get_executor());
    if (!lis) return lis.err();
    d->listener_ = std::move(lis).value();
    d->changed_ = std::move(changed);
    if (auto st = d->listener_->exec_script("LISTEN tachyon_events; LISTEN tachyon_runs"); !st) return st.err();
    run_directory* self = d.get();
    asio::co_spawn(
        d->io_,
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
    d->work_.emplace(d->io_.get_executor());
    d->thread_ = std::thread([self] { self->io_.run(); });
    return d;
}

void run_directory::close() {
    if (closed_.exchange(true)) return;
    if (!thread_.joinable()) return;
    asio::post(io_, [this] {
        stopping_ = true;
        listener_->interrupt();
        for (auto& t : waiters_) t->cancel();
        waiters_.clear();
    });
    // The thread runs until nothing is left: requests in flight answer,
    // new ones are refused, the listener stops.
    work_.reset();
    thread_.join();
}

run_directory::~run_directory() { close(); }

asio::awaitable<status> run_directory::enqueue(std::string id, std::string agent, std::string task, std::map<std::string, std::string> inputs,
                                               std::string traceparent) {
    std::function<asio::awaitable<status>(pg_connection&)> op = [id = std::move(id), agent = std::move(agent), task = std::move(task),
                                                                 inputs = std::move(inputs), traceparent = std::move(traceparent)](pg_connection& c) {
        return db::enqueue(c, id, agent, task, inputs, traceparent);
    };
    co_return co_await on_pool<status>(std::move(op));
}

asio::awaitable<result<std::optional<run_snapshot>>> run_directory::snapshot(std::string id, int64_t from_seq) {
    using snapshot_result = result<std::optional<run_snapshot>>;
    std::function<asio::awaitable<snapshot_result>(pg_connection&)> op = [id = std::move(id),
                                                                          from_seq](pg_connection& c) -> asio::awaitable<snapshot_result> {
        auto row = co_await get_run(c, id);
        if (!row) co_return row.err();
        if (!*row) co_return std::optional<run_snapshot>{};
        run_snapshot s;
        s.row = std::move(**row);
        auto events = co_await events_since(c, id, from_seq);
        if (!events) co_return events.err();
        s.events = std::move(events).value();
        co_return std::optional<run_snapshot>(std::move(s));
    };
    co_return co_await on_pool<snapshot_result>(std::move(op));
}

asio::awaitable<result<bool>> run_directory::request_resume(std::string id, int64_t epoch, std::vector<call_decision> decisions) {
    std::function<asio::awaitable<result<bool>>(pg_connection&)> op = [id = std::move(id), epoch,
                                                                       decisions = std::move(decisions)](pg_connection& c) {
        return db::request_resume(c, id, epoch, decisions);
    };
    co_return co_await on_pool<result<bool>>(std::move(op));
}

asio::awaitable<result<std::optional<std::string>>> run_directory::request_cancel(std::string id) {
    using cancel_result = result<std::optional<std::string>>;
    std::function<asio::awaitable<cancel_result>(pg_connection&)> op = [id = std::move(id)](pg_connection& c) {
        return db::request_cancel(c, id);
    };
    co_return co_await on_pool<cancel_result>(std::move(op));
}

asio::awaitable<result<std::pair<std::vector<run_row>, bool>>> run_directory::list(run_page_query q) {
    using list_result = result<std::pair<std::vector<run_row>, bool>>;
    std::function<asio::awaitable<list_result>(pg_connection&)> op = [q = std::move(q)](pg_connection& c) { return list_runs(c, q); };
    co_return co_await on_pool<list_result>(std::move(op));
}

}  // namespace tachyon::db
