#include "orchestrator/runs/agent_gateway.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "common/runner_key.h"

namespace kiln::runs {

using nlohmann::json;

AgentGateway::AgentGateway(AgentWork& work, AgentLinkStore& store, Executor& executor, Clock& clock, Logger& log,
                           AgentGatewayOptions options)
    : runs_(work),
      store_(store),
      executor_(executor),
      clock_(clock),
      failures_(log, clock),
      options_(options),
      next_flush_(clock.monotonic() + options.heartbeat_flush),
      next_refresh_(clock.monotonic() + options.pending_refresh),
      // One thread more than report_drains: the pre-job class's extra transaction.
      report_executor_(std::make_unique<Executor>(std::max(1, options.report_drains) + 1)) {}

AgentGateway::~AgentGateway() { stop(); }

void AgentGateway::start() {
  if (auto hosts = store_.hostsWithOpenWork(); failures_.noted(hosts, "agent gateway: reading the hosts with work")) {
    std::lock_guard lock(mu_);
    pending_.insert(hosts->begin(), hosts->end());
  }
  thread_ = std::thread([this] { loop(); });
  writer_ = std::thread([this] { writerLoop(); });
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
  if (writer_.joinable()) writer_.join();
  for (auto& [_, p] : parked) p.reply(std::optional<json>());
}

std::size_t AgentGateway::parkedCount() const {
  std::lock_guard lock(mu_);
  return parked_.size();
}

std::string AgentGateway::metrics() const {
  std::string out =
      "# HELP kiln_agent_polls_total Agent polls by what they cost: parked (memory only), step_read (the running"
      " step read from the database), claim (work claimed).\n# TYPE kiln_agent_polls_total counter\n";
  out += "kiln_agent_polls_total{path=\"parked\"} " + std::to_string(polls_parked_.load()) + "\n";
  out += "kiln_agent_polls_total{path=\"step_read\"} " + std::to_string(polls_step_read_.load()) + "\n";
  out += "kiln_agent_polls_total{path=\"claim\"} " + std::to_string(polls_claim_.load()) + "\n";
  out += "# HELP kiln_agent_reports_total Step reports taken; handed_out: answered with the host's next step.\n"
         "# TYPE kiln_agent_reports_total counter\n";
  out += "kiln_agent_reports_total{answer=\"ack\"} " + std::to_string(reports_.load() - reports_handed_out_.load()) + "\n";
  out += "kiln_agent_reports_total{answer=\"handed_out\"} " + std::to_string(reports_handed_out_.load()) + "\n";
  out += "# HELP kiln_agent_polls_parked Agent long polls parked now.\n# TYPE kiln_agent_polls_parked gauge\n";
  out += "kiln_agent_polls_parked " + std::to_string(parkedCount()) + "\n";
  out += "# HELP kiln_agent_report_batches_total Transactions that applied agents' reports (several at once under load).\n"
         "# TYPE kiln_agent_report_batches_total counter\n";
  out += "kiln_agent_report_batches_total " + std::to_string(report_batches_.load()) + "\n";
  out += "# HELP kiln_agent_report_deferrals_total Times a queued step report was left for a later transaction because another one held its run group.\n"
         "# TYPE kiln_agent_report_deferrals_total counter\n";
  out += "kiln_agent_report_deferrals_total " + std::to_string(reports_deferred_.load()) + "\n";
  std::lock_guard lock(latency_mu_);
  out += "# HELP kiln_agent_report_queue_seconds How long a step report waited for a transaction to take it.\n"
         "# TYPE kiln_agent_report_queue_seconds histogram\n";
  report_queue_seconds_.render(out, "kiln_agent_report_queue_seconds");
  out += "# HELP kiln_agent_report_apply_seconds How long the transaction that applied a step report took (one sample per report: every report of a batch waits for all of it).\n"
         "# TYPE kiln_agent_report_apply_seconds histogram\n";
  report_apply_seconds_.render(out, "kiln_agent_report_apply_seconds");
  out += "# HELP kiln_agent_prejob_report_queue_seconds How long a pre-job check's step report waited for a transaction to take it (it goes first, run_priority.h).\n"
         "# TYPE kiln_agent_prejob_report_queue_seconds histogram\n";
  prejob_queue_seconds_.render(out, "kiln_agent_prejob_report_queue_seconds");
  out += "# HELP kiln_agent_reports_by_priority_total Step reports applied, by the class of their run (run_priority.h).\n"
         "# TYPE kiln_agent_reports_by_priority_total counter\n";
  for (int c = 0; c < kPriorities; ++c)
    out += std::string("kiln_agent_reports_by_priority_total{class=\"") + priorityName(static_cast<Priority>(c)) +
           "\"} " + std::to_string(reports_by_priority_[static_cast<std::size_t>(c)].load()) + "\n";
  out += "# HELP kiln_agent_reports_aged_total Step reports taken ahead of higher classes because they had waited the starvation bound.\n"
         "# TYPE kiln_agent_reports_aged_total counter\n";
  out += "kiln_agent_reports_aged_total " + std::to_string(reports_aged_.load()) + "\n";
  std::map<std::string, core::TimePoint> runners;
  {
    std::lock_guard gate(mu_);
    runners = runner_polls_;
  }
  // The family is always declared (no sample until a runner polls this replica).
  out += "# HELP kiln_runner_last_poll_timestamp_seconds When each out-of-band runner last polled this replica (issue 32): "
         "the newest across replicas says whether it is alive.\n"
         "# TYPE kiln_runner_last_poll_timestamp_seconds gauge\n";
  for (const auto& [name, at] : runners) {
    const double s = std::chrono::duration<double>(at.time_since_epoch()).count();
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", s);
    out += "kiln_runner_last_poll_timestamp_seconds{runner=\"" + name + "\"} " + text + "\n";
  }
  return out;
}

void AgentGateway::poll(const std::string& host, const std::string& boot_id, int wait_s, const std::string& running,
                        PollReply reply) {
  wait_s = std::clamp(wait_s, 0, options_.max_wait_s);
  // Jitter deadlines by up to 10% so agents that polled together do not all return together.
  thread_local std::mt19937 rng{std::random_device{}()};
  const int wait_ms = wait_s * 1000;
  const int jitter = wait_ms > 0 ? std::uniform_int_distribution<int>(0, wait_ms / 10)(rng) : 0;
  Parked p{std::move(reply), clock_.monotonic() + std::chrono::milliseconds(wait_ms - jitter), running};
  bool has_work, known_running = false, known_done = false;
  {
    std::lock_guard lock(mu_);
    beats_[host] = {host, boot_id, clock_.now()};
    if (isRunnerKey(host)) runner_polls_[runnerOfKey(host)] = clock_.now();
    has_work = pending_.count(host) > 0;
    if (auto it = known_.find(host); !running.empty() && it != known_.end()) {
      // A poll sent before its step's report arrived: the step is over.
      known_done = it->second.done == running;
      // The step just handed out, and nothing happened to the host since: it still runs, no
      // read needed (once; later polls of the step read it).
      if (it->second.handed_out == running) {
        known_running = it->second.epoch == epoch_[host];
        it->second.handed_out.clear();
      }
    }
  }
  if (known_done) {
    p.reply(std::optional<json>());
    return;
  }
  if (known_running || (!has_work && running.empty())) {
    ++polls_parked_;
    park(host, std::move(p));
    return;
  }
  executor_.post([this, host, p = std::move(p)]() mutable { check(host, std::move(p)); });
}

void AgentGateway::check(const std::string& host, Parked p) {
  if (!p.running.empty()) {
    // One read of the assignment answers both questions: cancelled (or its lease lost), or done.
    ++polls_step_read_;
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
      ++polls_claim_;
      bool drain = false;
      {
        std::lock_guard lock(mu_);
        claim_queue_.push_back({host, std::move(p), epoch_[host]});
        if (claim_drains_ < options_.claim_drains) {
          ++claim_drains_;
          drain = true;
        }
      }
      if (drain) drainClaims();  // already on the executor
      return;
    }
  }
  park(host, std::move(p));
}

