#define _TURN_OFF_PLATFORM_STRING  // cpprest's U() breaks fmt 9 (DEPENDENCIES.md)
#include <cpprest/http_listener.h>
#include <pplx/threadpool.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "orchestrator/http/server.h"

namespace kiln::http {
namespace {

namespace wh = web::http;
using web::http::experimental::listener::http_listener;
using web::http::experimental::listener::http_listener_config;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Response jsonError(int status, const char* code, const std::string& message) {
  Response r;
  r.status = status;
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  r.body = std::string("{\"error\":{\"code\":\"") + code + "\",\"message\":\"" + escaped + "\",\"details\":{}}}";
  return r;
}

// Starts the reply; `sent` runs once the response has been written out (or the client went
// away), not when it was handed to cpprest: the reply task completes only then.
void send(wh::http_request& req, const Response& r, std::function<void()> sent = {}) {
  wh::http_response resp(static_cast<wh::status_code>(r.status));
  for (const auto& [k, v] : r.headers) resp.headers().add(k, v);
  resp.set_body(r.body, r.content_type);
  req.reply(resp).then([sent = std::move(sent)](pplx::task<void> t) {
    try {
      t.get();
    } catch (...) {
      // The client went away; nothing to do.
    }
    if (sent) sent();
  });
}

class CpprestServer final : public Server {
 public:
  CpprestServer(ServerOptions o, Handler& h) : options_(std::move(o)), handler_(h) {}
  ~CpprestServer() override { stop(0); }

  Status start() override {
    const bool tls = !options_.tls_cert_file.empty();
    const std::string url = std::string(tls ? "https://" : "http://") + options_.host + ":" +
                            std::to_string(options_.port);
    http_listener_config config;
    config.set_backlog(1024);
    if (tls) {
      const std::string cert = options_.tls_cert_file, key = options_.tls_key_file;
      config.set_ssl_context_callback([cert, key](boost::asio::ssl::context& ctx) {
        ctx.set_options(boost::asio::ssl::context::default_workarounds |
                        boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                        boost::asio::ssl::context::no_tlsv1 | boost::asio::ssl::context::no_tlsv1_1);
        ctx.use_certificate_chain_file(cert);
        ctx.use_private_key_file(key, boost::asio::ssl::context::pem);
      });
    }
    try {
      listener_ = std::make_unique<http_listener>(url, config);
      listener_->support([this](wh::http_request req) { onRequest(std::move(req)); });
      listener_->open().wait();
    } catch (const std::exception& e) {
      listener_.reset();
      return unavailable("cannot listen on " + url + ": " + e.what());
    }
    return Ok{};
  }

  void stop(int drain_ms) override {
    if (!listener_) return;
    stopping_ = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(drain_ms);
    while (*in_flight_ > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    try {
      listener_->close().wait();
    } catch (...) {
    }
    listener_.reset();
  }

  int inFlight() const override { return *in_flight_; }

 private:
  void onRequest(wh::http_request req) {
    if (stopping_) {
      Response r = jsonError(503, "unavailable", "kilnd is shutting down");
      r.headers.emplace_back("Connection", "close");
      send(req, r);
      return;
    }
    if (*in_flight_ >= options_.max_in_flight) {
      Response r = jsonError(503, "unavailable", "too many requests in flight, retry later");
      r.headers.emplace_back("Connection", "close");
      r.headers.emplace_back("Retry-After", "1");
      send(req, r);
      return;
    }
    Request head;
    std::optional<std::uint64_t> length;
    try {
      head.method = req.method();
      const auto& uri = req.relative_uri();
      head.path = web::uri::decode(uri.path());
      for (const auto& [k, v] : web::uri::split_query(uri.query()))
        head.query[web::uri::decode(k)] = web::uri::decode(v);
      for (const auto& [k, v] : req.headers()) head.headers[lower(k)] = v;
      head.remote = req.remote_address();
      if (req.headers().has("Content-Length")) length = req.headers().content_length();
    } catch (const std::exception& e) {
      send(req, jsonError(400, "invalid_argument", std::string("malformed request: ") + e.what()));
      return;
    }
    if (head.header("transfer-encoding").find("chunked") != std::string::npos) {
      // No way to cap a chunked body before cpprest buffers it whole: refuse it.
      send(req, jsonError(411, "length_required", "send a Content-Length; chunked bodies are not accepted"));
      return;
    }
    if (auto refusal = handler_.admit(head, length)) {
      refusal->headers.emplace_back("Connection", "close");
      send(req, *refusal);
      return;
    }
    // A request stays in flight until its answer is on the wire: stop() closes the listener,
    // and with it every connection, once nothing is in flight, so counting a reply as done when
    // it was merely handed to cpprest cut answers off mid-body at shutdown.
    ++*in_flight_;
    auto done = [counter = in_flight_, req](Response r) mutable { send(req, r, [counter] { --*counter; }); };
    if (!length || *length == 0) {
      handler_.handle(std::move(head), done);
      return;
    }
    req.extract_string(true).then([this, head = std::move(head), done](pplx::task<std::string> t) mutable {
      try {
        head.body = t.get();
      } catch (const std::exception& e) {
        done(jsonError(400, "invalid_argument", std::string("cannot read the body: ") + e.what()));
        return;
      }
      handler_.handle(std::move(head), done);
    });
  }

  ServerOptions options_;
  Handler& handler_;
  std::unique_ptr<http_listener> listener_;
  std::atomic<bool> stopping_{false};
  // Shared with the reply continuations, which may outlive a stop() whose drain timed out.
  std::shared_ptr<std::atomic<int>> in_flight_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace

std::unique_ptr<Server> makeServer(const ServerOptions& options, Handler& handler) {
  return std::make_unique<CpprestServer>(options, handler);
}

void initializeNetworkThreads(int threads) {
  crossplat::threadpool::initialize_with_threads(static_cast<std::size_t>(threads));
}

}  // namespace kiln::http
