// tachyon C++ SDK: how the SDK reports an expected failure (a bad agent
// file, a model that does not load, a bad setting). Every SDK function that
// can fail returns result<T>: either the value or an error whose message
// names the input and what was expected. No SDK function throws, except
// result<T>::value() on an error, which throws bad_result_access (as
// std::expected does) for callers who prefer exceptions.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace tachyon::sdk {

// What kind of failure; the message says which input and why.
enum class errc {
    invalid_argument,    // the caller passed something malformed
    not_found,           // a file, tool, key ... does not exist
    io_error,            // the OS refused (open, read, mmap)
    parse_error,         // bytes that do not follow the expected format
    unsupported,         // well-formed, but not something tachyon handles
    out_of_range,        // a count or size past a limit
    timeout,
    cancelled,
    resource_exhausted,  // a queue, context or memory budget is full
    internal,
};

// The name of an error code ("invalid_argument").
std::string_view to_string(errc code);

struct error {
    errc code = errc::internal;
    std::string message;  // names the input: "agents/a.json: budgets.max_steps: expected an integer in [1, 1000], got 0"
};

// Thrown by result<T>::value() when the result holds an error.
class bad_result_access : public std::runtime_error {
public:
    explicit bad_result_access(sdk::error e) : std::runtime_error(e.message), error_(std::move(e)) {}
    // The error the result held.
    const sdk::error& error() const noexcept { return error_; }

private:
    sdk::error error_;
};

// A value, or the error that prevented it.
template <class T>
class [[nodiscard]] result {
public:
    // A successful result, from anything T is made from (a string literal for result<std::string>).
    template <class U = T>
        requires(std::is_constructible_v<T, U &&> && !std::is_same_v<std::remove_cvref_t<U>, result> &&
                 !std::is_same_v<std::remove_cvref_t<U>, sdk::error>)
    result(U&& value) : state_(std::in_place_index<0>, std::forward<U>(value)) {}
    // A failed result.
    result(sdk::error err) : state_(std::in_place_index<1>, std::move(err)) {}

    // True when the result holds a value.
    bool ok() const noexcept { return state_.index() == 0; }
    // Same as ok().
    explicit operator bool() const noexcept { return ok(); }

    // The value; throws bad_result_access when the result holds an error.
    T& value() & { check(); return std::get<0>(state_); }
    // The value; throws bad_result_access when the result holds an error.
    const T& value() const& { check(); return std::get<0>(state_); }
    // The value, moved out; throws bad_result_access when the result holds an error.
    T&& value() && { check(); return std::get<0>(std::move(state_)); }
    // The error; an empty internal error when the result holds a value.
    const sdk::error& error() const noexcept {
        static const sdk::error none{errc::internal, ""};
        return ok() ? none : std::get<1>(state_);
    }

    // Access to the value (throws as value() does).
    T& operator*() & { return value(); }
    // Access to the value (throws as value() does).
    const T& operator*() const& { return value(); }
    // Access to the value (throws as value() does).
    T* operator->() { return &value(); }
    // Access to the value (throws as value() does).
    const T* operator->() const { return &value(); }

private:
    void check() const {
        if (!ok()) throw bad_result_access(std::get<1>(state_));
    }
    std::variant<T, sdk::error> state_;
};

// Success or the error that prevented it.
template <>
class [[nodiscard]] result<void> {
public:
    // Success.
    result() = default;
    // A failure.
    result(sdk::error err) : error_(std::move(err)), ok_(false) {}

    // True on success.
    bool ok() const noexcept { return ok_; }
    // Same as ok().
    explicit operator bool() const noexcept { return ok_; }
    // Throws bad_result_access on a failure (the counterpart of value()).
    void value() const {
        if (!ok_) throw bad_result_access(error_);
    }
    // The error; an empty internal error on success.
    const sdk::error& error() const noexcept { return error_; }

private:
    sdk::error error_;
    bool ok_ = true;
};

}  // namespace tachyon::sdk
