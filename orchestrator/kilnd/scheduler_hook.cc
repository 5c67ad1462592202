#include "orchestrator/kilnd/scheduler_hook.h"

#include <memory>

#include <nlohmann/json.hpp>

#include "orchestrator/http/client.h"

namespace kiln::kilnd {

rollouts::ReleaseHook asyncReleaseHook(Executor& executor, BlockingReleaseCall call) {
  auto shared = std::make_shared<BlockingReleaseCall>(std::move(call));
  return [&executor, shared](const rollouts::ReleaseRequest& r, std::function<void(bool)> done) {
    executor.post([shared, r, done = std::move(done)] {
      bool told = false;
      try {
        told = (*shared)(r);
      } catch (...) {  // the thread's one catch: an ask that threw was not heard
      }
      done(told);
    });
  };
}

BlockingReleaseCall httpReleaseCall(const std::string& url, std::chrono::milliseconds timeout,
                                    std::function<void(const std::string&)> warn) {
  http::ClientOptions o;
  o.base_url = url.substr(0, url.find('/', url.find("//") + 2));
  o.timeout = timeout;
  const std::string path = url.size() > o.base_url.size() ? url.substr(o.base_url.size()) : "/";
  auto client = std::make_shared<http::Client>(o);  // thread-safe: shared by the executor's threads
  return [client, path, url, warn = std::move(warn)](const rollouts::ReleaseRequest& r) {
    nlohmann::json body = {{"action", "release"}, {"rollout", r.rollout}, {"pod", r.pod}, {"hosts", r.hosts}};
    auto reply = client->request("POST", path, body.dump());
    const bool told = reply.ok() && reply->status < 300;
    if (!told && warn)
      warn("scheduler hook " + url + " for pod " + r.pod + ": " +
           (reply.ok() ? "status " + std::to_string(reply->status) : reply.error().message));
    return told;
  };
}

}  // namespace kiln::kilnd
