#pragma once
// A small blocking HTTP client for kilnctl, tests and benchmarks (not for request handlers:
// it blocks the calling thread). Wraps cpprestsdk's http_client in client_cpprest.cc.

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "common/result.h"

namespace kiln::http {

struct ClientOptions {
  std::string base_url = "http://127.0.0.1:8080";  // scheme://host:port
  std::string token;                                // sent as "Authorization: Bearer <token>"
  std::string ca_file;                              // verify an HTTPS server against this CA
  std::chrono::milliseconds timeout{30000};
  // Both set: present this client certificate (PEM chain) and key over HTTPS (mutual TLS).
  std::string client_cert_file, client_key_file;
};

struct ClientResponse {
  int status = 0;
  std::string body;
  std::string content_type;
  std::map<std::string, std::string> headers;  // lower-case names
};

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends a request; `path_and_query` is already percent-encoded. Transport failures (refused,
  // timeout, TLS) are kUnavailable; any HTTP status is a ClientResponse. Thread-safe.
  Result<ClientResponse> request(const std::string& method, const std::string& path_and_query,
                                 const std::string& body = "",
                                 const std::string& content_type = "application/json",
                                 const std::map<std::string, std::string>& headers = {});

  const ClientOptions& options() const { return options_; }

 private:
  struct Impl;
  ClientOptions options_;
  std::unique_ptr<Impl> impl_;
};

// Percent-encodes a query value or path segment.
std::string urlEncode(const std::string& s);

// Process-wide set-up of cpprest's thread pool, which runs the clients' I/O; call once from main
// before any Client (docs/DEPENDENCIES.md: 2-8 threads beat the default 40).
void initializeNetworkThreads(int threads);

}  // namespace kiln::http
