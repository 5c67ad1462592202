#include "common/result.h"

#include <cstdio>
#include <cstdlib>

namespace kiln {

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kInvalidContent: return "invalid_content";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kMethodNotAllowed: return "method_not_allowed";
    case ErrorCode::kConflict: return "conflict";
    case ErrorCode::kUnauthenticated: return "unauthenticated";
    case ErrorCode::kPermissionDenied: return "permission_denied";
    case ErrorCode::kTooLarge: return "payload_too_large";
    case ErrorCode::kPreconditionFailed: return "precondition_failed";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kInternal: return "internal";
  }
  return "internal";
}

int httpStatus(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return 400;
    case ErrorCode::kInvalidContent: return 422;
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kMethodNotAllowed: return 405;
    case ErrorCode::kConflict: return 409;
    case ErrorCode::kUnauthenticated: return 401;
    case ErrorCode::kPermissionDenied: return 403;
    case ErrorCode::kTooLarge: return 413;
    case ErrorCode::kPreconditionFailed: return 412;
    case ErrorCode::kUnavailable: return 503;
    case ErrorCode::kTimeout: return 504;
    case ErrorCode::kInternal: return 500;
  }
  return 500;
}

std::ostream& operator<<(std::ostream& os, const Error& e) {
  os << errorCodeName(e.code) << ": " << e.message;
  for (const auto& f : e.fields) os << "\n  " << f.path << ": " << f.message;
  for (const auto& [k, v] : e.details) os << " [" << k << "=" << v << "]";
  return os;
}

void checkFailed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "KILN_CHECK failed: %s at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace kiln
