// Kiln's HTTP server on Boost.Beast (header-only in Boost 1.74; Boost is already a dependency
// for Boost.Process). It replaced cpprestsdk's http_listener, which buffered a refused body
// whole before a 413 could be sent, had no idle or header timeouts, busy-spun on accept() at
// the file descriptor limit, cut answers off at shutdown, and cost ~1/4 of a core per ~1,000
// agent requests a second in its thread pool (docs/DEPENDENCIES.md; bench/dispatch/README.md).
//
// One connection = one Session on its own strand: read a request head, ask the Handler to admit
// it (before a byte of the body is read), read the body, hand the request over, and read the
// next head only once the answer is written. Handlers answer from any thread; the answer is
// posted back to the connection's strand.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <atomic>
#include <chrono>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "orchestrator/http/server.h"

namespace kiln::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using beast::error_code;

// Between requests and for a request's head: an agent polls again at once, a browser keeps its
// connections a minute or two. Also bounds a client that sends a head byte by byte.
constexpr auto kIdleTimeout = std::chrono::seconds(120);
constexpr auto kBodyTimeout = std::chrono::seconds(120);   // a 64 MiB fleet file on a slow link
constexpr auto kWriteTimeout = std::chrono::seconds(120);
constexpr auto kHandshakeTimeout = std::chrono::seconds(15);
// After an answer with Connection: close, what the client still sends (a refused body) is read
// and dropped for at most this long, so that it sees the answer instead of a reset.
constexpr auto kLingerTimeout = std::chrono::seconds(5);
constexpr std::uint32_t kHeaderLimit = 16 * 1024;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Response jsonError(int status, const char* code, const std::string& message) {
  Response r;
  r.status = status;
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) escaped += c;
  }
  r.body = std::string("{\"error\":{\"code\":\"") + code + "\",\"message\":\"" + escaped + "\",\"details\":{}}}";
  return r;
}

Response closing(Response r) {
  r.headers.emplace_back("Connection", "close");
  return r;
}

}  // namespace

namespace {

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  // Closes the connection from any thread (stop(), once the drain is over).
  virtual void closeNow() = 0;
};

// What the server and its sessions share. A Reply holds it (and its session), so a handler that
// answers after stop() posts to an io_context that still exists; the answer is then dropped.
struct Core : std::enable_shared_from_this<Core> {
  Core(ServerOptions o, Handler& h) : options(std::move(o)), handler(h) {}

  ServerOptions options;
  Handler& handler;
  std::atomic<bool> stopping{false};
  std::atomic<int> in_flight{0};

  std::mutex sessions_mu;
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions;
  std::size_t sessionCount() {
    std::lock_guard lock(sessions_mu);
    return sessions.size();
  }

  std::optional<asio::ssl::context> tls;
  // Declared last: destroyed first, with the sessions its queued handlers still hold (their
  // destructors use sessions_mu above).
  asio::io_context ioc;
};

