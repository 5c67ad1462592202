#include "agents/sim/fleet/http_pool.h"

#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace kiln::vfleet {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

namespace {

struct Pending {
  HttpRequest req;
  ResponseHandler done;
  int attempts = 0;
};

struct Conn {
  explicit Conn(asio::io_context& io) : stream(io) {}
  beast::tcp_stream stream;
  bool connected = false;
  int served = 0;
  beast::flat_buffer buffer;
  bhttp::request<bhttp::string_body> req;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
  Pending pending;
};

bool staleKeepAlive(const beast::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == bhttp::error::partial_message;
}

}  // namespace

struct HttpPool::Impl : std::enable_shared_from_this<HttpPool::Impl> {
  Impl(asio::io_context& io_, HttpPoolOptions opts_) : io(io_), opts(std::move(opts_)) {}

  asio::io_context& io;
  HttpPoolOptions opts;
  tcp::resolver::results_type endpoints;
  std::deque<Pending> queues[2];
  std::vector<std::shared_ptr<Conn>> idle;
  std::unordered_map<Conn*, std::shared_ptr<Conn>> all;
  bool closed = false;
  std::uint64_t connects = 0;
  std::uint64_t failures = 0;

  std::size_t queued() const { return queues[0].size() + queues[1].size(); }

  void enqueue(Pending p, bool front) {
    auto& q = queues[static_cast<int>(p.req.priority)];
    if (front) {
      q.push_front(std::move(p));
    } else {
      q.push_back(std::move(p));
    }
  }

  void pump() {
    while (!closed && queued() > 0) {
      std::shared_ptr<Conn> c;
      if (!idle.empty()) {
        c = std::move(idle.back());
        idle.pop_back();
      } else if (static_cast<int>(all.size()) < opts.max_connections) {
        c = std::make_shared<Conn>(io);
        all[c.get()] = c;
      } else {
        return;
      }
      auto& q = queues[0].empty() ? queues[1] : queues[0];
      Pending p = std::move(q.front());
      q.pop_front();
      if (p.req.wanted && !p.req.wanted()) {
        idle.push_back(std::move(c));
        asio::post(io, [done = std::move(p.done)] { done(unavailable("dropped unsent: superseded")); });
        continue;
      }
      start(c, std::move(p));
    }
  }

  void start(const std::shared_ptr<Conn>& c, Pending p) {
    c->pending = std::move(p);
    c->pending.attempts++;
    if (c->connected) return write(c);
    c->stream.expires_after(opts.connect_timeout);
    auto self = shared_from_this();
    connects++;
    c->stream.async_connect(endpoints, [self, c](const beast::error_code& ec, const tcp::endpoint&) {
      if (ec) return self->fail(c, ec);
      c->connected = true;
      beast::error_code ignored;
      c->stream.socket().set_option(tcp::no_delay(true), ignored);
      self->write(c);
    });
  }

  void write(const std::shared_ptr<Conn>& c) {
    const HttpRequest& r = c->pending.req;
    c->req = {};
    c->req.version(11);
    c->req.method_string(r.method);
    c->req.target(r.target);
    c->req.set(bhttp::field::host, opts.host + ":" + opts.port);
    c->req.set(bhttp::field::user_agent, "kiln-vfleet");
    c->req.set(bhttp::field::accept, "application/json");
    if (!r.token.empty()) c->req.set(bhttp::field::authorization, "Bearer " + r.token);
    if (!r.body.empty()) {
      c->req.set(bhttp::field::content_type, "application/json");
      c->req.body() = r.body;
    }
    c->req.keep_alive(true);
    c->req.prepare_payload();
    c->stream.expires_after(r.timeout);
    auto self = shared_from_this();
    bhttp::async_write(c->stream, c->req, [self, c](const beast::error_code& ec, std::size_t) {
      if (ec) return self->fail(c, ec);
      self->read(c);
    });
  }

  void read(const std::shared_ptr<Conn>& c) {
    c->parser.emplace();
    c->parser->body_limit(64u << 20);
    auto self = shared_from_this();
    bhttp::async_read(c->stream, c->buffer, *c->parser,
                      [self, c](const beast::error_code& ec, std::size_t) {
                        if (ec) return self->fail(c, ec);
                        self->finish(c);
                      });
  }

