#pragma once
// How the virtual fleet talks HTTP to kilnd: requests queued on a bounded set of keep-alive
// connections (docs/DEPENDENCIES.md: at most ~20,000 fds per process, so never a socket per host).
// The interface keeps the fleet's logic testable with a scripted fake.

#include <chrono>
#include <functional>
#include <string>

#include "common/result.h"

namespace kiln::vfleet {

// Reports and enrolments go before polls when connections are short.
enum class Priority { kHigh = 0, kNormal = 1 };

struct HttpRequest {
  std::string method = "GET";
  std::string target;  // path and query, already percent-encoded
  std::string token;   // sent as "Authorization: Bearer <token>" when not empty
  std::string body;    // JSON when not empty
  Priority priority = Priority::kNormal;
  std::chrono::milliseconds timeout{30000};  // from the moment a connection takes it
  // Asked when a connection takes the request; false drops it unsent (`done` gets
  // kUnavailable): a poll that waited in the queue while a newer one of its host was made.
  std::function<bool()> wanted;
};

struct HttpResponse {
  int status = 0;
  std::string body;
};

using ResponseHandler = std::function<void(Result<HttpResponse>)>;

class Transport {
 public:
  virtual ~Transport() = default;
  // Queues `request`. `done` runs exactly once on the loop thread, never before send returns:
  // with the response (any HTTP status), or kUnavailable (refused, reset, closed) / kTimeout.
  virtual void send(HttpRequest request, ResponseHandler done) = 0;
};

}  // namespace kiln::vfleet
