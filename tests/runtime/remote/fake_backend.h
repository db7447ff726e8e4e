// A small misbehaving OpenAI-compatible backend for the remote tests: a
// raw-socket HTTP server on a loopback port whose n-th connection gets the
// n-th scripted reply (the last one repeats): bytes written piece by piece,
// then a close, or a hang (nothing more said, the connection kept open).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fake_backend {

struct reply {
    std::vector<std::string> pieces;  // written one after the other, flushed apart
    bool hang = false;                // after the pieces, say nothing more until the server stops
};

// A 200 event stream of `events` (each one "data: ...\n\n"), then [DONE].
inline reply sse(const std::vector<std::string>& events, bool with_done = true) {
    reply r;
    r.pieces.push_back("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
    for (const auto& e : events) r.pieces.push_back("data: " + e + "\n\n");
    if (with_done) r.pieces.push_back("data: [DONE]\n\n");
    return r;
}

inline reply status(int code, const std::string& reason, const std::string& body, const std::string& extra_headers = {}) {
    reply r;
    r.pieces.push_back("HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\nContent-Type: application/json\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n" + extra_headers + "Connection: close\r\n\r\n" + body);
    return r;
}

class server {
public:
    explicit server(std::vector<reply> replies) : replies_(std::move(replies)), acceptor_(io_) {
        using boost::asio::ip::tcp;
        tcp::endpoint ep(boost::asio::ip::make_address("127.0.0.1"), 0);
        acceptor_.open(ep.protocol());
        acceptor_.set_option(tcp::acceptor::reuse_address(true));
        acceptor_.bind(ep);
        acceptor_.listen();
        port_ = acceptor_.local_endpoint().port();
        thread_ = std::thread([this] { serve(); });
    }
    ~server() {
        stop_ = true;
        boost::system::error_code ec;
        boost::asio::ip::tcp::socket wake(io_);
        wake.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ec);
        thread_.join();
    }
    uint16_t port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
    std::vector<std::string> requests() {
        std::lock_guard lock(mutex_);
        return requests_;
    }

private:
    void serve() {
        using boost::asio::ip::tcp;
        for (size_t n = 0;; ++n) {
            tcp::socket s(io_);
            boost::system::error_code ec;
            acceptor_.accept(s, ec);
            if (stop_ || ec) return;
            boost::asio::streambuf buf;
            const size_t head = boost::asio::read_until(s, buf, "\r\n\r\n", ec);
            if (ec) continue;
            std::string text(boost::asio::buffers_begin(buf.data()), boost::asio::buffers_end(buf.data()));
            size_t length = 0;
            if (auto at = text.find("Content-Length: "); at != std::string::npos) length = std::stoul(text.substr(at + 16));
            while (text.size() < head + length) {
                char more[4096];
                const size_t got = s.read_some(boost::asio::buffer(more), ec);
                if (ec) break;
                text.append(more, got);
            }
            {
                std::lock_guard lock(mutex_);
                requests_.push_back(text);
            }
            const reply& r = replies_[std::min(n, replies_.size() - 1)];
            for (const auto& p : r.pieces) {
                boost::asio::write(s, boost::asio::buffer(p), ec);
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
            if (r.hang) {
                while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(10));
                return;
            }
            s.shutdown(tcp::socket::shutdown_both, ec);
        }
    }

    std::vector<reply> replies_;
    boost::asio::io_context io_;
    boost::asio::ip::tcp::acceptor acceptor_;
    uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::thread thread_;
    std::mutex mutex_;
    std::vector<std::string> requests_;
};

}  // namespace fake_backend