void AgentGateway::park(const std::string& host, Parked p) {
  if (p.deadline <= clock_.monotonic()) {
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
      p.seq = ++park_seq_;
      deadlines_.push({p.deadline, host, p.seq});
      parked_[host] = std::move(p);
    }
  }
  if (replaced) replaced->reply(std::optional<json>());
}

void AgentGateway::report(const std::string& host, const std::string& assignment_id, json body, std::string text,
                          ReportReply reply) {
  // The class of the report's run: the assignment id is "<run>:<host>:<seq>".
  const Priority priority = options_.by_priority ? runs_.runPriority(assignment_id.substr(0, assignment_id.find(':')))
                                                 : Priority::kMaintenance;
  bool drain = false, express = false;
  {
    std::lock_guard lock(mu_);
    const std::size_t bytes = text.size();
    report_queues_[static_cast<int>(priority)].push_back({{assignment_id, host, std::move(body), std::move(text)}, bytes,
                                                          std::move(reply), clock_.monotonic(), priority});
    // A pre-job report that finds every drain busy starts the express drain, which takes
    // pre-job reports only: a job's check never waits behind a rollout's transactions.
    if (drains_ >= options_.report_drains && priority == Priority::kPreJob && options_.by_priority && !express_) {
      express_ = true;
      express = true;
    } else if (drains_ < options_.report_drains) {
      ++drains_;
      drain = true;
    }
  }
  if (drain) report_executor_->post([this] { drainReports(false); });
  if (express) report_executor_->post([this] { drainReports(true); });
}

