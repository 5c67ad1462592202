#include "agents/sim/fleet/fleet.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>

#include "agents/sim/host_sim.h"

namespace kiln::vfleet {

using nlohmann::json;
using std::chrono::milliseconds;

struct Fleet::Host {
  enum class Phase { kNew, kEnrolling, kActive, kRejected };
  struct Running {
    Assignment a;
    SimProcess process;
    SteadyClock::time_point started;
    Loop::TimerId timer = 0;
  };
  struct Report {
    std::string id;
    json body;
    bool in_flight = false;
    Loop::TimerId timer = 0;
    int failures = 0;
  };

  sim::HostState state;
  std::string token;
  Phase phase = Phase::kNew;
  bool counted_enrolled = false;
  bool enrol_queued = false;    // waiting for a free enrolment slot
  bool woken = false;           // a sibling got work while this host's poll was in flight
  std::string pod;              // hosts of one pod wake each other (wakeSiblings)
  bool dirty = false;           // state changed since start: saved at stop
  Loop::TimerId timer = 0;      // the next poll or enrolment attempt
  std::uint64_t poll_gen = 0;   // the latest poll sent; older answers are superseded
  int failures = 0;             // consecutive poll or enrolment errors
  SteadyClock::time_point hot_until{};
  std::optional<Running> running;
  std::optional<Report> report;
};

namespace {

bool retryable(const Result<HttpResponse>& r) {
  return !r.ok() || r->status >= 500 || r->status == 429 || r->status == 408;
}

std::string describe(const Result<HttpResponse>& r) {
  if (!r.ok()) return r.error().message;
  std::string body = r->body.size() > 200 ? r->body.substr(0, 200) + "..." : r->body;
  return "HTTP " + std::to_string(r->status) + " " + body;
}

}  // namespace


Fleet::Fleet(Loop& loop, Transport& transport, HostStore& store, FleetSettings settings, LogSink log)
    : loop_(loop),
      transport_(transport),
      store_(store),
      settings_(std::move(settings)),
      policy_(settings_.poll),
      log_(std::move(log)),
      rng_(settings_.seed) {}

Fleet::~Fleet() {
  for (auto& h : hosts_) {
    loop_.cancel(h->timer);
    if (h->running) loop_.cancel(h->running->timer);
    if (h->report) loop_.cancel(h->report->timer);
  }
  loop_.cancel(stop_timer_);
}

void Fleet::log(LogLevel level, const std::string& msg) const {
  if (log_) log_(level, msg);
}

void Fleet::addHost(sim::HostState state, const std::string& pod) {
  KILN_CHECK(!started_);
  KILN_CHECK(by_id_.count(state.host) == 0);
  auto h = std::make_unique<Host>();
  h->state = std::move(state);
  h->pod = pod;
  if (!pod.empty()) pods_[pod].push_back(h.get());
  by_id_[h->state.host] = h.get();
  hosts_.push_back(std::move(h));
  counters_.hosts = hosts_.size();
}

const sim::HostState* Fleet::hostState(const std::string& host) const {
  auto it = by_id_.find(host);
  return it == by_id_.end() ? nullptr : &it->second->state;
}

Status Fleet::injectFault(const std::string& host, const sim::Fault& fault) {
  auto it = by_id_.find(host);
  if (it == by_id_.end()) return notFound("no simulated host '" + host + "'");
  it->second->dirty = true;
  sim::HostSim sim(it->second->state);
  return sim.setFault(fault);
}

Result<int> Fleet::clearFaults(const std::string& host, std::optional<sim::FaultKind> kind) {
  auto it = by_id_.find(host);
  if (it == by_id_.end()) return notFound("no simulated host '" + host + "'");
  it->second->dirty = true;
  sim::HostSim sim(it->second->state);
  return sim.clearFaults(kind);
}

void Fleet::start() {
  KILN_CHECK(!started_);
  started_ = true;
  const auto ramp = std::max<std::int64_t>(settings_.ramp.count(), 0);
  std::uniform_int_distribution<std::int64_t> when(0, ramp);
  std::weak_ptr<int> life = life_;
  for (auto& hp : hosts_) {
    Host* h = hp.get();
    if (auto token = store_.loadToken(h->state.host)) {
      h->token = *token;
      h->phase = Host::Phase::kActive;
      h->counted_enrolled = true;
      counters_.enrolled++;
      schedulePoll(*h, milliseconds(when(rng_)));
    } else {
      h->timer = loop_.after(milliseconds(when(rng_)), [this, life, h] {
        if (life.expired()) return;
        h->timer = 0;
        enrol(*h);
      });
    }
  }
}

// ---- enrolment -----------------------------------------------------------------------------

void Fleet::enrol(Host& h) {
  if (stopping_ || h.phase == Host::Phase::kEnrolling || h.phase == Host::Phase::kRejected) return;
  if (enrolling_ >= std::max(1, settings_.max_enrolling)) {
    if (!h.enrol_queued) {
      h.enrol_queued = true;
      enrol_queue_.push_back(&h);
    }
    return;
  }
  h.enrol_queued = false;
  h.phase = Host::Phase::kEnrolling;
  enrolling_++;
  const protocol::Registration registration{h.state.host, h.state.boot_id, kAgentVersion, inventoryOf(h.state)};
  HttpRequest req{"POST", protocol::registerPath(), settings_.enroll_token, protocol::toJson(registration).dump(),
                  Priority::kHigh};
  const auto sent = loop_.now();
  std::weak_ptr<int> life = life_;
  Host* hp = &h;
  transport_.send(std::move(req), [this, life, hp, sent](Result<HttpResponse> r) {
    if (life.expired()) return;
    onEnrolled(*hp, sent, std::move(r));
  });
}

void Fleet::enrolNext() {
  while (!stopping_ && enrolling_ < std::max(1, settings_.max_enrolling) && !enrol_queue_.empty()) {
    Host* next = enrol_queue_.front();
    enrol_queue_.pop_front();
    if (!next->enrol_queued) continue;
    next->enrol_queued = false;
    enrol(*next);
  }
}

void Fleet::onEnrolled(Host& h, SteadyClock::time_point sent, Result<HttpResponse> r) {
  request_latency_.record(loop_.now() - sent);
  enrolling_--;
  enrolNext();
  if (r.ok() && r->status == 200) {
    if (auto enrolment = protocol::enrolmentFromBody(r->body)) {
      h.token = std::move(enrolment->token);
      h.phase = Host::Phase::kActive;
      h.failures = 0;
      counters_.enrolments++;
      if (!h.counted_enrolled) {
        h.counted_enrolled = true;
        counters_.enrolled++;
      }
      if (auto st = store_.saveToken(h.state.host, h.token); !st.ok())
        log(LogLevel::kWarn, h.state.host + ": cannot keep its agent token: " + st.error().message);
      if (stopping_) return maybeFinishStop();
      if (h.report && !h.report->in_flight) return sendReport(h);
      schedulePoll(h, milliseconds(0));
      return;
    }
  }
  if (!retryable(r) && r->status != 200) {
    // 404: not in the fleet; 401/403: the enrolment token is refused; 4xx: a bad request.
    // None of them gets better by asking again.
    h.phase = Host::Phase::kRejected;
    counters_.rejected++;
    log(LogLevel::kError, h.state.host + ": enrolment refused: " + describe(r));
    if (stopping_) maybeFinishStop();
    return;
  }
  counters_.enrol_errors++;
  h.phase = Host::Phase::kNew;
  h.failures++;
  log(LogLevel::kDebug, h.state.host + ": enrolment failed: " + describe(r));
  if (stopping_) return maybeFinishStop();
  std::weak_ptr<int> life = life_;
  Host* hp = &h;
  h.timer = loop_.after(policy_.backoff(h.failures, rng_), [this, life, hp] {
    if (life.expired()) return;
    hp->timer = 0;
    enrol(*hp);
  });
}

void Fleet::tokenRefused(Host& h) {
  log(LogLevel::kInfo, h.state.host + ": agent token refused (401): enrolling again");
  h.token.clear();
  loop_.cancel(h.timer);
  h.timer = 0;
  h.phase = Host::Phase::kNew;
  enrol(h);
}

// ---- polling -------------------------------------------------------------------------------

void Fleet::schedulePoll(Host& h, SteadyClock::duration delay) {
  loop_.cancel(h.timer);
  std::weak_ptr<int> life = life_;
  Host* hp = &h;
  h.timer = loop_.after(delay, [this, life, hp] {
    if (life.expired()) return;
    hp->timer = 0;
    poll(*hp);
  });
}

void Fleet::poll(Host& h) {
  if (stopping_ || h.phase != Host::Phase::kActive) return;
  // A finished step is reported before new work is asked for; the report's answer polls.
  if (h.report && !h.running) return;
  const bool hot = h.running || loop_.now() < h.hot_until;
  const PollDecision d = policy_.decide(hot, static_cast<int>(counters_.long_polls_in_flight), rng_);
  const std::string target = protocol::workPath(h.state.host, d.wait_s, h.state.boot_id, h.running ? h.running->a.id : "");
  HttpRequest req{"GET", target, h.token, "", Priority::kNormal,
                  milliseconds(d.wait_s * 1000) + settings_.poll_request_slack};
  const std::uint64_t gen = ++h.poll_gen;
  {
    // A poll still queued when the host made a newer one (its step was reported meanwhile)
    // would only ask kilnd about a step that is over.
    std::weak_ptr<int> alive = life_;
    Host* host = &h;
    req.wanted = [alive, host, gen] { return !alive.expired() && host->poll_gen == gen; };
  }
  counters_.polls++;
  counters_.polls_in_flight++;
  if (d.long_poll) counters_.long_polls_in_flight++;
  const auto sent = loop_.now();
  std::weak_ptr<int> life = life_;
  Host* hp = &h;
  const bool long_poll = d.long_poll;
  const milliseconds then = d.then;
  transport_.send(std::move(req), [=, this](Result<HttpResponse> r) {
    if (life.expired()) return;
    onPoll(*hp, gen, long_poll, then, sent, std::move(r));
  });
}

void Fleet::onPoll(Host& h, std::uint64_t gen, bool long_poll, milliseconds then,
                   SteadyClock::time_point sent, Result<HttpResponse> r) {
  counters_.polls_in_flight--;
  if (long_poll) counters_.long_polls_in_flight--;
  if (gen != h.poll_gen) return;  // superseded (perhaps dropped unsent): not a latency
  // Woken while this poll was in flight: whatever it answers, the wake-up is used up here.
  const bool woken = std::exchange(h.woken, false);
  const auto latency = loop_.now() - sent;
  poll_latency_.record(latency);
  if (r.ok() && (r->status == 200 || !long_poll)) quick_poll_latency_.record(latency);
  if (stopping_ || h.phase != Host::Phase::kActive) return;

  if (retryable(r) || (r->status != 200 && r->status != 204 && r->status != 401)) {
    counters_.poll_errors++;
    h.failures++;
    log(h.failures == 1 ? LogLevel::kWarn : LogLevel::kDebug,
        h.state.host + ": poll failed: " + describe(r));
    schedulePoll(h, policy_.backoff(h.failures, rng_));
    return;
  }
  if (r->status == 401) return tokenRefused(h);
  h.failures = 0;
  if (r->status == 204) {
    // After a long poll, again at once (a few ms of jitter keeps hosts from moving in step);
    // so too after a short poll that was in flight when a sibling got work.
    if (long_poll || woken) then = milliseconds(std::uniform_int_distribution<int>(0, 20)(rng_));
    schedulePoll(h, then);
    return;
  }
  auto j = json::parse(r->body, nullptr, false);
  if (!j.is_object()) {
    counters_.poll_errors++;
    log(LogLevel::kWarn, h.state.host + ": poll answer is not a JSON object: " + describe(r));
    schedulePoll(h, policy_.backoff(++h.failures, rng_));
    return;
  }
  if (j.contains("cancel") && j["cancel"].is_array() && h.running) {
    for (const auto& id : j["cancel"]) {
      if (id.is_string() && h.running && id.get<std::string>() == h.running->a.id) cancelStep(h);
    }
  }
  if (j.contains("assignment") && j["assignment"].is_object()) {
    if (h.running || h.report) {
      log(LogLevel::kWarn, h.state.host + ": got an assignment while busy; ignored");
    } else {
      startStep(h, j["assignment"]);
      return schedulePoll(h, settings_.running_poll_delay);
    }
  }
  schedulePoll(h, milliseconds(0));
}

// ---- steps ---------------------------------------------------------------------------------

void Fleet::wakeSiblings(Host& h) {
  auto it = pods_.find(h.pod);
  if (it == pods_.end()) return;
  const auto now = loop_.now();
  for (Host* s : it->second) {
    if (s == &h || s->phase != Host::Phase::kActive || s->running || s->report) continue;
    if (s->failures > 0) continue;  // backing off from kilnd's errors: not hurried
    if (now < s->hot_until) continue;  // hot: it holds a long poll or polls often already
    s->hot_until = now + settings_.hot_window;
    counters_.sibling_wakeups++;
    if (s->timer != 0) {
      schedulePoll(*s, milliseconds(std::uniform_int_distribution<int>(0, 20)(rng_)));
    } else {
      s->woken = true;  // its poll is in flight: a long poll sees the work, a short one retries
    }
  }
}

void Fleet::startStep(Host& h, const json& assignment) {
  counters_.assignments++;
  const bool was_idle = loop_.now() >= h.hot_until;
  h.hot_until = loop_.now() + settings_.hot_window;
  if (was_idle && !stopping_) wakeSiblings(h);
  auto a = assignmentFromJson(assignment);
  if (!a.ok()) {
    log(LogLevel::kWarn, h.state.host + ": " + a.error().message);
    if (assignment.contains("id") && assignment["id"].is_string()) {
      std::int64_t lease = assignment.value("lease", std::int64_t{0});
      queueReport(h, assignment["id"].get<std::string>(),
                  invalidAssignmentBody(h.state.host, lease, h.state.boot_id, a.error().message));
    }
    return;
  }
  h.dirty = true;
  sim::ToolContext ctx{settings_.timestamp(), settings_.read_file};
  const double factor =
      durationFactor(settings_.seed, h.state.host, a->id, settings_.duration_spread);
  SimProcess p = startProcess(h.state, *a, settings_.time_scale, ctx, factor);
  if (!p.started) {
    counters_.steps_done++;
    queueReport(h, a->id, finishProcess(h.state, *a, p, Ending::kFinished, SteadyClock::duration(0)));
    return;
  }
  counters_.running++;
  const auto end = p.end();
  h.running = Host::Running{std::move(*a), std::move(p), loop_.now(), 0};
  std::weak_ptr<int> life = life_;
  Host* hp = &h;
  h.running->timer = loop_.after(end, [this, life, hp] {
    if (life.expired()) return;
    hp->running->timer = 0;
    onStepEnd(*hp);
  });
}

void Fleet::onStepEnd(Host& h) {
  KILN_CHECK(h.running.has_value());
  Host::Running run = std::move(*h.running);
  h.running.reset();
  counters_.running--;
  counters_.steps_done++;
  const Ending ending = run.process.timesOut() ? Ending::kTimedOut : Ending::kFinished;
  queueReport(h, run.a.id,
              finishProcess(h.state, run.a, run.process, ending, run.process.end()));
}

void Fleet::cancelStep(Host& h) {
  KILN_CHECK(h.running.has_value());
  Host::Running run = std::move(*h.running);
  h.running.reset();
  loop_.cancel(run.timer);
  counters_.running--;
  counters_.steps_done++;
  counters_.cancels++;
  queueReport(h, run.a.id, finishProcess(h.state, run.a, run.process, Ending::kCancelled,
                                         loop_.now() - run.started));
}

// ---- reports -------------------------------------------------------------------------------

void Fleet::queueReport(Host& h, const std::string& id, json body) {
  KILN_CHECK(!h.report.has_value());
  h.report = Host::Report{id, std::move(body)};
  sendReport(h);
}

void Fleet::sendReport(Host& h) {
  KILN_CHECK(h.report.has_value());
  if (h.phase != Host::Phase::kActive) return;  // enrolling: onEnrolled sends it
  h.report->in_flight = true;
  // A host runs one step at a time: reporting, it holds none, so kilnd may answer with the next.
  h.report->body[protocol::report_field::kReady] = !stopping_;
  HttpRequest req{"POST", protocol::resultPath(h.report->id), h.token, protocol::dumpJson(h.report->body),
                  Priority::kHigh};
  const auto sent = loop_.now();
  std::weak_ptr<int> life = life_;
  Host* hp = &h;
  transport_.send(std::move(req), [this, life, hp, sent](Result<HttpResponse> r) {
    if (life.expired()) return;
    onReport(*hp, sent, std::move(r));
  });
}

void Fleet::onReport(Host& h, SteadyClock::time_point sent, Result<HttpResponse> r) {
  KILN_CHECK(h.report.has_value());
  h.report->in_flight = false;
  request_latency_.record(loop_.now() - sent);
  if (r.ok() && r->status == 200) {
    counters_.reports_ok++;
    auto answer = protocol::reportReplyFromBody(r->body);
    if (answer && answer->assignment) return afterReport(h, &*answer->assignment);
    return afterReport(h);
  }
  if (r.ok() && r->status == 409) {
    counters_.reports_conflict++;
    log(LogLevel::kInfo, h.state.host + ": report of " + h.report->id + " is stale (409): dropped");
    return afterReport(h);
  }
  if (r.ok() && r->status == 401 && !stopping_) return tokenRefused(h);
  if (!retryable(r)) {
    counters_.reports_dropped++;
    log(LogLevel::kError, h.state.host + ": report of " + h.report->id + " refused: " + describe(r));
    return afterReport(h);
  }
  counters_.report_errors++;
  h.report->failures++;
  log(h.report->failures == 1 ? LogLevel::kWarn : LogLevel::kDebug,
      h.state.host + ": report of " + h.report->id + " failed, will retry: " + describe(r));
  if (stopping_) return maybeFinishStop();
  std::weak_ptr<int> life = life_;
  Host* hp = &h;
  h.report->timer = loop_.after(policy_.backoff(h.report->failures, rng_), [this, life, hp] {
    if (life.expired()) return;
    hp->report->timer = 0;
    sendReport(*hp);
  });
}

void Fleet::afterReport(Host& h, const json* next) {
  h.report.reset();
  h.hot_until = loop_.now() + settings_.hot_window;
  if (stopping_) return maybeFinishStop();  // a next step handed out now is abandoned, like a running one
  if (next) startStep(h, *next);
  // Poll now for the next step; or, holding one, with running=<it> for its cancellation once it
  // has run running_poll_delay (a step that ends sooner is never polled for; kilnd answers a
  // poll still parked with running=<the reported id>).
  schedulePoll(h, h.running ? settings_.running_poll_delay : milliseconds(0));
}

// ---- stop ----------------------------------------------------------------------------------

void Fleet::stop(SteadyClock::duration grace, std::function<void()> done) {
  if (stopping_) return;
  stopping_ = true;
  stop_done_ = std::move(done);
  for (auto& hp : hosts_) {
    Host& h = *hp;
    loop_.cancel(h.timer);
    h.timer = 0;
    if (h.running) {
      loop_.cancel(h.running->timer);
      h.running.reset();
      counters_.running--;
    }
    // A report waiting for its retry goes now, once.
    if (h.report && !h.report->in_flight && h.phase == Host::Phase::kActive) {
      loop_.cancel(h.report->timer);
      h.report->timer = 0;
      sendReport(h);
    }
  }
  std::weak_ptr<int> life = life_;
  stop_timer_ = loop_.after(grace, [this, life] {
    if (life.expired()) return;
    stop_timer_ = 0;
    for (auto& hp : hosts_) {
      if (hp->report && hp->report->in_flight) hp->report->in_flight = false;  // give up
    }
    maybeFinishStop();
  });
  maybeFinishStop();
}

void Fleet::maybeFinishStop() {
  if (!stopping_ || !stop_done_) return;
  for (auto& hp : hosts_) {
    if ((hp->report && hp->report->in_flight) || hp->phase == Host::Phase::kEnrolling) {
      if (stop_timer_ != 0) return;  // still within the grace period
    }
  }
  loop_.cancel(stop_timer_);
  stop_timer_ = 0;
  int unsaved = 0;
  // Only hosts that ran something: the others start again from the same defaults.
  for (auto& hp : hosts_) {
    if (hp->dirty && !store_.saveState(hp->state).ok()) unsaved++;
  }
  if (unsaved > 0) log(LogLevel::kWarn, std::to_string(unsaved) + " host states not saved");
  auto done = std::move(stop_done_);
  stop_done_ = nullptr;
  done();
}

}  // namespace kiln::vfleet