  void finish(const std::shared_ptr<Conn>& c) {
    auto res = c->parser->release();
    c->parser.reset();
    c->served++;
    Pending p = std::move(c->pending);
    c->pending = {};
    if (res.keep_alive() && !closed) {
      c->stream.expires_never();
      idle.push_back(c);
    } else {
      close(c);
    }
    p.done(HttpResponse{static_cast<int>(res.result_int()), std::move(res.body())});
    pump();
  }

  void fail(const std::shared_ptr<Conn>& c, const beast::error_code& ec) {
    Pending p = std::move(c->pending);
    c->pending = {};
    const bool reused = c->served > 0;
    close(c);
    if (!closed && reused && p.attempts < 2 && staleKeepAlive(ec)) {
      enqueue(std::move(p), /*front=*/true);  // the server had closed it while idle
      pump();
      return;
    }
    failures++;
    if (p.done) {
      if (ec == beast::error::timeout) {
        p.done(Error(ErrorCode::kTimeout, p.req.method + " " + p.req.target + ": timed out"));
      } else {
        p.done(unavailable(p.req.method + " " + p.req.target + ": " + ec.message()));
      }
    }
    pump();
  }

  void close(const std::shared_ptr<Conn>& c) {
    beast::error_code ignored;
    c->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    c->stream.close();
    c->connected = false;
    all.erase(c.get());
    std::erase(idle, c);
  }
};

HttpPool::HttpPool(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpPool::~HttpPool() { shutdown(); }

Result<std::unique_ptr<HttpPool>> HttpPool::create(asio::io_context& io, HttpPoolOptions options) {
  auto impl = std::make_shared<Impl>(io, std::move(options));
  try {
    tcp::resolver resolver(io);
    impl->endpoints = resolver.resolve(impl->opts.host, impl->opts.port);
  } catch (const std::exception& e) {
    return unavailable("cannot resolve " + impl->opts.host + ":" + impl->opts.port + ": " + e.what());
  }
  if (impl->opts.max_connections < 1) impl->opts.max_connections = 1;
  return std::unique_ptr<HttpPool>(new HttpPool(std::move(impl)));
}

void HttpPool::send(HttpRequest request, ResponseHandler done) {
  if (impl_->closed) {
    std::string what = request.method + " " + request.target;
    asio::post(impl_->io, [done = std::move(done), what] { done(unavailable(what + ": shut down")); });
    return;
  }
  impl_->enqueue(Pending{std::move(request), std::move(done), 0}, false);
  impl_->pump();
}

void HttpPool::shutdown() {
  if (impl_->closed) return;
  impl_->closed = true;
  std::vector<Pending> dropped;
  for (auto& q : impl_->queues) {
    for (auto& p : q) dropped.push_back(std::move(p));
    q.clear();
  }
  // In-flight requests complete with operation_aborted and fail through Impl::fail.
  auto conns = impl_->all;
  for (auto& [_, c] : conns) impl_->close(c);
  for (auto& p : dropped) {
    std::string what = p.req.method + " " + p.req.target;
    asio::post(impl_->io, [done = std::move(p.done), what] { done(unavailable(what + ": shut down")); });
  }
}

HttpPoolStats HttpPool::stats() const {
  HttpPoolStats s;
  s.open = impl_->all.size();
  s.busy = impl_->all.size() - impl_->idle.size();
  s.queued = impl_->queued();
  s.connects = impl_->connects;
  s.failures = impl_->failures;
  return s;
}

Result<std::pair<std::string, std::string>> parseHttpUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    return invalidArgument("--url must be http://HOST:PORT (kiln-vfleet speaks plain HTTP), got '" +
                           url + "'");
  }
  std::string rest = url.substr(scheme.size());
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    if (rest.find_first_not_of('/', slash) != std::string::npos)
      return invalidArgument("--url takes no path, got '" + url + "'");
    rest.resize(slash);
  }
  if (rest.empty()) return invalidArgument("--url has no host: '" + url + "'");
  std::string host = rest, port = "80";
  if (rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string::npos) return invalidArgument("--url: bad IPv6 address in '" + url + "'");
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return invalidArgument("--url: bad port in '" + url + "'");
      port = rest.substr(close + 2);
    }
  } else if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos)
    return invalidArgument("--url: bad host or port in '" + url + "'");
  return std::make_pair(host, port);
}

}  // namespace kiln::vfleet