void AgentGateway::drainClaims() {
  for (;;) {
    std::map<std::string, QueuedClaim> batch;  // one claim per host: its newest poll
    std::vector<Parked> superseded;             // older polls of a host (its agent gave up on them)
    {
      std::lock_guard lock(mu_);
      while (!claim_queue_.empty() && batch.size() < options_.claim_batch) {
        QueuedClaim c = std::move(claim_queue_.front());
        claim_queue_.pop_front();
        auto [it, fresh] = batch.try_emplace(c.host);
        if (!fresh) superseded.push_back(std::move(it->second.poll));
        it->second = std::move(c);
      }
      if (batch.empty()) {
        --claim_drains_;
        return;
      }
    }
    for (auto& p : superseded) p.reply(std::optional<json>());
    std::vector<std::string> hosts;
    for (const auto& [h, _] : batch) hosts.push_back(h);
    auto work = runs_.claimBatch(hosts);
    for (auto& [host, c] : batch) {
      if (!work.ok()) {
        c.poll.reply(work.error());
        continue;
      }
      if (auto w = work->find(host); w != work->end()) {
        {
          std::lock_guard lock(mu_);
          auto& k = known_[host];
          k.handed_out = w->second.assignment.id;
          k.epoch = c.epoch;
          k.lane = w->second.assignment.run_id + "/" + w->second.group;
        }
        c.poll.reply(std::optional<json>(json{{"assignment", protocol::toJson(w->second.assignment)}}));
        continue;
      }
      // Nothing for the host. Unless it was notified since the claim began (new work that the
      // claim may not have seen), it has nothing pending: the poll parks.
      bool again;
      {
        std::lock_guard lock(mu_);
        again = epoch_[host] != c.epoch;
        if (!again) pending_.erase(host);
      }
      if (again) executor_.post([this, host = host, p = std::move(c.poll)]() mutable { check(host, std::move(p)); });
      else park(host, std::move(c.poll));
    }
  }
}

std::string AgentGateway::laneOf(const AgentReport& r) const {
  if (auto it = known_.find(r.host); it != known_.end() && it->second.handed_out == r.assignment_id && !it->second.lane.empty())
    return it->second.lane;
  return "host " + r.host;
}

