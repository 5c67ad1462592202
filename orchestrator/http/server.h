#pragma once
// Kiln's own small HTTP server interface. The implementation is on Boost.Beast
// (server_beast.cc, the one file that includes it); it replaced cpprestsdk's http_listener
// (docs/DEPENDENCIES.md: archived upstream, no body limit before buffering, no timeouts).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
  // The names of the client certificate the TLS handshake verified (its subject CN and DNS
  // subject alternative names), when the server asks for one (ServerOptions::client_ca_file)
  // and the client sent one; empty otherwise.
  std::vector<std::string> client_names;

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
  // (docs/DEPENDENCIES.md: the process has at most 20,000 file descriptors).
  int max_in_flight = 18000;
  // Open connections above which a new one is answered 503 and closed at once.
  int max_connections = 19000;
  // Threads running the connections (reading, parsing, writing; handlers that answer inline).
  int threads = 2;
  // HTTPS only: ask every client for a certificate and verify one it sends against this CA file
  // (a connection without one is still served: the handler decides who needs one; a certificate
  // that does not verify ends the handshake). Empty: no client certificates.
  std::string client_ca_file;
};

class Server {
 public:
  virtual ~Server() = default;
  virtual Status start() = 0;
  // Stops accepting requests, waits up to `drain_ms` for requests in flight, then closes.
  virtual void stop(int drain_ms) = 0;
  // Requests admitted whose answer is not written out yet (long polls included).
  virtual int inFlight() const = 0;
  // The port listened on once started (ServerOptions::port 0 picks a free one).
  virtual int port() const = 0;
};

std::unique_ptr<Server> makeServer(const ServerOptions& options, Handler& handler);

// A request target's path and query, percent-decoded (a '+' stays a '+'; a repeated key keeps
// its last value); nullopt when an escape is malformed.
std::optional<std::pair<std::string, std::map<std::string, std::string>>> splitTarget(std::string_view target);

}  // namespace kiln::http
