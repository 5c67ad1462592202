#pragma once
// Expected failures as values (docs/STYLE.md rule 4): adapters turn library exceptions into an
// Error; handlers turn an Error into the REST error body.

#include <cassert>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace kiln {

enum class ErrorCode {
  kInvalidArgument,   // malformed input: 400
  kInvalidContent,    // well-formed but invalid content: 422
  kNotFound,          // 404
  kMethodNotAllowed,  // 405
  kConflict,          // 409
  kUnauthenticated,   // 401
  kPermissionDenied,  // 403
  kTooLarge,          // 413
  kPreconditionFailed,  // 412: an If-Match that no longer matches
  kUnavailable,       // 503: database down, shutting down
  kTimeout,           // 504 or a step timeout
  kInternal,          // 500: a bug
};

// The snake_case name used in REST error bodies and logs.
const char* errorCodeName(ErrorCode code);
// The HTTP status for an error code.
int httpStatus(ErrorCode code);

// One bad field of an input document: `path` like "sites[0].buildings[2].pods[5].platform".
struct FieldError {
  std::string path;
  std::string message;
  bool operator==(const FieldError&) const = default;
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::vector<FieldError> fields;                // every bad field, for 422
  std::map<std::string, std::string> details;    // small extra facts (current state, ...)
  std::vector<std::string> allowed;              // e.g. actions allowed from the current state

  Error() = default;
  Error(ErrorCode c, std::string m) : code(c), message(std::move(m)) {}
  Error& with(std::string key, std::string value) {
    details[std::move(key)] = std::move(value);
    return *this;
  }
  bool operator==(const Error&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Error& e);

// Result<T>: a value or an Error. Accessing the wrong alternative is a bug and asserts.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Error& error() const { assert(!ok()); return std::get<1>(v_); }
  Error& error() { assert(!ok()); return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Status: Result without a value.
struct Ok {
  bool operator==(const Ok&) const = default;
};
using Status = Result<Ok>;
inline Status okStatus() { return Ok{}; }

inline Error invalidArgument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Error invalidContent(std::string m) { return {ErrorCode::kInvalidContent, std::move(m)}; }
inline Error notFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Error conflict(std::string m) { return {ErrorCode::kConflict, std::move(m)}; }
inline Error unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }
inline Error internalError(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }

}  // namespace kiln

// Invariants: an impossible state stops the process loudly, also in release builds.
#define KILN_CHECK(cond)                                                     \
  do {                                                                       \
    if (!(cond)) ::kiln::checkFailed(#cond, __FILE__, __LINE__);             \
  } while (0)

namespace kiln {
[[noreturn]] void checkFailed(const char* expr, const char* file, int line);
}
