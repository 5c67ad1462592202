// Kiln's HTTP server over real loopback sockets: request heads and bodies, refusals before a
// body is read, keep-alive, and what a client sees when the server stops while it answers.

#include "orchestrator/http/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "orchestrator/http/client.h"
#include "tests/support/loopback.h"

namespace kiln::http {
namespace {

using namespace std::chrono_literals;

// Answers every request with what it saw (method, path, query, body size), or keeps the reply
// of the first request for the test to answer when it chooses (`hold`).
class TestHandler final : public Handler {
 public:
  std::optional<Response> admit(const Request& head, std::optional<std::uint64_t> length) override {
    ++admitted_;
    if (length && *length > limit) {
      Response r;
      r.status = 413;
      r.body = R"({"error":{"code":"payload_too_large","message":"too large","details":{}}})";
      return r;
    }
    (void)head;
    return std::nullopt;
  }
  void handle(Request request, Reply reply) override {
    ++handled_;
    if (hold) {
      std::lock_guard lock(mu_);
      if (!held_set_) {
        held_set_ = true;
        held_.set_value(std::move(reply));
        return;
      }
    }
    Response r;
    std::string query;
    for (const auto& [k, v] : request.query) query += k + "=" + v + ";";
    r.body = request.method + " " + request.path + " " + query + " " + std::to_string(request.body.size()) + " " +
             request.header("x-kiln");
    r.content_type = "text/plain";
    reply(std::move(r));
  }
  std::future<Reply> held() { return held_.get_future(); }
  int handled() const { return handled_; }
  int admitted() const { return admitted_; }

  bool hold = false;
  std::uint64_t limit = 1 << 20;