void AgentGateway::drainReports(bool express) {
  for (;;) {
    std::vector<QueuedReport> batch;
    std::vector<std::uint64_t> epochs;
    std::set<std::string> lanes;  // of this batch, held in busy_lanes_ until its transaction ends
    std::uint64_t deferred = 0;
    {
      std::lock_guard lock(mu_);
      std::set<std::string> ids;
      std::size_t bytes = 0;
      bool full = false;
      const auto now = clock_.monotonic();
      // Takes from `queue` in arrival order; with `aged_only`, only reports that have waited the
      // starvation bound (the older ones come first, so it stops at the first younger one).
      auto take = [&](std::deque<QueuedReport>& queue, bool aged_only) {
        for (auto it = queue.begin(); it != queue.end() && !full;) {
          if (batch.size() >= options_.report_batch) {
            full = true;
            break;
          }
          if (aged_only && now - it->queued_at < options_.starvation_bound) break;
          if (!batch.empty() && bytes + it->bytes > options_.report_batch_bytes) {
            full = true;
            break;
          }
          // A repeat of a report in this batch (a retry that caught up) waits for the next one.
          if (ids.count(it->request.assignment_id)) {
            ++it;
            continue;
          }
          // A report of a group that another drain's transaction holds waits for the next batch
          // (in this transaction it would only wait for that one's lock on the group's row, and
          // hold up the rest of its batch); the holder takes it when it is done, with the rest
          // of the group's reports that arrived meanwhile.
          std::string lane = laneOf(it->request);
          if (busy_lanes_.count(lane) && !lanes.count(lane)) {
            ++deferred;
            ++it;
            continue;
          }
          ids.insert(it->request.assignment_id);
          if (lanes.insert(lane).second) busy_lanes_.insert(std::move(lane));
          bytes += it->bytes;
          epochs.push_back(epoch_[it->request.host]);
          if (aged_only) ++reports_aged_;
          batch.push_back(std::move(*it));
          it = queue.erase(it);
        }
      };
      if (express) {
        take(report_queues_[0], false);
      } else {
        // First what waited past the bound in the lower classes, then class by class.
        if (options_.by_priority)
          for (int c = 1; c < kPriorities; ++c) take(report_queues_[static_cast<std::size_t>(c)], true);
        for (auto& queue : report_queues_) take(queue, false);
      }
      if (batch.empty()) {
        if (express) express_ = false;
        else --drains_;
        return;
      }
    }
    std::vector<AgentReport> requests;
    requests.reserve(batch.size());
    const auto began = clock_.monotonic();
    {
      std::lock_guard lock(latency_mu_);
      for (const auto& q : batch) {
        const double waited = std::chrono::duration<double>(began - q.queued_at).count();
        report_queue_seconds_.record(waited);
        if (q.priority == Priority::kPreJob) prejob_queue_seconds_.record(waited);
        ++reports_by_priority_[static_cast<std::size_t>(q.priority)];
      }
    }
    for (auto& q : batch) requests.push_back(std::move(q.request));
    auto answers = runs_.reportBatch(requests);
    {
      std::lock_guard lock(mu_);
      for (const auto& l : lanes) busy_lanes_.erase(l);
    }
    reports_deferred_ += deferred;
    {
      std::lock_guard lock(latency_mu_);
      // Per report: every report of the batch waited for the whole transaction.
      const double took = std::chrono::duration<double>(clock_.monotonic() - began).count();
      report_apply_seconds_.record(took, batch.size());
    }
    for (std::size_t k = 0; k < batch.size(); ++k) {
      const std::string& host = requests[k].host;
      const std::string& id = requests[k].assignment_id;
      auto& answer = answers[k];
      std::optional<Parked> ended;
      if (answer.ok() && answer->outcome != ReportOutcome::kStale) {
        ++reports_;
        if (answer->next) ++reports_handed_out_;
        std::lock_guard lock(mu_);
        known_[host] = {id, answer->next ? answer->next->id : "", epochs[k],
                        answer->next ? answer->next->run_id + "/" + answer->next_group : ""};
        if (auto it = parked_.find(host); it != parked_.end() && it->second.running == id) {
          ended = std::move(it->second);
          parked_.erase(it);
        }
      }
      batch[k].reply(std::move(answer));
      // Its step is over: the agent polls again with what it runs now.
      if (ended) ended->reply(std::optional<json>());
    }
    ++report_batches_;
  }
}

