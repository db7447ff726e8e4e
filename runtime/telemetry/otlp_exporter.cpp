#include "runtime/telemetry/otlp_exporter.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "base/log.h"
#include "runtime/remote/remote_model.h"

namespace tachyon::telemetry {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

struct attempt_result {
    unsigned status = 0;  // 0: no HTTP answer (see error)
    std::optional<std::chrono::milliseconds> retry_after;
    std::string error;
};

bool retryable(unsigned status) { return status == 429 || status == 502 || status == 503 || status == 504; }

}  // namespace

struct otlp_exporter::impl {
    exporter_options options;
    resource_info resource;
    remote::endpoint where;
    std::string target;  // the request target of the traces URL

    asio::io_context io;
    asio::steady_timer wake{io};     // the batch delay; cancelled to send at once
    asio::steady_timer backoff{io};  // between attempts of one export
    std::thread thread;

    std::mutex mutex;
    std::condition_variable changed;  // queue drained, batch finished, loop ended (waited on by flush and the destructor only)
    std::deque<span> queue;
    size_t in_flight = 0;
    bool send_now = false;
    bool stopping = false;
    bool loop_ended = false;
    std::atomic<uint64_t> dropped{0}, exported{0}, failed_batches{0};

    impl(exporter_options o, resource_info r) : options(std::move(o)), resource(std::move(r)) {}

    void poke() {
        asio::post(io, [this] { wake.cancel(); });
    }

    asio::awaitable<attempt_result> post_once(const std::string& body) {
        attempt_result out;
        tcp::resolver resolver(io);
        beast::tcp_stream stream(io);
        // One deadline for the whole attempt: connect, write and read.
        stream.expires_after(options.timeout);
        auto [rec, endpoints] = co_await resolver.async_resolve(where.host, where.port, tuple_awaitable);
        if (rec) {
            out.error = "cannot resolve " + where.host + ": " + rec.message();
            co_return out;
        }
        auto [cec, ep] = co_await stream.async_connect(endpoints, tuple_awaitable);
        if (cec) {
            out.error = cec == beast::error::timeout ? "no connection within the export timeout" : "cannot connect: " + cec.message();
            co_return out;
        }
        http::request<http::string_body> req{http::verb::post, target, 11};
        req.set(http::field::host, where.host + ":" + where.port);
        req.set(http::field::user_agent, "tachyon");
        req.set(http::field::content_type, "application/json");
        for (const auto& [k, v] : options.headers) req.set(k, v);
        req.body() = body;
        req.prepare_payload();
        auto [wec, wn] = co_await http::async_write(stream, req, tuple_awaitable);
        if (wec) {
            out.error = wec == beast::error::timeout ? "the export timed out while sending" : "sending failed: " + wec.message();
            co_return out;
        }
        beast::flat_buffer buffer;
        http::response_parser<http::string_body> parser;
        parser.body_limit(64 * 1024);  // a collector's answer is small; a partial-success message at most
        auto [hec, hn] = co_await http::async_read(stream, buffer, parser, tuple_awaitable);
        if (hec) {
            out.error = hec == beast::error::timeout ? "no answer within the export timeout" : "reading the answer failed: " + hec.message();
            co_return out;
        }
        out.status = parser.get().result_int();
        const std::string_view ra(parser.get()[http::field::retry_after]);
        int64_t s = 0;
        if (auto [p, ec] = std::from_chars(ra.data(), ra.data() + ra.size(), s); !ra.empty() && ec == std::errc() && s >= 0)
            out.retry_after = std::min<std::chrono::milliseconds>(std::chrono::seconds(s), options.max_retry_after);
        if (out.status < 200 || out.status >= 300) {
            std::string why = parser.get().body().substr(0, 200);
            out.error = "answered " + std::to_string(out.status) + (why.empty() ? "" : ": " + why);
        }
        beast::error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
        co_return out;
    }

    // True: the collector took the batch.
    asio::awaitable<bool> send(const std::vector<span>& batch) {
        const std::string body = otlp_json(resource, batch);
        auto delay = options.first_backoff;
        for (int attempt = 1;; ++attempt) {
            attempt_result r = co_await post_once(body);
            if (r.status >= 200 && r.status < 300) co_return true;
            bool stop = false;
            {
                std::lock_guard lock(mutex);
                stop = stopping;
            }
            if (!retryable(r.status) || attempt >= options.max_attempts || stop) {
                // Logged for the first failure and then every power of two,
                // so that a dead collector does not flood the log.
                const uint64_t n = ++failed_batches;
                if ((n & (n - 1)) == 0)
                    TACHYON_LOG(warn, "otlp export to " << options.traces_url << ": " << r.error << "; " << batch.size()
                                                       << " span(s) dropped (" << n << " failed export(s) so far)");
                co_return false;
            }
            backoff.expires_after(r.retry_after ? *r.retry_after : delay);
            delay *= 2;
            co_await backoff.async_wait(tuple_awaitable);
        }
    }

