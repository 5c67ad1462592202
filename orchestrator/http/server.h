#pragma once
// Kiln's own small HTTP server interface. The only implementation today wraps cpprestsdk's
// http_listener (server_cpprest.cc, the one file that includes it), so a swap to Boost.Beast
// stays cheap (DEPENDENCIES.md: upstream cpprestsdk is archived).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace kiln::http {

struct Request {
  std::string method;                          // "GET", "POST", ...
  std::string path;                            // percent-decoded, without the query
  std::map<std::string, std::string> query;    // decoded; a repeated key keeps the last value
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  std::string remote;

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Call exactly once, from any thread.
using Reply = std::function<void(Response)>;

class Handler {
 public:
  virtual ~Handler() = default;
  // Called with the request line and headers, before the body is read. Return a response to
  // refuse the request (e.g. 413 when content_length exceeds the route's limit) or nullopt to
  // read the body and go on. Must be cheap and must not block.
  virtual std::optional<Response> admit(const Request& head,
                                        std::optional<std::uint64_t> content_length) = 0;
  // Called with the whole request. Must not block the calling (network) thread: do slow work on
  // another thread and call reply when done.
  virtual void handle(Request request, Reply reply) = 0;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string tls_cert_file;  // both set: serve HTTPS
  std::string tls_key_file;
  // Requests in flight (long polls included) above which new ones get 503 + Connection: close
  // (DEPENDENCIES.md: the process has at most 20,000 file descriptors).
  int max_in_flight = 18000;
};

class Server {
 public:
  virtual ~Server() = default;
  virtual Status start() = 0;
  // Stops accepting requests, waits up to `drain_ms` for requests in flight, then closes.
  virtual void stop(int drain_ms) = 0;
  virtual int inFlight() const = 0;
};

std::unique_ptr<Server> makeServer(const ServerOptions& options, Handler& handler);

// Process-wide set-up of the network thread pool; call once from main before makeServer or
// any HTTP client (DEPENDENCIES.md: 2-8 threads beat the default 40).
void initializeNetworkThreads(int threads);

}  // namespace kiln::http