void AgentGateway::notify(const std::string& host) {
  std::optional<Parked> woken;
  {
    std::lock_guard lock(mu_);
    pending_.insert(host);
    ++epoch_[host];
    auto it = parked_.find(host);
    if (it != parked_.end()) {
      woken = std::move(it->second);
      parked_.erase(it);
    }
  }
  if (woken) executor_.post([this, host, p = std::move(*woken)]() mutable { check(host, std::move(p)); });
}

void AgentGateway::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    clock_.waitFor(lock, cv_, options_.scan_interval, [&] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    expireDue();
    lock.lock();
  }
}

std::size_t AgentGateway::expireDue() {
  std::vector<Parked> expired;
  {
    std::lock_guard lock(mu_);
    const auto now = clock_.monotonic();
    while (!deadlines_.empty() && deadlines_.top().at <= now) {
      const Deadline d = deadlines_.top();
      deadlines_.pop();
      auto it = parked_.find(d.host);
      if (it == parked_.end() || it->second.seq != d.seq) continue;  // answered or parked anew since
      expired.push_back(std::move(it->second));
      parked_.erase(it);
    }
  }
  for (auto& p : expired) p.reply(std::optional<json>());
  return expired.size();
}

void AgentGateway::writerLoop() {
  // The database work of the gateway, on its own thread so that a slow write (a 100,000-host
  // fleet's heartbeats) never delays the parked polls' deadlines.
  for (;;) {
    const auto wait = writerTurn();
    std::unique_lock lock(mu_);
    if (stopping_) break;
    clock_.waitFor(lock, cv_, wait, [&] { return stopping_; });
    if (stopping_) break;
  }
}

std::chrono::milliseconds AgentGateway::writerTurn() {
  const auto now = clock_.monotonic();
  std::vector<Heartbeat> beats;
  const bool refresh = now >= next_refresh_;
  {
    std::lock_guard lock(mu_);
    if (now >= next_flush_) {
      next_flush_ = now + options_.heartbeat_flush;
      beats.reserve(beats_.size());
      for (auto& [_, b] : beats_) beats.push_back(std::move(b));
      beats_.clear();
    }
  }
  if (refresh) next_refresh_ = now + options_.pending_refresh;
  if (!beats.empty()) {
    auto written = store_.recordHeartbeats(beats);
    if (!written.ok()) {
      // Kept for the next flush (a newer poll of the same host wins): a write that gave way to
      // a host transition's row locks, or a database away for a moment, loses no host's poll.
      std::lock_guard lock(mu_);
      for (auto& b : beats) {
        const std::string host = b.host;
        beats_.try_emplace(host, std::move(b));
      }
    }
    failures_.noted(written, "agent gateway: recording agents' heartbeats");
  }
  if (refresh) {
    auto hosts = store_.hostsWithOpenWork();
    if (failures_.noted(hosts, "agent gateway: reading the hosts with work"))
      for (const auto& h : *hosts) {
        bool wake = false;
        {
          std::lock_guard relock(mu_);
          if (pending_.count(h) == 0) {
            // Only a poll that holds no step takes work: an idle parked one is woken; a host
            // whose poll is on its way is marked, without moving its epoch (what is known of
            // its running step stays true), so its next idle poll claims. A poll parked with
            // running= is left alone: it reads its step when it ends.
            auto it = parked_.find(h);
            if (it == parked_.end()) pending_.insert(h);
            else wake = it->second.running.empty();
          }
        }
        if (wake) notify(h);
      }
  }
  const auto next = std::min(next_flush_, next_refresh_);
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::ceil<std::chrono::milliseconds>(next - clock_.monotonic()));
}

}  // namespace kiln::runs
