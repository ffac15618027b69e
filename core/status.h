// Status and Expected<T>: how every library function in blockflow reports failure.
//
//   Expected<Tensor> t = ReadNpy("w.npy");
//   if (!t.ok()) return t.status();
//   RETURN_IF_ERROR(SaveGraphFile(graph, "copy.json"));
//   ASSIGN_OR_RETURN(Tensor w, ReadNpy("w.npy"));
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace blockflow {

/// Broad kind of a failure; the message carries the details.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kFailedPrecondition,
  kCancelled,
  kInternal,
  kIo
};

/// The result of an operation that returns nothing: OK or an error with a message.
class [[nodiscard]] Status {
 public:
  /// An OK status.
  Status() = default;
  /// An error status (code must not be kOk).
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  /// The OK status.
  static Status OK() { return Status(); }

  /// True when no error occurred.
  bool ok() const { return code_ == StatusCode::kOk; }
  /// The kind of error.
  StatusCode code() const { return code_; }
  /// The human-readable error message (empty when OK).
  const std::string& message() const { return message_; }
  /// Returns a copy whose message is `prefix + message()`.
  Status WithPrefix(const std::string& prefix) const {
    return ok() ? *this : Status(code_, prefix + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

/// An invalid-argument error: bad attribute, shape, dtype or input.
inline Status InvalidArgument(std::string msg) {
  return Status(StatusCode::kInvalidArgument, std::move(msg));
}
/// A not-found error: unknown op, node, port or file.
inline Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
/// An internal error: a bug in blockflow.
inline Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }
/// An I/O error: unreadable or unwritable file.
inline Status IoError(std::string msg) { return Status(StatusCode::kIo, std::move(msg)); }
/// The run was cancelled.
inline Status Cancelled(std::string msg = "cancelled") {
  return Status(StatusCode::kCancelled, std::move(msg));
}

/// A value of type T or an error Status (like C++23 std::expected).
template <typename T>
class [[nodiscard]] Expected {
 public:
  /// Holds a value.
  Expected(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  /// Holds an error; `status` must not be OK.
  Expected(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Internal("Expected constructed from an OK status");
  }

  /// True when a value is held.
  bool ok() const { return value_.has_value(); }
  /// The error (OK when a value is held).
  const Status& status() const { return status_; }
  /// The value; must be ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

namespace internal {
[[noreturn]] inline void CheckFailed(const char* file, int line, const char* cond,
                                     const std::string& msg) {
  std::fprintf(stderr, "%s:%d: CHECK failed: %s %s\n", file, line, cond, msg.c_str());
  std::abort();
}
inline const Status& AsStatus(const Status& s) { return s; }
template <typename T>
const Status& AsStatus(const Expected<T>& e) {
  return e.status();
}
}  // namespace internal

}  // namespace blockflow

/// Aborts with a message when a programmer invariant is broken.
#define BF_CHECK(cond, ...)                                                                    \
  do {                                                                                         \
    if (!(cond))                                                                               \
      ::blockflow::internal::CheckFailed(__FILE__, __LINE__, #cond, std::string(__VA_ARGS__)); \
  } while (0)

/// Returns the error from the enclosing function when `expr` (a Status or Expected) failed.
#define RETURN_IF_ERROR(expr)                                                          \
  do {                                                                                 \
    /* A copy: `expr` may be a temporary, or a reference into one (`f().status()`). */ \
    ::blockflow::Status bf_status_ = ::blockflow::internal::AsStatus(expr);            \
    if (!bf_status_.ok()) return bf_status_;                                           \
  } while (0)

#define BF_CONCAT_INNER_(a, b) a##b
#define BF_CONCAT_(a, b) BF_CONCAT_INNER_(a, b)
/// `ASSIGN_OR_RETURN(T x, expr)`: declares x from an Expected, or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(BF_CONCAT_(bf_expected_, __LINE__), lhs, expr)
// `lhs` is a declaration and `tmp` a name, so neither can take parentheses.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
