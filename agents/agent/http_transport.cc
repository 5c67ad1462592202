#define _TURN_OFF_PLATFORM_STRING
#include <utility>  // boost/asio/awaitable.hpp (via pplx) forgets it under C++20
#include <pplx/threadpool.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "agents/agent/transport.h"
#include "orchestrator/http/client.h"

namespace kiln::agent {
namespace {

class HttpTransport final : public Transport {
 public:
  explicit HttpTransport(const HttpTransportOptions& options) {
    http::ClientOptions poll;
    poll.base_url = options.base_url;
    poll.ca_file = options.ca_file;
    poll.client_cert_file = options.client_cert;
    poll.client_key_file = options.client_key;
    poll.timeout = options.long_poll_timeout;
    http::ClientOptions call = poll;
    call.timeout = options.call_timeout;
    poll_client_ = std::make_shared<http::Client>(poll);
    call_client_ = std::make_shared<http::Client>(call);
  }

  Result<HttpReply> send(const HttpCall& call) override {
    struct Pending {
      std::optional<Result<HttpReply>> reply;
    };
    auto pending = std::make_shared<Pending>();
    {
      std::lock_guard lock(shared_->mu);
      if (shared_->interrupted) return unavailable("agent is stopping");
    }
    std::shared_ptr<http::Client> client = call.long_poll ? poll_client_ : call_client_;
    std::shared_ptr<Shared> shared = shared_;
    std::thread([client, shared, pending, call] {
      Result<HttpReply> out = unavailable("no answer");
      try {
        std::map<std::string, std::string> headers;
        if (!call.token.empty()) headers["Authorization"] = "Bearer " + call.token;
        auto r = client->request(call.method, call.path, call.body, "application/json", headers);
        if (r) {
          out = HttpReply{r->status, std::move(r->body)};
        } else {
          out = r.error();
        }
      } catch (const std::exception& e) {
        out = unavailable(std::string("HTTP client: ") + e.what());
      }
      std::lock_guard lock(shared->mu);
      pending->reply = std::move(out);
      shared->cv.notify_all();
    }).detach();
    std::unique_lock lock(shared_->mu);
    shared_->cv.wait(lock, [&] { return pending->reply.has_value() || shared_->interrupted; });
    if (pending->reply) return std::move(*pending->reply);
    return unavailable("agent is stopping");
  }

  void interrupt() override {
    std::lock_guard lock(shared_->mu);
    shared_->interrupted = true;
    shared_->cv.notify_all();
  }

 private:
  // Outlives the transport while abandoned calls finish.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool interrupted = false;
  };
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::shared_ptr<http::Client> poll_client_;
  std::shared_ptr<http::Client> call_client_;
};

}  // namespace

std::unique_ptr<Transport> makeHttpTransport(const HttpTransportOptions& options) {
  return std::make_unique<HttpTransport>(options);
}

void initializeHttpThreads(int threads) {
  crossplat::threadpool::initialize_with_threads(static_cast<std::size_t>(threads));
}

}  // namespace kiln::agent