 private:
  std::mutex mu_;
  bool held_set_ = false;
  std::promise<Reply> held_;
  std::atomic<int> handled_{0}, admitted_{0};
};

// A started server on a free loopback port.
std::unique_ptr<Server> start(Handler& handler, ServerOptions o = {}) {
  o.port = 0;
  auto server = makeServer(o, handler);
  auto st = server->start();
  EXPECT_TRUE(st.ok()) << st.error().message;
  return server;
}

std::string urlOf(const Server& s) { return "http://127.0.0.1:" + std::to_string(s.port()); }

// Sends `bytes` on a fresh connection while reading, until the peer closes or `timeout`; returns
// what came back. Sending and reading at once: the server may answer before it reads it all.
std::string rawExchange(int port, const std::string& bytes, std::chrono::milliseconds timeout = 10s) {
  const int fd = testing::connectLoopback(port);
  if (fd < 0) return "";
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::size_t sent = 0;
  std::string in;
  bool can_send = true;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, static_cast<short>(POLLIN | (can_send && sent < bytes.size() ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, 100) < 0) break;
    if (p.revents & POLLOUT) {
      const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0)
        can_send = false;
      else
        sent += static_cast<std::size_t>(n);
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return in;
}

TEST(SplitTargetTest, DecodesPathAndQuery) {
  auto t = splitTarget("/api/v1/hosts/a%2Fb?wait=25&running=a-1&x=%20y&flag&q=a+b");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->first, "/api/v1/hosts/a/b");
  EXPECT_EQ(t->second.at("wait"), "25");
  EXPECT_EQ(t->second.at("running"), "a-1");
  EXPECT_EQ(t->second.at("x"), " y");
  EXPECT_EQ(t->second.at("flag"), "");
  EXPECT_EQ(t->second.at("q"), "a+b");
}

TEST(SplitTargetTest, RefusesMalformedEscapes) {
  EXPECT_FALSE(splitTarget("/a%2"));
  EXPECT_FALSE(splitTarget("/a%zz"));
  EXPECT_FALSE(splitTarget("/a?x=%"));
  EXPECT_TRUE(splitTarget("/a?x=%25"));
}

// The server counts a request out after its answer is written, which may be just after the
// client has read it and seen the connection close: the count reaches 0 within moments.
bool settles(const Server& s) {
  for (int i = 0; i < 200 && s.inFlight() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return s.inFlight() == 0;
}

TEST(ServerTest, ServesRequestsOnOneKeptAliveConnection) {
  TestHandler handler;
  auto s = start(handler);
  Client client({.base_url = urlOf(*s)});
  for (int i = 0; i < 3; ++i) {
    auto r = client.request("POST", "/echo/p%20q?k=v", std::string(1000 + i, 'x'), "application/json", {{"X-Kiln", "h"}});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "POST /echo/p q k=v; " + std::to_string(1000 + i) + " h");
    EXPECT_EQ(r->content_type, "text/plain");
  }
  // Two requests pipelined on one raw connection, the second asking to close.
  const std::string two =
      "GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  const std::string back = rawExchange(s->port(), two);
  EXPECT_NE(back.find("GET /one  0"), std::string::npos) << back;
  EXPECT_NE(back.find("GET /two  0"), std::string::npos) << back;
  EXPECT_TRUE(settles(*s)) << s->inFlight();
}

TEST(ServerTest, RefusedBodyIsAnsweredWithoutBeingReadOrHandled) {
  TestHandler handler;
  handler.limit = 1024;
  auto s = start(handler);
  const std::string body(64 << 20, 'x');
  const std::string back = rawExchange(
      s->port(), "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(back.rfind("HTTP/1.1 413", 0), 0u) << back.substr(0, 200);
  EXPECT_NE(back.find("payload_too_large"), std::string::npos);
  EXPECT_NE(back.find("Connection: close"), std::string::npos);
  EXPECT_EQ(handler.handled(), 0);
  EXPECT_TRUE(settles(*s)) << s->inFlight();
}

TEST(ServerTest, ChunkedBodyIs411AndMalformedHeadIs400) {
  TestHandler handler;
  auto s = start(handler);
  std::string back = rawExchange(s->port(),
                                 "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  EXPECT_EQ(back.rfind("HTTP/1.1 411", 0), 0u) << back;
  EXPECT_NE(back.find("length_required"), std::string::npos);
  back = rawExchange(s->port(), "NOT A REQUEST\r\n\r\n");
  EXPECT_EQ(back.rfind("HTTP/1.1 400", 0), 0u) << back;
  back = rawExchange(s->port(), "GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(back.rfind("HTTP/1.1 400", 0), 0u) << back;
  EXPECT_EQ(handler.handled(), 0);
}

TEST(ServerTest, ExpectContinueGetsAnInterimAnswerBeforeTheBody) {
  TestHandler handler;
  auto s = start(handler);
  const std::string back = rawExchange(
      s->port(), "POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc");
  EXPECT_EQ(back.rfind("HTTP/1.1 100 Continue\r\n", 0), 0u) << back;
  EXPECT_NE(back.find("HTTP/1.1 200"), std::string::npos) << back;
  EXPECT_NE(back.find("POST /e  3"), std::string::npos) << back;
}

TEST(ServerTest, ConnectionsAboveTheCapGet503AndAClose) {
  TestHandler handler;
  ServerOptions o;
  o.max_connections = 1;
  auto s = start(handler, o);
  // One connection held open (it is idle between requests), then a second one.
  const int fd = testing::connectLoopback(s->port());
  ASSERT_GE(fd, 0);
  std::string back;
  for (int i = 0; i < 50 && back.empty(); ++i) {
    std::this_thread::sleep_for(20ms);  // the first connection is registered on its strand
    back = rawExchange(s->port(), "GET /x HTTP/1.1\r\nHost: x\r\n\r\n", 2s);
    if (back.rfind("HTTP/1.1 200", 0) == 0) back.clear();
  }
  ::close(fd);
  EXPECT_EQ(back.rfind("HTTP/1.1 503", 0), 0u) << back;
  EXPECT_NE(back.find("too many connections"), std::string::npos);
}

TEST(ServerTest, StopWaitsUntilAnAnswerStartedJustBeforeItIsOnTheWire) {
  TestHandler handler;
  handler.hold = true;
  auto held = handler.held();
  auto s = start(handler);
  const std::string url = urlOf(*s);
  auto answer = std::async(std::launch::async, [url] {
    Client client({.base_url = url, .timeout = 30s});
    return client.request("GET", "/big");
  });
  ASSERT_EQ(held.wait_for(10s), std::future_status::ready);

  // An answer far larger than the loopback socket buffers takes a while to write; stop() is
  // called the moment it has been handed over, as kilnd's SIGTERM path does.
  const std::size_t size = 48u << 20;
  Response big;
  big.content_type = "application/octet-stream";
  big.body.assign(size, 'k');
  held.get()(std::move(big));
  s->stop(10000);

  auto r = answer.get();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body.size(), size);
  EXPECT_TRUE(settles(*s)) << s->inFlight();
}

TEST(ServerTest, RequestsArrivingWhileStoppingGet503) {
  TestHandler handler;
  handler.hold = true;
  auto held = handler.held();
  auto s = start(handler);
  const std::string url = urlOf(*s);
  Client keep({.base_url = url});
  auto first = std::async(std::launch::async, [&] { return keep.request("GET", "/held"); });
  ASSERT_EQ(held.wait_for(10s), std::future_status::ready);
  auto stopped = std::async(std::launch::async, [&] { s->stop(5000); });
  std::this_thread::sleep_for(200ms);  // stop() is draining: the held request is in flight
  const std::string back = rawExchange(s->port(), "GET /late HTTP/1.1\r\nHost: x\r\n\r\n", 2s);
  // Either the listener is already closed (nothing comes back) or the answer is a 503.
  if (!back.empty()) {
    EXPECT_EQ(back.rfind("HTTP/1.1 503", 0), 0u) << back;
  }
  Response ok;
  ok.body = "late but whole";
  held.get()(std::move(ok));
  stopped.get();
  auto r = first.get();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "late but whole");
}

}  // namespace
}  // namespace kiln::http
