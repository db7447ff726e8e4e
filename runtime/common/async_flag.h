// A one-shot event a coroutine can await on its strand: set() wakes every
// waiter, and a wait after set() returns at once. Built on a steady_timer
// that never expires by itself (cancel() is the signal), the usual Asio
// idiom for a condition without blocking a thread.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace tachyon {

class async_flag {
public:
    explicit async_flag(const boost::asio::any_io_executor& ex) : timer_(ex, boost::asio::steady_timer::time_point::max()) {}

    // Call on the owning strand.
    void set() {
        set_ = true;
        timer_.cancel();
    }
    bool is_set() const { return set_; }

    boost::asio::awaitable<void> wait() {
        while (!set_) co_await timer_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    }

private:
    boost::asio::steady_timer timer_;
    bool set_ = false;
};

}  // namespace tachyon
