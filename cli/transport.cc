#include "cli/transport.h"

#include "orchestrator/http/client.h"

namespace kiln::cli {

std::string ApiRequest::pathAndQuery() const {
  std::string out = path;
  char sep = '?';
  for (const auto& [k, v] : query) {
    out += sep;
    out += http::urlEncode(k) + "=" + http::urlEncode(v);
    sep = '&';
  }
  return out;
}

void ApiRequest::setQuery(const std::string& key, const std::string& value) {
  for (auto& [k, v] : query) {
    if (k == key) {
      v = value;
      return;
    }
  }
  query.emplace_back(key, value);
}

}  // namespace kiln::cli
