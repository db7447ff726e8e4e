// The OTLP/HTTP collector of otlp_receiver.h: a Beast server on loopback
// on a thread of its own.
#include "tests/runtime/telemetry/otlp_receiver.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cctype>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>

namespace otlp_test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct receiver::impl {
    impl() : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
        asio::co_spawn(io_, accept_loop(), asio::detached);
        thread_ = std::thread([this] { io_.run(); });
    }
    ~impl() {
        io_.stop();
        thread_.join();
    }

    unsigned short port() const { return acceptor_.local_endpoint().port(); }
    void script(std::vector<scripted_answer> answers) {
        std::lock_guard lock(mutex_);
        script_.assign(answers.begin(), answers.end());
    }
    void hang(bool on) {
        std::lock_guard lock(mutex_);
        hang_ = on;
    }
    std::vector<received_request> requests() const {
        std::lock_guard lock(mutex_);
        return requests_;
    }

    asio::awaitable<void> accept_loop() {
        for (;;) {
            auto [ec, socket] = co_await acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
            if (ec) co_return;
            asio::co_spawn(io_, serve(std::move(socket)), asio::detached);
        }
    }

    asio::awaitable<void> serve(asio::ip::tcp::socket socket) {
        beast::tcp_stream stream(std::move(socket));
        beast::flat_buffer buffer;
        for (;;) {
            http::request<http::string_body> req;
            auto [ec, n] = co_await http::async_read(stream, buffer, req, asio::as_tuple(asio::use_awaitable));
            if (ec) co_return;
            scripted_answer answer;
            bool hang = false;
            {
                std::lock_guard lock(mutex_);
                received_request r;
                r.target = std::string(req.target());
                for (const auto& f : req) {
                    std::string name(f.name_string());
                    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                    r.headers[name] = std::string(f.value());
                }
                r.body = req.body();
                requests_.push_back(std::move(r));
                hang = hang_;
                if (!script_.empty()) {
                    answer = script_.front();
                    script_.pop_front();
                }
            }
            if (hang) {
                // Holds the connection until the client gives up.
                asio::steady_timer t(stream.get_executor(), std::chrono::hours(1));
                co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
                co_return;
            }
            http::response<http::string_body> res{static_cast<http::status>(answer.status), req.version()};
            res.set(http::field::content_type, "application/json");
            if (!answer.retry_after.empty()) res.set(http::field::retry_after, answer.retry_after);
            res.body() = answer.status == 200 ? "{}" : "{\"message\":\"scripted\"}";
            res.keep_alive(req.keep_alive());
            res.prepare_payload();
            auto [wec, wn] = co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
            if (wec || !req.keep_alive()) co_return;
        }
    }

    asio::io_context io_;
    asio::ip::tcp::acceptor acceptor_;
    std::thread thread_;
    mutable std::mutex mutex_;
    std::deque<scripted_answer> script_;
    bool hang_ = false;
    std::vector<received_request> requests_;
};

receiver::receiver() : impl_(std::make_unique<impl>()) {}
receiver::~receiver() = default;
unsigned short receiver::port() const { return impl_->port(); }
void receiver::script(std::vector<scripted_answer> answers) { impl_->script(std::move(answers)); }
void receiver::hang(bool on) { impl_->hang(on); }
std::vector<received_request> receiver::requests() const { return impl_->requests(); }

}  // namespace otlp_test
