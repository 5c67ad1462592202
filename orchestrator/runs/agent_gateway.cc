#include "orchestrator/runs/agent_gateway.h"

#include <random>

namespace kiln::runs {

using nlohmann::json;

AgentGateway::AgentGateway(RunService& runs, RunStore& store, Executor& executor, core::Clock& clock,
                           AgentGatewayOptions options)
    : runs_(runs), store_(store), executor_(executor), clock_(clock), options_(options) {}

AgentGateway::~AgentGateway() { stop(); }

void AgentGateway::start() {
  if (auto hosts = store_.hostsWithOpenWork(); hosts.ok()) {
    std::lock_guard lock(mu_);
    pending_.insert(hosts->begin(), hosts->end());
  }
  thread_ = std::thread([this] { loop(); });
}

void AgentGateway::stop() {
  std::unordered_map<std::string, Parked> parked;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    parked.swap(parked_);
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& [_, p] : parked) p.reply(std::optional<json>());
}

std::size_t AgentGateway::parkedCount() const {
  std::lock_guard lock(mu_);
  return parked_.size();
}

void AgentGateway::poll(const std::string& host, const std::string& boot_id, int wait_s, const std::string& running,
                        PollReply reply) {
  wait_s = std::clamp(wait_s, 0, options_.max_wait_s);
  // Jitter deadlines by up to 10% so agents that polled together do not all return together.
  thread_local std::mt19937 rng{std::random_device{}()};
  const int wait_ms = wait_s * 1000;
  const int jitter = wait_ms > 0 ? std::uniform_int_distribution<int>(0, wait_ms / 10)(rng) : 0;
  Parked p{std::move(reply), std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms - jitter), running};
  bool has_work;
  {
    std::lock_guard lock(mu_);
    beats_[host] = {host, boot_id, clock_.now()};
    has_work = pending_.count(host) > 0;
  }
  if (has_work || !running.empty()) {
    executor_.post([this, host, p = std::move(p)]() mutable { check(host, std::move(p)); });
    return;
  }
  park(host, std::move(p));
}

void AgentGateway::check(const std::string& host, Parked p) {
  if (!p.running.empty()) {
    // One read of the assignment answers both questions: cancelled (or its lease lost), or done.
    auto a = store_.assignment(p.running);
    const bool mine = a.ok() && *a && (*a)->host == host;
    if (mine && ((*a)->state == "cancelled" || (*a)->state == "lost")) {
      p.reply(std::optional<json>(json{{"cancel", {p.running}}}));
      return;
    }
    // The agent polled while the step ran and has reported it since (the report woke this
    // poll): answer now, so that it polls again at once without the step and that poll takes
    // the next step. Left parked, the agent would get its next step only when this poll's wait
    // ran out (up to 60 s per step). No work goes to this poll itself: it may be a dead agent's
    // (killed mid-step, its journal reported by its successor), and work sent into a dead
    // connection waits for its lease to expire.
    if (mine && (*a)->state == "done") {
      p.reply(std::optional<json>());
      return;
    }
  } else {
    bool pending;
    {
      std::lock_guard lock(mu_);
      pending = pending_.count(host) > 0;
    }
    if (pending) {
      auto work = runs_.claimWork(host);
      if (!work.ok()) {
        p.reply(work.error());
        return;
      }
      if (*work) {
        p.reply(std::optional<json>(json{{"assignment", **work}}));
        return;
      }
      std::lock_guard lock(mu_);
      pending_.erase(host);
    }
  }
  park(host, std::move(p));
}

void AgentGateway::park(const std::string& host, Parked p) {
  if (p.deadline <= std::chrono::steady_clock::now()) {
    p.reply(std::optional<json>());
    return;
  }
  std::optional<Parked> replaced;
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      replaced = std::move(p);
    } else {
      auto it = parked_.find(host);
      if (it != parked_.end()) replaced = std::move(it->second);  // the agent gave up on it
      parked_[host] = std::move(p);
    }
  }
  if (replaced) replaced->reply(std::optional<json>());
}

void AgentGateway::notify(const std::string& host) {
  std::optional<Parked> woken;
  {
    std::lock_guard lock(mu_);
    pending_.insert(host);
    auto it = parked_.find(host);
    if (it != parked_.end()) {
      woken = std::move(it->second);
      parked_.erase(it);
    }
  }
  if (woken) executor_.post([this, host, p = std::move(*woken)]() mutable { check(host, std::move(p)); });
}

void AgentGateway::loop() {
  auto next_flush = std::chrono::steady_clock::now() + options_.heartbeat_flush;
  auto next_refresh = std::chrono::steady_clock::now() + options_.pending_refresh;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, options_.scan_interval);
    if (stopping_) break;
    const auto now = std::chrono::steady_clock::now();
    std::vector<Parked> expired;
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (it->second.deadline <= now) {
        expired.push_back(std::move(it->second));
        it = parked_.erase(it);
      } else {
        ++it;
      }
    }
    std::vector<Heartbeat> beats;
    if (now >= next_flush) {
      next_flush = now + options_.heartbeat_flush;
      for (auto& [_, b] : beats_) beats.push_back(std::move(b));
      beats_.clear();
    }
    const bool refresh = now >= next_refresh;
    if (refresh) next_refresh = now + options_.pending_refresh;
    lock.unlock();
    for (auto& p : expired) p.reply(std::optional<json>());
    if (!beats.empty()) (void)store_.recordHeartbeats(beats);
    if (refresh) {
      auto hosts = store_.hostsWithOpenWork();
      if (hosts.ok())
        for (const auto& h : *hosts) {
          bool known;
          {
            std::lock_guard relock(mu_);
            known = pending_.count(h) > 0;
          }
          if (!known) notify(h);
        }
    }
    lock.lock();
  }
}

}  // namespace kiln::runs
