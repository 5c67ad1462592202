#include "cli/http_transport.h"

#include <exception>

#include "orchestrator/http/client.h"

namespace kiln::cli {
namespace {

class HttpTransport : public Transport {
 public:
  explicit HttpTransport(http::ClientOptions options) : client_(std::move(options)) {}

  Result<ApiResponse> send(const ApiRequest& request) override {
    auto r = client_.request(request.method, request.pathAndQuery(), request.body, request.content_type,
                             {{"Accept", "application/json"}});
    if (!r.ok()) return r.error();
    return ApiResponse{r->status, std::move(r->body), std::move(r->content_type)};
  }

 private:
  http::Client client_;
};

}  // namespace

Result<std::unique_ptr<Transport>> makeHttpTransport(const ConnectionSettings& settings) {
  http::ClientOptions options;
  options.base_url = settings.url;
  options.token = settings.token;
  options.ca_file = settings.ca_file;
  options.timeout = settings.timeout;
  try {
    return std::unique_ptr<Transport>(std::make_unique<HttpTransport>(std::move(options)));
  } catch (const std::exception& e) {
    return invalidArgument("bad server URL '" + settings.url + "': " + e.what());
  }
}

}  // namespace kiln::cli
