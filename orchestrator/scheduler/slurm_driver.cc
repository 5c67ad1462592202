#include "orchestrator/scheduler/slurm_driver.h"

#include <nlohmann/json.hpp>

namespace kiln::scheduler {

namespace {
const core::Actor kSlurmActor{"system", "slurm"};
}

SlurmDriver::SlurmDriver(core::HostListing& hosts, core::HostMoves& moves, core::AuditLog& audit, DrainLedger& ledger,
                         SlurmControl& slurm, reliability::ReliabilityStore* interruptions, core::Clock& clock,
                         SlurmDriverOptions options, Logger& log)
    : hosts_(hosts),
      moves_(moves),
      audit_(audit),
      ledger_(ledger),
      slurm_(slurm),
      interruptions_(interruptions),
      clock_(clock),
      options_(std::move(options)),
      log_(log) {}

void SlurmDriver::note(const Notice& n) {
  {
    std::lock_guard lock(mu_);
    auto& last = noticed_[n.host + "\n" + n.node];
    if (last == n.text) return;
    last = n.text;
  }
  log_.log(n.warning ? LogLevel::kWarn : LogLevel::kInfo, n.text);
  (void)audit_.audit(kSlurmActor, "slurm.notice", n.node,
                     nlohmann::json{{"host", n.host}, {"message", n.text}}.dump());  // best effort: the log has it
}

Result<int> SlurmDriver::pass() {
  return reading(true);
}

Result<int> SlurmDriver::observe() {
  return reading(false);
}

Result<int> SlurmDriver::reading(bool act) {
  const TimePoint began = clock_.now();
  auto fail = [&](const std::string& what, const Error& e) -> Result<int> {
    const std::string line = what + ": " + e.message;
    bool changed;
    {
      std::lock_guard lock(mu_);
      changed = last_error_ != line;
      last_error_ = line;
    }
    if (changed) log_.warn("slurm driver: " + line);
    return e;
  };
  auto nodes = slurm_.nodes();
  if (!nodes.ok()) return fail("cannot read Slurm's nodes", nodes.error());
  auto jobs = slurm_.jobs();
  if (!jobs.ok()) return fail("cannot read Slurm's jobs", jobs.error());
  std::vector<core::HostSummary> hosts;
  core::PageRequest page;
  page.limit = 1000;
  for (;;) {
    auto got = hosts_.listHosts({}, page);
    if (!got.ok()) return fail("cannot read Kiln's hosts", got.error());
    for (auto& h : got->items) hosts.push_back(std::move(h));
    if (!got->next_cursor) break;
    page.cursor = *got->next_cursor;
  }
  auto drains = ledger_.list();
  if (!drains.ok()) return fail("cannot read the drain ledger", drains.error());

  int changes = 0;
  std::set<std::string> resumed, ours;
  for (const auto& d : *drains) ours.insert(d.node);
  if (!act) {
    // A follower's reading: the view only (what Slurm and the ledger say, which host each node
    // is), so that GET /scheduler/nodes and the pre-job check's naming answer on every replica.
    // Nothing is decided or changed, and the leader's own records (asks, jobs seen running)
    // are left alone.
    remember(began, hosts, *nodes, *jobs, resumed, std::move(ours), /*acted=*/false);
    return 0;
  }
  ReconcileInput in;
  in.hosts = hosts;
  in.nodes = *nodes;
  in.jobs = *jobs;
  in.ledger = *drains;
  in.policy = options_.policy;
  in.now = began;
  {
    std::lock_guard lock(mu_);
    in.requests = requests_;
    in.running_before = running_before_;
  }
  ReconcilePlan plan = reconcile(in, options_.naming);

  // Resume: forget what we saw of the node first, so the gate holds it until a later reading.
  for (const auto& d : plan.resume) {
    {
      std::lock_guard lock(mu_);
      observed_.erase(d.node);
    }
    resumed.insert(d.node);
    if (auto st = slurm_.resume(d.node); !st.ok()) {
      log_.warn("slurm driver: cannot resume node " + d.node + ": " + st.error().message);
      continue;
    }
    if (auto st = ledger_.remove(d.node, "slurm.resume", "host " + d.host + " is back in service", kSlurmActor);
        !st.ok()) {
      log_.warn("slurm driver: resumed node " + d.node + " but cannot update the drain ledger: " + st.error().message);
      continue;
    }
    ours.erase(d.node);
    ++changes;
    log_.info("slurm: resumed node " + d.node + " (host " + d.host + " is back in service)");
  }
  for (const auto& node : plan.forget) {
    if (ledger_.remove(node, "slurm.release", "the node's drain is no longer Kiln's", kSlurmActor).ok()) {
      ours.erase(node);
      ++changes;
    }
  }
  // Drain: the ledger row first, so a kilnd killed between the two still owns the drain.
  for (const auto& d : plan.drain) {
    if (auto st = ledger_.put(d, kSlurmActor); !st.ok()) {
      log_.warn("slurm driver: cannot record the drain of node " + d.node + ": " + st.error().message);
      continue;
    }
    ours.insert(d.node);
    if (auto st = slurm_.drain(d.node, d.reason); !st.ok()) {
      note({d.host, d.node, "slurm: cannot drain node " + d.node + ": " + st.error().message, true});
      continue;
    }
    ++changes;
    log_.info("slurm: drained node " + d.node + " (host " + d.host + "): " + d.reason);
  }
  for (const auto& d : plan.adopt) {
    if (ledger_.put(d, kSlurmActor).ok()) {
      ours.insert(d.node);
      ++changes;
      log_.info("slurm: node " + d.node + " drained as '" + d.reason + "' is Kiln's: it resumes it once host " +
                d.host + " is back");
    }
  }
  if (!plan.moves.empty()) {
    auto outcomes = moves_.transitionHosts(plan.moves, kSlurmActor);
    if (outcomes.ok()) {
      for (std::size_t i = 0; i < plan.moves.size() && i < outcomes->size(); ++i)
        if ((*outcomes)[i].ok()) ++changes;
    } else {
      log_.warn("slurm driver: cannot move hosts: " + outcomes.error().message);
    }
  }
  for (const auto& job : plan.requeue) {
    {
      std::lock_guard lock(mu_);
      if (!requeued_.insert(job).second) continue;
    }
    if (auto st = slurm_.requeue(job); !st.ok()) {
      log_.warn("slurm driver: cannot requeue job " + job + ": " + st.error().message);
    } else {
      ++changes;
      log_.info("slurm: requeued job " + job + " for a rollout");
      (void)audit_.audit(kSlurmActor, "slurm.requeue", job, "{}");
    }
  }
  if (interruptions_ != nullptr) {
    for (const auto& i : plan.interruptions) {
      {
        std::lock_guard lock(mu_);
        if (recorded_.count(i.id)) continue;
      }
      auto done = interruptions_->record(i, kSlurmActor);
      // Recorded now, or before (by this kilnd before a restart, or by the other path for the
      // same job: kConflict): either way it is in the ledger.
      if (done.ok() || done.error().code == ErrorCode::kConflict) {
        std::lock_guard lock(mu_);
        recorded_.insert(i.id);
        if (done.ok() && *done) {
          ++changes;
          log_.info("slurm: interruption " + i.id + ": " + i.description);
        }
      } else {
        log_.warn("slurm driver: cannot record interruption " + i.id + ": " + done.error().message);
      }
    }
  }
  for (const auto& n : plan.notices) note(n);

  {
    std::lock_guard lock(mu_);
    // Asks made during the pass stand; the others as reconcile() kept them.
    for (const auto& [host, r] : requests_)
      if (r.at >= began) plan.requests[host] = r;
    requests_ = std::move(plan.requests);
    running_before_ = std::move(plan.running);
  }
  remember(began, hosts, *nodes, *jobs, resumed, std::move(ours), /*acted=*/true);
  return changes;
}

void SlurmDriver::remember(TimePoint began, const std::vector<core::HostSummary>& hosts,
                           const std::vector<SlurmNode>& nodes, const std::vector<SlurmJob>& jobs,
                           const std::set<std::string>& resumed, std::set<std::string> ours, bool acted) {
  std::lock_guard lock(mu_);
  observed_.clear();
  known_.clear();
  for (const auto& n : nodes) {
    known_.insert(n.name);
    if (!resumed.count(n.name)) observed_[n.name] = n;
  }
  jobs_on_.clear();
  for (const auto& j : jobs)
    if (j.state == "RUNNING" || j.state == "COMPLETING")
      for (const auto& n : j.nodes) jobs_on_[n].push_back(j);
  host_of_node_.clear();
  host_state_.clear();
  for (const auto& h : hosts) {
    const std::string node = options_.naming.nodeOf(h);
    if (!node.empty()) host_of_node_[node] = h.id;
    host_state_[h.id] = h.state;
  }
  ours_ = std::move(ours);
  last_pass_ = began;
  read_once_ = true;
  // The gate trusts only a leader's own reading: a follower's may predate a resume the leader
  // made since (and a node resumed may run a job now).
  acted_ = acted;
  if (!last_error_.empty()) log_.info("slurm driver: Slurm answers again");
  last_error_.clear();
}

void SlurmDriver::requestDrain(const ReleaseRequest& request, std::function<void(bool told)> done) {
  {
    std::lock_guard lock(mu_);
    for (const auto& h : request.hosts) {
      auto& r = requests_[h];
      if (r.reason != request.reason) r = DrainRequest{request.reason, clock_.now(), false};
    }
  }
  wake();
  if (done) done(true);
}

void SlurmDriver::hostsMoved(const std::vector<std::string>& hosts) {
  if (!hosts.empty()) wake();
}

std::optional<std::string> SlurmDriver::heldBack(const core::HostSummary& host, const std::string& reason) {
  const std::string node = options_.naming.nodeOf(host);
  std::optional<std::string> why;
  bool ask = false;
  {
    std::lock_guard lock(mu_);
    auto& r = requests_[host.id];
    if (r.reason != reason) {
      r = DrainRequest{reason, clock_.now(), false};
      ask = true;
    }
    if (!read_once_ || !acted_) {
      why = "slurm: waiting for the driver's first reading of Slurm";
    } else if (!last_error_.empty()) {
      why = "slurm: " + last_error_;
    } else {
      auto seen = observed_.find(node);
      auto jobs = jobs_on_.find(node);
      why = drainHeldBack(node, seen == observed_.end() ? nullptr : &seen->second, known_.count(node) > 0,
                          jobs == jobs_on_.end() ? std::vector<SlurmJob>{} : jobs->second);
    }
  }
  if (ask) wake();
  return why;
}

std::optional<DriverStatus> SlurmDriver::status() const {
  std::lock_guard lock(mu_);
  DriverStatus s;
  s.last_pass = last_pass_;
  s.last_error = last_error_;
  std::set<std::string> names = known_;
  for (const auto& [node, host] : host_of_node_) names.insert(node);
  for (const auto& node : names) {
    NodeStatus n;
    n.node = node;
    if (auto h = host_of_node_.find(node); h != host_of_node_.end()) {
      n.host = h->second;
      if (auto s = host_state_.find(n.host); s != host_state_.end()) n.host_state = s->second;
    }
    n.known = known_.count(node) > 0;
    if (auto o = observed_.find(node); o != observed_.end()) {
      n.state = o->second.text();
      n.reason = o->second.reason;
      n.reason_user = o->second.reason_user;
    }
    n.drained_by_kiln = ours_.count(node) > 0;
    if (auto j = jobs_on_.find(node); j != jobs_on_.end())
      for (const auto& job : j->second) n.jobs.push_back(job.id);
    s.nodes.push_back(std::move(n));
  }
  return s;
}

std::string SlurmDriver::hostOfNode(const std::string& node) const {
  std::lock_guard lock(mu_);
  auto it = host_of_node_.find(node);
  return it == host_of_node_.end() ? "" : it->second;
}

void SlurmDriver::run(const std::function<bool()>& leader) {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    // Errors are kept and logged by the reading. A follower only reads (the node view).
    if (leader())
      (void)pass();
    else
      (void)observe();
    lock.lock();
    cv_.wait_for(lock, options_.interval, [&] { return woken_ || stopping_; });
    woken_ = false;
  }
}

void SlurmDriver::wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

void SlurmDriver::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

}  // namespace kiln::scheduler
