#include "agents/sim/fleet/http_pool.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "agents/sim/fleet/asio_loop.h"

namespace kiln::vfleet {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

// A loopback HTTP server on the test's io_context: answers 200 with the target as body;
// "/close" answers with Connection: close; "/silent" never answers; "/drop-next" closes the
// connection after answering (as a server dropping idle keep-alive connections would).
class TestServer {
 public:
  explicit TestServer(asio::io_context& io) : io_(io), acceptor_(io, {asio::ip::make_address("127.0.0.1"), 0}) {
    accept();
  }
  std::string port() const { return std::to_string(acceptor_.local_endpoint().port()); }
  int accepted = 0;
  int open = 0;
  int max_open = 0;
  std::vector<std::string> order;

 private:
  struct Session {
    explicit Session(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    beast::flat_buffer buffer;
    bhttp::request<bhttp::string_body> req;
    bhttp::response<bhttp::string_body> res;
  };
  void accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket s) {
      if (ec) return;
      accepted++;
      open++;
      max_open = std::max(max_open, open);
      serve(std::make_shared<Session>(std::move(s)));
      accept();
    });
  }
  void serve(std::shared_ptr<Session> s) {
    s->req = {};
    bhttp::async_read(s->socket, s->buffer, s->req, [this, s](beast::error_code ec, std::size_t) {
      if (ec) {
        open--;
        return;
      }
      const std::string target(s->req.target());
      order.push_back(target);
      if (target == "/silent") {  // kept open, never answered: the client times out
        silent_.push_back(s);
        return;
      }
      s->res = {bhttp::status::ok, 11};
      s->res.body() = target + " " + std::string(s->req[bhttp::field::authorization]);
      const bool close = target == "/close" || target == "/drop-next";
      s->res.keep_alive(target != "/close");
      s->res.prepare_payload();
      bhttp::async_write(s->socket, s->res, [this, s, close](beast::error_code wec, std::size_t) {
        if (wec || close) {
          beast::error_code ignored;
          s->socket.shutdown(tcp::socket::shutdown_both, ignored);
          s->socket.close(ignored);
          open--;
          return;
        }
        serve(s);
      });
    });
  }
  asio::io_context& io_;
  tcp::acceptor acceptor_;
  std::vector<std::shared_ptr<Session>> silent_;
};

class HttpPoolTest : public ::testing::Test {
 protected:
  std::unique_ptr<HttpPool> pool(int max_connections, std::string port = "") {
    auto p = HttpPool::create(io_, {"127.0.0.1", port.empty() ? server_.port() : port, max_connections,
                                    std::chrono::milliseconds(2000)});
    EXPECT_TRUE(p.ok());
    return std::move(*p);
  }
  void runUntil(const std::function<bool()>& done) {
    for (int i = 0; i < 2000 && !done(); ++i) io_.run_for(std::chrono::milliseconds(5));
  }
  asio::io_context io_;
  TestServer server_{io_};
};

TEST_F(HttpPoolTest, ManyRequestsShareABoundedSetOfKeepAliveConnections) {
  auto p = pool(3);
  int answered = 0;
  for (int i = 0; i < 60; ++i) {
    p->send(HttpRequest{"GET", "/r" + std::to_string(i), "tok"}, [&, i](Result<HttpResponse> r) {
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_EQ(r->status, 200);
      EXPECT_EQ(r->body, "/r" + std::to_string(i) + " Bearer tok");
      answered++;
    });
  }
  EXPECT_EQ(p->stats().queued, 57u);
  runUntil([&] { return answered == 60; });
  EXPECT_EQ(answered, 60);
  EXPECT_EQ(server_.accepted, 3);
  EXPECT_LE(server_.max_open, 3);
}

TEST_F(HttpPoolTest, HighPriorityRequestsJumpTheQueue) {
  auto p = pool(1);
  int answered = 0;
  auto count = [&](Result<HttpResponse>) { answered++; };
  p->send(HttpRequest{"GET", "/first"}, count);
  p->send(HttpRequest{"GET", "/poll"}, count);
  p->send(HttpRequest{"POST", "/report", "", "{}", Priority::kHigh}, count);
  runUntil([&] { return answered == 3; });
  ASSERT_EQ(server_.order.size(), 3u);
  EXPECT_EQ(server_.order[1], "/report");
  EXPECT_EQ(server_.order[2], "/poll");
}

