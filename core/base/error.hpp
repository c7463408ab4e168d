#pragma once
/// \file
/// The one error channel of core/: a code from the project's enum plus a
/// message that names what was wrong (key, file, tensor, dimension).
/// core/ returns errors as values; actors turn them into caf::error.

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace vlcache {

enum class errc {
  invalid_argument,  ///< a value out of range or inconsistent with the config
  invalid_image,     ///< empty frame, wrong channels or depth, wrong size
  invalid_config,    ///< a configuration key with a bad type or value
  not_found,         ///< a file, stream or entry that does not exist
  io_error,          ///< reading or decoding failed
  capacity,          ///< a bounded resource cannot hold the request
  busy,              ///< a bounded queue is full now: ask again later
  cancelled,         ///< stopped before it finished (the pipeline is stopping); nobody failed
};

[[nodiscard]] const char* to_string(errc code) noexcept;

struct error {
  errc code;
  std::string message;
};

/// A value or an error. Minimal on purpose: C++17 has no std::expected.
template <class T>
class [[nodiscard]] expected {
 public:
  expected(T value) : v_(std::move(value)) {}
  expected(error err) : v_(std::move(err)) {}

  [[nodiscard]] bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { assert(has_value()); return std::get<0>(v_); }
  const T& value() const& { assert(has_value()); return std::get<0>(v_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

  [[nodiscard]] const error& err() const { assert(!has_value()); return std::get<1>(v_); }

 private:
  std::variant<T, error> v_;
};

/// Success or an error, for operations without a result value.
class [[nodiscard]] status {
 public:
  status() = default;
  status(error err) : err_(std::move(err)) {}
  [[nodiscard]] bool ok() const noexcept { return !err_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  [[nodiscard]] const error& err() const { assert(!ok()); return *err_; }

 private:
  std::optional<error> err_;
};

}  // namespace vlcache
