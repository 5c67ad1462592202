#pragma once
// The one seam between kilnctl's commands and the network: commands build an ApiRequest and
// send it through a Transport. main wires in the kiln::http::Client adapter
// (cli/http_transport.h); unit tests use a fake that records requests and returns canned
// responses (FakeTransport in cli/tests/test_support.h).

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace kiln::cli {

struct ApiRequest {
  std::string method = "GET";
  std::string path;  // already-encoded path, e.g. "/api/v1/pods/" + urlEncode(id)
  std::vector<std::pair<std::string, std::string>> query;  // raw values, encoded on send
  std::string body;
  std::string content_type = "application/json";

  // path plus "?k=v&..." with every key and value percent-encoded.
  std::string pathAndQuery() const;
  // Sets (or replaces) one query parameter.
  void setQuery(const std::string& key, const std::string& value);
};

struct ApiResponse {
  int status = 0;
  std::string body;
  std::string content_type;
};

// Sends API requests. A transport failure (refused, timeout, TLS) is an Error (kUnavailable);
// any HTTP status, including 4xx/5xx, is an ApiResponse. Implementations need not be
// thread-safe: kilnctl sends one request at a time.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual Result<ApiResponse> send(const ApiRequest& request) = 0;
};

}  // namespace kiln::cli
