// result<T>: the value of an operation that can fail in an expected way (bad
// file, bad request, failing tool). The error carries a category and a message
// that names the input and what was expected. Broken invariants use
// TACHYON_ASSERT instead (assert.h).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "base/assert.h"

namespace tachyon {

enum class errc {
    invalid_argument,  // the caller passed something malformed
    not_found,         // a file, key, tensor, tool, run ... does not exist
    io_error,          // the OS refused (open, read, mmap, write)
    parse_error,       // bytes that do not follow the expected format
    unsupported,       // well-formed, but not something tachyon handles
    out_of_range,      // a count, size or offset past a limit
    timeout,
    cancelled,
    resource_exhausted,  // a queue, context or memory budget is full
    internal,
};

std::string_view to_string(errc code);

struct error {
    errc code = errc::internal;
    std::string message;

    // "parse_error: model.gguf: tensor 'blk.0.attn_q.weight': offset past end of file"
    std::string describe() const;
};

inline error make_error(errc code, std::string message) { return error{code, std::move(message)}; }

template <class T>
class [[nodiscard]] result {
public:
    result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
    result(error err) : state_(std::in_place_index<1>, std::move(err)) {}

    bool ok() const { return state_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & {
        TACHYON_ASSERT(ok(), "result::value() on an error: " + std::get<1>(state_).message);
        return std::get<0>(state_);
    }
    const T& value() const& {
        TACHYON_ASSERT(ok(), "result::value() on an error: " + std::get<1>(state_).message);
        return std::get<0>(state_);
    }
    T&& value() && {
        TACHYON_ASSERT(ok(), "result::value() on an error: " + std::get<1>(state_).message);
        return std::get<0>(std::move(state_));
    }
    const error& err() const {
        TACHYON_ASSERT(!ok(), "result::err() on a value");
        return std::get<1>(state_);
    }

    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

private:
    std::variant<T, error> state_;
};

template <>
class [[nodiscard]] result<void> {
public:
    result() = default;
    result(error err) : err_(std::move(err)), ok_(false) {}

    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    const error& err() const {
        TACHYON_ASSERT(!ok_, "result::err() on a value");
        return err_;
    }

private:
    error err_;
    bool ok_ = true;
};

using status = result<void>;

}  // namespace tachyon

// TACHYON_TRY(expr): evaluate a result-returning expression; on error return
// the error from the enclosing function.
#define TACHYON_TRY(expr)                                       \
    do {                                                        \
        auto&& tachyon_try_result_ = (expr);                    \
        if (!tachyon_try_result_.ok()) return tachyon_try_result_.err(); \
    } while (false)
