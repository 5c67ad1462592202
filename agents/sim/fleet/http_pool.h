#pragma once
// Transport over plain HTTP/1.1 keep-alive connections (Boost.Beast on one io_context): at
// most `max_connections` sockets, however many hosts; requests wait in two queues (reports and
// enrolments before polls) for a free connection. A request that fails on a reused connection
// the server had closed is retried once on a fresh one. TLS is not supported (the demo and the
// tests talk to kilnd on loopback).

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "agents/sim/fleet/transport.h"
#include "common/result.h"

namespace boost::asio {
class io_context;
}

namespace kiln::vfleet {

struct HttpPoolOptions {
  std::string host = "127.0.0.1";
  std::string port = "8080";
  int max_connections = 1024;
  std::chrono::milliseconds connect_timeout{5000};
};

struct HttpPoolStats {
  std::size_t open = 0;     // connections
  std::size_t busy = 0;     // connections carrying a request
  std::size_t queued = 0;   // requests waiting for a connection
  std::uint64_t connects = 0;
  std::uint64_t failures = 0;  // requests that failed in transport
};

class HttpPool : public Transport {
 public:
  // Resolves host:port now (blocking). kUnavailable when it cannot.
  static Result<std::unique_ptr<HttpPool>> create(boost::asio::io_context& io,
                                                  HttpPoolOptions options);
  ~HttpPool() override;

  // Thread-safety: call send, shutdown and stats from the io_context's thread only.
  void send(HttpRequest request, ResponseHandler done) override;
  // Closes every connection: requests queued or in flight fail with kUnavailable.
  void shutdown();
  HttpPoolStats stats() const;

  struct Impl;

 private:
  explicit HttpPool(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// "http://host:port[/]" -> {host, port} (port 80 when absent). kInvalidArgument otherwise
// (https included).
Result<std::pair<std::string, std::string>> parseHttpUrl(const std::string& url);

}  // namespace kiln::vfleet