template <bool kTls>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<kTls>> {
  using Stream = std::conditional_t<kTls, beast::ssl_stream<beast::tcp_stream>, beast::tcp_stream>;

 public:
  Session(Core& core, tcp::socket&& socket, std::string remote)
      : core_(core), stream_(makeStream(core, std::move(socket))), remote_(std::move(remote)) {}
  // (client_names_ is set once, by the handshake, before the first request is read.)

  ~Session() override {
    std::lock_guard lock(core_.sessions_mu);
    core_.sessions.erase(this);
  }

  void start() {
    std::lock_guard lock(core_.sessions_mu);
    core_.sessions.emplace(this, this->weak_from_this());
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] { self->begin(); });
  }

  void closeNow() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      error_code ec;
      self->tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
      self->tcp().close();
    });
  }

 private:
  static Stream makeStream(Core& core, tcp::socket&& socket) {
    if constexpr (kTls)
      return Stream(beast::tcp_stream(std::move(socket)), *core.tls);
    else
      return Stream(std::move(socket));
  }

  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

  // The verified client certificate's subject CN and DNS subject alternative names.
  static std::vector<std::string> clientNames(SSL* ssl) {
    std::vector<std::string> out;
    X509* cert = SSL_get1_peer_certificate(ssl);
    if (cert == nullptr) return out;
    if (SSL_get_verify_result(ssl) == X509_V_OK) {
      char cn[256] = {0};
      if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn) > 0) out.push_back(cn);
      auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
      for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
        const GENERAL_NAME* n = sk_GENERAL_NAME_value(sans, i);
        if (n->type != GEN_DNS) continue;
        const auto* data = ASN1_STRING_get0_data(n->d.dNSName);
        out.emplace_back(reinterpret_cast<const char*>(data), static_cast<std::size_t>(ASN1_STRING_length(n->d.dNSName)));
      }
      GENERAL_NAMES_free(sans);
    }
    X509_free(cert);
    return out;
  }

  void begin() {
    if constexpr (kTls) {
      tcp().expires_after(kHandshakeTimeout);
      stream_.async_handshake(asio::ssl::stream_base::server, [self = this->shared_from_this()](error_code ec) {
        if (ec) return self->tcp().close();
        self->client_names_ = clientNames(self->stream_.native_handle());
        self->readHead();
      });
    } else {
      readHead();
    }
  }

  void readHead() {
    head_request_ = false;
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    // The Handler's admit() holds the body limits; Beast's own (1 MiB by default) would refuse
    // a larger Content-Length while reading the head.
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());  // boost::none misbehaves in 1.74
    tcp().expires_after(kIdleTimeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = this->shared_from_this()](error_code ec, std::size_t) { self->onHead(ec); });
  }

  void onHead(error_code ec) {
    if (ec) {
      // A closed or timed-out connection is nothing to answer; a malformed head gets a 400.
      if (&ec.category() == &bhttp::make_error_code(bhttp::error::bad_method).category() &&
          ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message)
        return answer(closing(jsonError(400, "invalid_argument", "malformed request: " + ec.message())), false);
      return tcp().close();
    }
    tcp().expires_never();
    const auto& msg = parser_->get();
    version_ = msg.version();
    keep_alive_ = msg.keep_alive();
    head_request_ = msg.method() == bhttp::verb::head;
    Request head;
    head.method = std::string(msg.method_string());
    auto target = splitTarget(std::string_view(msg.target().data(), msg.target().size()));
    if (!target) return answer(closing(jsonError(400, "invalid_argument", "malformed request: bad percent-encoding")), false);
    head.path = std::move(target->first);
    head.query = std::move(target->second);
    for (const auto& field : msg) {
      std::string name = lower(std::string_view(field.name_string().data(), field.name_string().size()));
      std::string value(field.value().data(), field.value().size());
      auto [it, added] = head.headers.emplace(std::move(name), value);
      if (!added) it->second += ", " + value;
    }
    head.remote = remote_;
    head.client_names = client_names_;

    if (core_.stopping)
      return answer(closing(jsonError(503, "unavailable", "kilnd is shutting down")), false);
    if (core_.in_flight >= core_.options.max_in_flight) {
      Response r = closing(jsonError(503, "unavailable", "too many requests in flight, retry later"));
      r.headers.emplace_back("Retry-After", "1");
      return answer(std::move(r), false);
    }
    if (msg.chunked()) {
      // Kiln's clients send a Content-Length, and a body's limit is checked against it before
      // the body is read.
      return answer(closing(jsonError(411, "length_required", "send a Content-Length; chunked bodies are not accepted")),
                    false);
    }
    std::optional<std::uint64_t> length;
    if (auto n = parser_->content_length()) length = *n;
    std::optional<Response> refusal;
    try {
      refusal = core_.handler.admit(head, length);
    } catch (const std::exception& e) {
      // The thread's one catch (docs/STYLE.md): an escaping exception would end io_context::run.
      refusal = jsonError(500, "internal", std::string("internal error: ") + e.what());
    }
    if (refusal) return answer(closing(std::move(*refusal)), false);

    ++core_.in_flight;
    if (!length || *length == 0) return dispatch(std::move(head));
    const bool expect_continue = lower(head.header("expect")) == "100-continue";
    auto read_body = [self = this->shared_from_this(), head = std::move(head)]() mutable {
      self->tcp().expires_after(kBodyTimeout);
      bhttp::async_read(self->stream_, self->buffer_, *self->parser_,
                        [self, head = std::move(head)](error_code ec, std::size_t) mutable {
                          self->tcp().expires_never();
                          if (ec) {
                            --self->core_.in_flight;
                            return self->tcp().close();
                          }
                          head.body = std::move(self->parser_->get().body());
                          self->dispatch(std::move(head));
                        });
    };
    if (expect_continue) {
      auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_, version_);
      tcp().expires_after(kWriteTimeout);
      bhttp::async_write(stream_, *cont,
                         [self = this->shared_from_this(), cont, read_body = std::move(read_body)](
                             error_code ec, std::size_t) mutable {
                           if (ec) {
                             --self->core_.in_flight;
                             return self->tcp().close();
                           }
                           read_body();
                         });
      return;
    }
    read_body();
  }

  // What a Reply holds. A handler may keep a Reply past the server (a parked long poll); when
  // it lets go, the session must go before the core, since ~Session takes itself off the core's
  // list. Members are destroyed in reverse order, so `self` goes first. (A lambda capturing both
  // released the core first: ASan, heap-use-after-free in ~Session, kiln_agent_exec_test.)
  struct ReplyHold {
    ReplyHold(std::shared_ptr<Core> c, std::shared_ptr<Session> s) : core(std::move(c)), self(std::move(s)) {}
    std::shared_ptr<Core> core;
    std::shared_ptr<Session> self;
    std::atomic<bool> answered{false};
  };

  void dispatch(Request request) {
    auto hold = std::make_shared<ReplyHold>(core_.shared_from_this(), this->shared_from_this());
    Reply reply = [hold](Response r) {
      if (hold->answered.exchange(true)) return;  // a second answer would corrupt the connection
      auto self = hold->self;
      asio::post(self->stream_.get_executor(),
                 [self, r = std::move(r)]() mutable { self->answer(std::move(r), /*counted=*/true); });
    };
    try {
      core_.handler.handle(std::move(request), reply);
    } catch (const std::exception& e) {
      reply(jsonError(500, "internal", std::string("internal error: ") + e.what()));
    }
  }

  // On the strand. `counted`: the request is in core_.in_flight until its answer is written.
  void answer(Response r, bool counted) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(r.status), version_);
    bool close = !keep_alive_ || core_.stopping;
    for (auto& [name, value] : r.headers) {
      if (lower(name) == "connection") {
        close = close || lower(value) == "close";
        continue;
      }
      res->insert(name, value);
    }
    const bool bodyless = r.status == 204 || r.status == 304 || (r.status >= 100 && r.status < 200);
    if (!bodyless) {
      if (!r.content_type.empty()) res->set(bhttp::field::content_type, r.content_type);
      res->body() = std::move(r.body);
      res->prepare_payload();
    }
    res->keep_alive(!close);
    if (head_request_ && !bodyless) {
      // HEAD: the GET's head, Content-Length included (RFC 9110 9.3.2), and no body.
      auto bare = std::make_shared<bhttp::response<bhttp::empty_body>>(res->result(), version_);
      for (const auto& field : *res) bare->insert(field.name_string(), field.value());
      bare->keep_alive(!close);
      return write(std::move(bare), close, counted);
    }
    write(std::move(res), close, counted);
  }

  template <typename Message>
  void write(std::shared_ptr<Message> res, bool close, bool counted) {
    tcp().expires_after(kWriteTimeout);
    bhttp::async_write(stream_, *res,
                       [self = this->shared_from_this(), res, close, counted](error_code ec, std::size_t) {
                         if (counted) --self->core_.in_flight;
                         if (ec) return self->tcp().close();
                         if (close) return self->shutdown();
                         self->readHead();
                       });
  }

  // After an answer with Connection: close: say so to the client, then read and drop what it
  // still sends until it closes (or kLingerTimeout), so it reads the answer rather than a reset.
  void shutdown() {
    tcp().expires_after(kLingerTimeout);
    if constexpr (kTls) {
      stream_.async_shutdown([self = this->shared_from_this()](error_code) { self->tcp().close(); });
    } else {
      error_code ec;
      tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
      if (ec) return tcp().close();
      linger();
    }
  }

  void linger() {
    if (!drop_) drop_ = std::make_unique<std::array<char, 16384>>();
    tcp().async_read_some(asio::buffer(*drop_), [self = this->shared_from_this()](error_code ec, std::size_t) {
      if (ec) return self->tcp().close();
      self->linger();
    });
  }

  Core& core_;
  Stream stream_;
  std::string remote_;
  std::vector<std::string> client_names_;  // the verified client certificate's names (TLS)
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  unsigned version_ = 11;
  bool head_request_ = false;  // the request being answered is a HEAD
  bool keep_alive_ = false;
  std::unique_ptr<std::array<char, 16384>> drop_;
};

