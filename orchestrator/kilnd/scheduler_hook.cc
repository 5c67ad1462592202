#include "orchestrator/kilnd/scheduler_hook.h"

#include <unistd.h>

#include <memory>

#include <nlohmann/json.hpp>

#include "common/exec/process_runner.h"
#include "orchestrator/http/client.h"

extern char** environ;

namespace kiln::kilnd {

namespace {

nlohmann::json requestBody(const rollouts::ReleaseRequest& r) {
  return {{"action", "release"}, {"rollout", r.rollout}, {"pod", r.pod}, {"hosts", r.hosts}};
}

}  // namespace

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
    auto reply = client->request("POST", path, requestBody(r).dump());
    const bool told = reply.ok() && reply->status < 300;
    if (!told && warn)
      warn("scheduler hook " + url + " for pod " + r.pod + ": " +
           (reply.ok() ? "status " + std::to_string(reply->status) : reply.error().message));
    return told;
  };
}

BlockingReleaseCall commandReleaseCall(const std::string& path, std::chrono::milliseconds timeout,
                                       std::function<void(const std::string&)> warn) {
  std::shared_ptr<exec::ProcessRunner> runner = exec::makeBoostProcessRunner();  // thread-safe
  const auto env = exec::allowListedEnvironment(environ, {"PATH", "LANG", "LC_ALL", "TZ"}, {});
  return [runner, path, env, timeout, warn = std::move(warn)](const rollouts::ReleaseRequest& r) {
    exec::ProcessSpec spec;
    spec.argv = {path, "release", r.rollout, r.pod};
    spec.argv.insert(spec.argv.end(), r.hosts.begin(), r.hosts.end());
    spec.env = env;
    spec.timeout = timeout;
    spec.kill_grace = std::chrono::milliseconds(1000);
    spec.output_cap = 4096;
    spec.stdin_data = requestBody(r).dump() + "\n";
    const exec::ProcessResult result = runner->run(spec);
    if (result.succeeded()) return true;
    if (warn) warn("scheduler hook " + path + " for pod " + r.pod + " " + exec::describeFailure(result, timeout));
    return false;
  };
}

BlockingReleaseCall releaseCall(const std::string& hook, std::function<void(const std::string&)> warn) {
  if (hook.rfind("http://", 0) == 0 || hook.rfind("https://", 0) == 0)
    return httpReleaseCall(hook, std::chrono::milliseconds(3000), std::move(warn));
  return commandReleaseCall(hook, std::chrono::milliseconds(10000), std::move(warn));
}

}  // namespace kiln::kilnd