TEST_F(HttpPoolTest, ARequestNoLongerWantedWhenItsTurnComesIsDroppedUnsent) {
  auto p = pool(1);
  bool still_wanted = true;
  std::vector<std::string> answers;
  auto note = [&](const std::string& name) {
    return [&answers, name](Result<HttpResponse> r) { answers.push_back(name + (r.ok() ? " ok" : " dropped")); };
  };
  p->send(HttpRequest{"GET", "/first"}, note("first"));
  HttpRequest stale{"GET", "/stale-poll"};
  stale.wanted = [&] { return still_wanted; };
  p->send(stale, note("stale"));
  p->send(HttpRequest{"GET", "/last"}, note("last"));
  still_wanted = false;  // superseded while it waited for the one connection
  runUntil([&] { return answers.size() == 3; });
  EXPECT_EQ(answers, (std::vector<std::string>{"first ok", "stale dropped", "last ok"}));
  EXPECT_EQ(server_.order, (std::vector<std::string>{"/first", "/last"}));
}

TEST_F(HttpPoolTest, ConnectionClosedByTheServerIsReplacedAndTheRequestRetried) {
  auto p = pool(1);
  std::vector<Result<HttpResponse>> got;
  p->send(HttpRequest{"GET", "/drop-next"}, [&](Result<HttpResponse> r) { got.push_back(r); });
  runUntil([&] { return got.size() == 1; });
  // The server closed the connection after answering but said keep-alive: the next request on
  // it fails and goes again on a fresh connection.
  runUntil([&] { return server_.open == 0; });
  p->send(HttpRequest{"GET", "/after"}, [&](Result<HttpResponse> r) { got.push_back(r); });
  runUntil([&] { return got.size() == 2; });
  ASSERT_EQ(got.size(), 2u);
  ASSERT_TRUE(got[1].ok()) << got[1].error().message;
  EXPECT_EQ(got[1]->status, 200);
  EXPECT_EQ(server_.accepted, 2);
}

TEST_F(HttpPoolTest, TimeoutAndRefusedAreErrorsNotResponses) {
  auto p = pool(2);
  std::optional<Result<HttpResponse>> slow;
  p->send(HttpRequest{"GET", "/silent", "", "", Priority::kNormal, std::chrono::milliseconds(100)},
          [&](Result<HttpResponse> r) { slow = r; });
  runUntil([&] { return slow.has_value(); });
  ASSERT_TRUE(slow.has_value());
  ASSERT_FALSE(slow->ok());
  EXPECT_EQ(slow->error().code, ErrorCode::kTimeout);

  // A port nobody listens on.
  tcp::acceptor probe(io_, {asio::ip::make_address("127.0.0.1"), 0});
  const std::string dead = std::to_string(probe.local_endpoint().port());
  probe.close();
  auto refused_pool = pool(1, dead);
  std::optional<Result<HttpResponse>> refused;
  refused_pool->send(HttpRequest{"GET", "/x"}, [&](Result<HttpResponse> r) { refused = r; });
  runUntil([&] { return refused.has_value(); });
  ASSERT_TRUE(refused.has_value());
  ASSERT_FALSE(refused->ok());
  EXPECT_EQ(refused->error().code, ErrorCode::kUnavailable);
}

TEST_F(HttpPoolTest, ShutdownFailsQueuedAndInFlightRequests) {
  auto p = pool(1);
  int failed = 0;
  p->send(HttpRequest{"GET", "/silent"}, [&](Result<HttpResponse> r) { failed += r.ok() ? 0 : 1; });
  p->send(HttpRequest{"GET", "/queued"}, [&](Result<HttpResponse> r) { failed += r.ok() ? 0 : 1; });
  runUntil([&] { return server_.order.size() == 1; });
  p->shutdown();
  runUntil([&] { return failed == 2; });
  EXPECT_EQ(failed, 2);
}

TEST_F(HttpPoolTest, AsioLoopRunsTimersInOrderAndCancels) {
  AsioLoop loop(io_);
  std::vector<int> fired;
  loop.after(std::chrono::milliseconds(20), [&] { fired.push_back(2); });
  loop.after(std::chrono::milliseconds(5), [&] { fired.push_back(1); });
  auto id = loop.after(std::chrono::milliseconds(10), [&] { fired.push_back(99); });
  loop.cancel(id);
  runUntil([&] { return fired.size() == 2; });
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));
  EXPECT_EQ(loop.pending(), 0u);
}

TEST(HttpUrlTest, AcceptsPlainHttpOnly) {
  auto hp = parseHttpUrl("http://127.0.0.1:8080/");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->first, "127.0.0.1");
  EXPECT_EQ(hp->second, "8080");
  EXPECT_EQ(parseHttpUrl("http://kiln")->second, "80");
  EXPECT_EQ(parseHttpUrl("http://[::1]:9")->first, "::1");
  EXPECT_FALSE(parseHttpUrl("https://kiln:443").ok());
  EXPECT_FALSE(parseHttpUrl("http://kiln:80/api").ok());
  EXPECT_FALSE(parseHttpUrl("http://:80").ok());
}

}  // namespace
}  // namespace kiln::vfleet