class BeastServer final : public Server {
 public:
  BeastServer(ServerOptions o, Handler& h) : core_(std::make_shared<Core>(std::move(o), h)) {}
  ~BeastServer() override { stop(0); }

  Status start() override {
    const ServerOptions& o = core_->options;
    const bool tls = !o.tls_cert_file.empty();
    const std::string url = std::string(tls ? "https://" : "http://") + o.host + ":" + std::to_string(o.port);
    try {
      if (tls) {
        core_->tls.emplace(asio::ssl::context::tls_server);
        core_->tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                                asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                                asio::ssl::context::no_tlsv1_1);
        core_->tls->use_certificate_chain_file(o.tls_cert_file);
        core_->tls->use_private_key_file(o.tls_key_file, asio::ssl::context::pem);
        if (!o.client_ca_file.empty()) {
          // Asked for, verified when sent, not required of every client (the handler decides).
          core_->tls->load_verify_file(o.client_ca_file);
          core_->tls->set_verify_mode(asio::ssl::verify_peer);
        }
      }
      tcp::resolver resolver(core_->ioc);
      const auto endpoints = resolver.resolve(o.host, std::to_string(o.port),
                                              tcp::resolver::numeric_service | tcp::resolver::passive);
      if (endpoints.empty()) return unavailable("cannot listen on " + url + ": no address for " + o.host);
      const tcp::endpoint endpoint = *endpoints.begin();
      acceptor_.emplace(asio::make_strand(core_->ioc));
      acceptor_->open(endpoint.protocol());
      acceptor_->set_option(asio::socket_base::reuse_address(true));
      acceptor_->bind(endpoint);
      acceptor_->listen(1024);
      port_ = acceptor_->local_endpoint().port();
    } catch (const std::exception& e) {
      acceptor_.reset();
      return unavailable("cannot listen on " + url + ": " + e.what());
    }
    retry_timer_.emplace(acceptor_->get_executor());
    // Without pending work run() returns: once the acceptor is closed, a request still in a
    // handler has no operation outstanding, and its answer must still be written.
    work_.emplace(core_->ioc.get_executor());
    accept();
    const int threads = std::max(1, o.threads);
    for (int i = 0; i < threads; ++i) threads_.emplace_back([core = core_] { core->ioc.run(); });
    return Ok{};
  }

  void stop(int drain_ms) override {
    if (threads_.empty()) return;
    core_->stopping = true;
    asio::post(acceptor_->get_executor(), [this] {
      error_code ec;
      acceptor_->close(ec);
      retry_timer_->cancel();
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(drain_ms);
    while (core_->in_flight > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::vector<std::shared_ptr<SessionBase>> open;
    {
      std::lock_guard lock(core_->sessions_mu);
      for (auto& [_, weak] : core_->sessions)
        if (auto s = weak.lock()) open.push_back(std::move(s));
    }
    for (auto& s : open) s->closeNow();
    open.clear();
    // The closes run on the sessions' strands; give them a moment, then stop what is left.
    const auto closed_by = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (core_->sessionCount() > 0 && std::chrono::steady_clock::now() < closed_by)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    work_.reset();
    core_->ioc.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  int inFlight() const override { return core_->in_flight; }
  int port() const override { return port_; }

 private:
  void accept() {
    acceptor_->async_accept(asio::make_strand(core_->ioc), [this](error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
      if (ec) {
        // Out of file descriptors (EMFILE) and the like: accepting again at once would spin;
        // the pending connections wait in the backlog.
        retry_timer_->expires_after(std::chrono::milliseconds(50));
        retry_timer_->async_wait([this](error_code wait_ec) {
          if (!wait_ec && acceptor_->is_open()) accept();
        });
        return;
      }
      onAccepted(std::move(socket));
      accept();
    });
  }

  void onAccepted(tcp::socket socket) {
    error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    const auto peer = socket.remote_endpoint(ec);
    const std::string remote = ec ? std::string() : peer.address().to_string();
    if (core_->sessionCount() >= static_cast<std::size_t>(core_->options.max_connections)) {
      // Above the cap a client gets a short answer and a close instead of a connection that
      // holds one of the process's descriptors (docs/DEPENDENCIES.md: 20,000 here).
      static const std::string kBusy = [] {
        const std::string body = jsonError(503, "unavailable", "too many connections, retry later").body;
        return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
               "Retry-After: 1\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body;
      }();
      socket.non_blocking(true, ec);
      socket.write_some(asio::buffer(kBusy), ec);
      socket.shutdown(tcp::socket::shutdown_both, ec);
      socket.close(ec);
      return;
    }
    if (core_->tls)
      std::make_shared<Session<true>>(*core_, std::move(socket), remote)->start();
    else
      std::make_shared<Session<false>>(*core_, std::move(socket), remote)->start();
  }

  std::shared_ptr<Core> core_;
  std::optional<tcp::acceptor> acceptor_;        // on its own strand
  std::optional<asio::steady_timer> retry_timer_;  // same strand
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  int port_ = 0;
};

}  // namespace

std::unique_ptr<Server> makeServer(const ServerOptions& options, Handler& handler) {
  return std::make_unique<BeastServer>(options, handler);
}

}  // namespace kiln::http
