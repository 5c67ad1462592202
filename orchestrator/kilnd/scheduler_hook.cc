#include "orchestrator/kilnd/scheduler_hook.h"

#include <unistd.h>

#include <memory>

#include <nlohmann/json.hpp>

#include "common/exec/process_runner.h"
#include "orchestrator/http/client.h"

extern char** environ;

namespace kiln::kilnd {

namespace {

nlohmann::json requestBody(const scheduler::ReleaseRequest& r) {
  return {{"action", "release"}, {"rollout", r.rollout}, {"pod", r.pod}, {"hosts", r.hosts}};
}

}  // namespace

BlockingReleaseCall httpReleaseCall(const std::string& url, std::chrono::milliseconds timeout,
                                    std::shared_ptr<Logger> log) {
  http::ClientOptions o;
  o.base_url = url.substr(0, url.find('/', url.find("//") + 2));
  o.timeout = timeout;
  const std::string path = url.size() > o.base_url.size() ? url.substr(o.base_url.size()) : "/";
  auto client = std::make_shared<http::Client>(o);  // thread-safe: shared by the executor's threads
  return [client, path, url, log = std::move(log)](const scheduler::ReleaseRequest& r) {
    auto reply = client->request("POST", path, requestBody(r).dump());
    const bool told = reply.ok() && reply->status < 300;
    if (!told)
      log->warn("scheduler hook " + url + " for pod " + r.pod + ": " +
           (reply.ok() ? "status " + std::to_string(reply->status) : reply.error().message));
    return told;
  };
}

BlockingReleaseCall commandReleaseCall(const std::string& path, std::chrono::milliseconds timeout,
                                       std::shared_ptr<Logger> log) {
  std::shared_ptr<exec::ProcessRunner> runner = exec::makeBoostProcessRunner();  // thread-safe
  const auto env = exec::allowListedEnvironment(environ, {"PATH", "LANG", "LC_ALL", "TZ"}, {});
  return [runner, path, env, timeout, log = std::move(log)](const scheduler::ReleaseRequest& r) {
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
    log->warn("scheduler hook " + path + " for pod " + r.pod + " " + exec::describeFailure(result, timeout));
    return false;
  };
}

BlockingReleaseCall releaseCall(const std::string& hook, std::shared_ptr<Logger> log) {
  if (hook.rfind("http://", 0) == 0 || hook.rfind("https://", 0) == 0)
    return httpReleaseCall(hook, std::chrono::milliseconds(3000), std::move(log));
  return commandReleaseCall(hook, std::chrono::milliseconds(10000), std::move(log));
}

}  // namespace kiln::kilnd