    asio::awaitable<void> loop() {
        for (;;) {
            bool wait = false;
            {
                std::lock_guard lock(mutex);
                wait = !stopping && !send_now && queue.size() < options.max_batch;
            }
            if (wait) {
                wake.expires_after(options.batch_delay);
                co_await wake.async_wait(tuple_awaitable);
            }
            for (;;) {
                std::vector<span> batch;
                {
                    std::lock_guard lock(mutex);
                    send_now = false;
                    const size_t n = std::min(queue.size(), options.max_batch);
                    for (size_t k = 0; k < n; ++k) {
                        batch.push_back(std::move(queue.front()));
                        queue.pop_front();
                    }
                    in_flight = batch.size();
                }
                if (batch.empty()) break;
                const bool ok = co_await send(batch);
                (ok ? exported : dropped) += batch.size();
                {
                    std::lock_guard lock(mutex);
                    in_flight = 0;
                }
                changed.notify_all();
            }
            changed.notify_all();
            std::lock_guard lock(mutex);
            if (stopping) break;
        }
        {
            std::lock_guard lock(mutex);
            loop_ended = true;
        }
        changed.notify_all();
    }
};

otlp_exporter::otlp_exporter(std::shared_ptr<impl> p) : impl_(std::move(p)) {}

result<std::unique_ptr<otlp_exporter>> otlp_exporter::create(exporter_options options, resource_info resource) {
    if (options.traces_url.rfind("http://", 0) != 0)
        return make_error(errc::invalid_argument, "OTLP traces endpoint '" + options.traces_url +
                                                      "': expected an http:// URL (https: put a local TLS proxy in front of the collector)");
    auto where = remote::parse_endpoint(options.traces_url);
    if (!where) return make_error(where.err().code, "OTLP traces endpoint: " + where.err().message);
    if (options.max_batch == 0 || options.max_queue == 0 || options.max_attempts < 1)
        return make_error(errc::invalid_argument, "OTLP exporter: max_batch, max_queue and max_attempts must be at least 1");
    auto p = std::make_shared<impl>(std::move(options), std::move(resource));
    p->where = *where;
    p->target = p->where.base_target.empty() ? "/" : p->where.base_target;
    asio::co_spawn(p->io, p->loop(), asio::detached);
    p->thread = std::thread([raw = p.get()] { raw->io.run(); });
    return std::unique_ptr<otlp_exporter>(new otlp_exporter(std::move(p)));
}

otlp_exporter::~otlp_exporter() {
    impl& s = *impl_;
    // What the process made is worth a short wait, never a long one: a
    // collector that does not answer is cut off.
    flush(std::min<std::chrono::milliseconds>(s.options.timeout, std::chrono::milliseconds(2000)));
    {
        std::unique_lock lock(s.mutex);
        s.stopping = true;
        asio::post(s.io, [&s] {
            s.wake.cancel();
            s.backoff.cancel();
        });
        s.changed.wait_for(lock, std::chrono::milliseconds(200), [&] { return s.loop_ended; });
    }
    s.io.stop();
    s.thread.join();
    s.dropped += s.queue.size() + s.in_flight;
}

void otlp_exporter::submit(span s) {
    bool full_batch = false;
    {
        std::lock_guard lock(impl_->mutex);
        if (impl_->queue.size() >= impl_->options.max_queue) {
            ++impl_->dropped;
            return;
        }
        impl_->queue.push_back(std::move(s));
        full_batch = impl_->queue.size() == impl_->options.max_batch;
    }
    if (full_batch) impl_->poke();
}

bool otlp_exporter::flush(std::chrono::milliseconds wait) {
    impl& s = *impl_;
    std::unique_lock lock(s.mutex);
    if (s.loop_ended) return s.queue.empty();
    s.send_now = true;
    s.poke();
    return s.changed.wait_for(lock, wait, [&] { return s.queue.empty() && s.in_flight == 0; });
}

uint64_t otlp_exporter::n_dropped() const { return impl_->dropped.load(); }
uint64_t otlp_exporter::n_exported() const { return impl_->exported.load(); }
const exporter_options& otlp_exporter::options() const { return impl_->options; }

}  // namespace tachyon::telemetry
