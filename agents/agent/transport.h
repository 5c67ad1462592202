#pragma once
// How the agent reaches kilnd: one HTTP request at a time per caller, bearer token per call.
// The agent core talks to this interface only; makeHttpTransport() is the real one (over
// kiln::http::Client), tests use a scripted fake.

#include <chrono>
#include <memory>
#include <string>

#include "common/result.h"

namespace kiln::agent {

struct HttpCall {
  std::string method;  // "GET" | "POST"
  std::string path;    // path and query, already percent-encoded
  std::string body;    // JSON, may be empty
  std::string token;   // sent as "Authorization: Bearer <token>" when not empty
  // A long poll: may take up to the poll wait plus network time before it answers.
  bool long_poll = false;
};

struct HttpReply {
  int status = 0;
  std::string body;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends one request and waits for the answer. Any HTTP status is a reply; a failure to
  // reach kilnd (refused, timeout, TLS) or a call made or pending after interrupt() is
  // kUnavailable. Thread-safe: several threads may send at once.
  virtual Result<HttpReply> send(const HttpCall& call) = 0;
  // Makes calls in flight return kUnavailable promptly, and every later call too (shutdown).
  // Thread-safe; idempotent.
  virtual void interrupt() = 0;
};

struct HttpTransportOptions {
  std::string base_url;  // scheme://host:port
  std::string ca_file;   // verify an HTTPS kilnd against this CA
  // Mutual TLS (kilnd --agent-client-ca): this host's certificate (PEM chain) and key.
  std::string client_cert, client_key;
  // Deadline of a long poll (the poll wait plus slack) and of every other call.
  std::chrono::milliseconds long_poll_timeout{45000};
  std::chrono::milliseconds call_timeout{30000};
};

// The real transport. Each call runs on a short-lived thread of its own so that interrupt()
// can return without waiting for a blocked long poll; a call abandoned that way finishes (and
// is discarded) in the background, so the process should end with _Exit after shutdown.
std::unique_ptr<Transport> makeHttpTransport(const HttpTransportOptions& options);

// Sizes the process-wide network thread pool (docs/DEPENDENCIES.md: a few threads beat the default
// 40). Call once from main before the first transport.
void initializeHttpThreads(int threads);

}  // namespace kiln::agent
