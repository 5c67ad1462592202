#define _TURN_OFF_PLATFORM_STRING
#include <cpprest/http_client.h>
#include <pplx/threadpool.h>

#include "orchestrator/http/client.h"

namespace kiln::http {

namespace wh = web::http;

struct Client::Impl {
  std::unique_ptr<wh::client::http_client> client;
};

Client::Client(ClientOptions options) : options_(std::move(options)), impl_(std::make_unique<Impl>()) {
  wh::client::http_client_config config;
  config.set_timeout(std::chrono::duration_cast<std::chrono::microseconds>(options_.timeout));
  if (!options_.ca_file.empty() || !options_.client_cert_file.empty()) {
    const std::string ca = options_.ca_file, cert = options_.client_cert_file, key = options_.client_key_file;
    config.set_ssl_context_callback([ca, cert, key](boost::asio::ssl::context& ctx) {
      if (!ca.empty()) ctx.load_verify_file(ca);
      if (!cert.empty() && !key.empty()) {
        ctx.use_certificate_chain_file(cert);
        ctx.use_private_key_file(key, boost::asio::ssl::context::pem);
      }
    });
  }
  impl_->client = std::make_unique<wh::client::http_client>(options_.base_url, config);
}

Client::~Client() = default;

Result<ClientResponse> Client::request(const std::string& method, const std::string& path_and_query,
                                       const std::string& body, const std::string& content_type,
                                       const std::map<std::string, std::string>& headers) {
  try {
    wh::http_request req(method);
    req.set_request_uri(path_and_query);
    if (!options_.token.empty()) req.headers().add("Authorization", "Bearer " + options_.token);
    for (const auto& [k, v] : headers) req.headers().add(k, v);
    if (!body.empty() || method == "POST" || method == "PUT") {
      // The body as bytes, not through set_body(std::string): that one reads a
      // streambuf<char> through a streambuf<unsigned char> (a cast in cpprest's headers), which
      // UBSan reports as a call on an object of the wrong type (vptr check). With the
      // Content-Type set first, the bytes overload keeps it.
      req.headers().set_content_type(content_type);
      req.set_body(std::vector<unsigned char>(body.begin(), body.end()));
    }
    wh::http_response resp = impl_->client->request(req).get();
    ClientResponse out;
    out.status = resp.status_code();
    out.content_type = resp.headers().content_type();
    for (const auto& [k, v] : resp.headers()) {
      std::string name = k;
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers[name] = v;
    }
    out.body = resp.extract_string(true).get();
    return out;
  } catch (const std::exception& e) {
    return unavailable(std::string("cannot reach ") + options_.base_url + ": " + e.what());
  }
}

std::string urlEncode(const std::string& s) { return web::uri::encode_data_string(s); }

void initializeNetworkThreads(int threads) {
  crossplat::threadpool::initialize_with_threads(static_cast<std::size_t>(threads));
}

}  // namespace kiln::http
