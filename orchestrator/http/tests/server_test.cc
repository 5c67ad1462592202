// Kiln's HTTP server over real loopback sockets: what a client sees when kilnd stops while it
// is answering.

#include "orchestrator/http/server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <optional>

#include "orchestrator/http/client.h"

namespace kiln::http {
namespace {

using namespace std::chrono_literals;

// Keeps the reply of the one request it gets, for the test to answer when it chooses.
class HeldHandler final : public Handler {
 public:
  std::optional<Response> admit(const Request&, std::optional<std::uint64_t>) override { return std::nullopt; }
  void handle(Request, Reply reply) override {
    std::lock_guard lock(mu_);
    held_.set_value(std::move(reply));
  }
  std::future<Reply> held() { return held_.get_future(); }

 private:
  std::mutex mu_;
  std::promise<Reply> held_;
};

std::unique_ptr<Server> startOnFreePort(Handler& handler, int& port) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    ServerOptions o;
    o.port = 20000 + static_cast<int>(std::chrono::steady_clock::now().time_since_epoch().count() % 30000);
    auto server = makeServer(o, handler);
    if (server->start().ok()) {
      port = o.port;
      return server;
    }
  }
  return nullptr;
}

TEST(ServerTest, StopWaitsUntilAnAnswerStartedJustBeforeItIsOnTheWire) {
  HeldHandler handler;
  auto held = handler.held();
  int port = 0;
  auto server = startOnFreePort(handler, port);
  ASSERT_NE(server, nullptr);

  auto answer = std::async(std::launch::async, [port] {
    Client client({.base_url = "http://127.0.0.1:" + std::to_string(port), .timeout = 30s});
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
  server->stop(10000);

  auto r = answer.get();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body.size(), size);
  EXPECT_EQ(server->inFlight(), 0);
}

}  // namespace
}  // namespace kiln::http
