#include "agents/agent/agent.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "agents/parsers/parsers.h"
#include "common/artifact_ref.h"

namespace kiln::agent {

using nlohmann::json;
using std::chrono::milliseconds;

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

std::string snippet(const std::string& body) {
  return body.size() > 300 ? body.substr(0, 300) + "..." : body;
}

}  // namespace

// Error backoff of docs/agent-protocol.md: 1 s doubling to 30 s, with jitter.
class Agent::Backoff {
 public:
  explicit Backoff(Agent& agent) : agent_(agent), next_(agent.settings_.backoff_initial) {}
  milliseconds next() {
    const milliseconds base = next_;
    next_ = std::min(agent_.settings_.backoff_max, next_ * 2);
    const double factor = 0.5 + 0.5 * agent_.random01();
    return milliseconds(static_cast<std::int64_t>(static_cast<double>(base.count()) * factor));
  }
  void reset() { next_ = agent_.settings_.backoff_initial; }

 private:
  Agent& agent_;
  milliseconds next_;
};

Agent::Agent(AgentSettings settings, Transport& transport, exec::ProcessRunner& runner,
             HostProbe& probe, Clock& clock, std::shared_ptr<Logger> log,
             std::function<double()> random01)
    : settings_(std::move(settings)),
      transport_(transport),
      runner_(runner),
      probe_(probe),
      clock_(clock),
      log_(std::move(log)),
      live_log_(log_->named("live_output")),
      random01_(std::move(random01)) {
  if (!random01_) {
    auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
    random01_ = [engine] { return std::uniform_real_distribution<double>(0, 1)(*engine); };
  }
}

Agent::~Agent() {
  requestStop();
  if (poller_.joinable()) poller_.join();
}

void Agent::requestStop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  transport_.interrupt();
}

bool Agent::stopping() const {
  std::lock_guard lock(mu_);
  return stopping_;
}

double Agent::random01() {
  std::lock_guard lock(random_mu_);
  return random01_();
}

void Agent::waitBackoff(milliseconds d) {
  std::unique_lock lock(mu_);
  clock_.waitFor(lock, cv_, d, [this] { return stopping_; });
}

std::string Agent::bootId() const {
  std::lock_guard lock(mu_);
  return boot_id_;
}

void Agent::refreshBootId() {
  auto id = probe_.bootId();
  if (!id) {
    log_->warn("cannot read the boot id: {}", id.error().message);
    return;
  }
  std::lock_guard lock(mu_);
  if (boot_id_ != *id) log_->info("boot id {}", *id);
  boot_id_ = *id;
}

// ---- run ---------------------------------------------------------------------------------

Status Agent::run() {
  auto journal = Journal::open(settings_.state_dir);
  if (!journal) return journal.error();
  journal_ = std::move(*journal);
  if (journal_->skippedLines() > 0) {
    log_->warn("journal {}: skipped {} unreadable line(s)", journal_->path().string(),
               journal_->skippedLines());
  }
  auto token = readAgentToken(settings_.state_dir);
  if (!token) return token.error();
  if (token->empty() && settings_.enroll_token_file.empty()) {
    return invalidArgument("no agent token in " + settings_.state_dir.string() +
                           " and no enrolment token file to enrol with");
  }
  refreshBootId();
  if (token->empty()) {
    if (!enrolLoop()) return okStatus();
  } else {
    std::int64_t renew_at = 0;
    std::ifstream renew(settings_.state_dir / kRenewFileName);
    if (renew >> renew_at) log_->info("agent token renewal due at {} ms", renew_at);
    std::lock_guard lock(mu_);
    token_ = *token;
    renew_at_ms_ = std::max<std::int64_t>(0, renew_at);
  }

  // Replay before taking new work: what the journal knows is settled first.
  std::vector<JournalEntry> unsettled;
  for (const JournalEntry& e : journal_->entries()) {
    if (!e.reported) unsettled.push_back(e);
  }
  for (const JournalEntry& e : unsettled) {
    if (stopping()) break;
    holding(e.id, [&] { resume(e); });
  }
  ensurePoller();

  while (true) {
    json next;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    const std::string id = next.is_object() && next.value("id", json()).is_string() ? next["id"].get<std::string>() : "";
    holding(id, [&] { process(next); });
  }
  if (poller_.joinable()) poller_.join();
  log_->info("stopped");
  return okStatus();
}

void Agent::holding(const std::string& id, const std::function<void()>& work) {
  {
    std::lock_guard lock(mu_);
    held_ = id;
  }
  work();
  {
    std::lock_guard lock(mu_);
    held_.clear();
  }
  cv_.notify_all();
}

// ---- enrolment -----------------------------------------------------------------------------

bool Agent::enrolLoop() {
  Backoff backoff(*this);
  while (!stopping()) {
    auto st = enrolOnce();
    if (st) return true;
    log_->warn("enrolment failed: {}", st.error().message);
    waitBackoff(backoff.next());
  }
  return false;
}

Status Agent::enrolOnce() {
  std::ifstream in(settings_.enroll_token_file);
  if (!in) return unavailable("cannot read enrolment token file " + settings_.enroll_token_file);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string enroll_token = trimmed(buf.str());
  if (enroll_token.empty()) return invalidContent(settings_.enroll_token_file + " is empty");

  json inventory = json::object();
  if (auto inv = probe_.inventory()) {
    inventory = inventoryForKilnd(*inv);
  } else {
    log_->warn("inventory: {}", inv.error().message);
  }
  const protocol::Registration registration{settings_.host, bootId(), kAgentVersion, std::move(inventory)};
  auto reply = transport_.send({"POST", registerPath(), dumpJson(protocol::toJson(registration)), enroll_token, false});
  if (!reply) return reply.error();
  if (reply->status != 200) {
    return Error(ErrorCode::kUnavailable, "register answered " + std::to_string(reply->status) +
                                              ": " + snippet(reply->body));
  }
  auto answer = protocol::enrolmentFromBody(reply->body);
  if (!answer) return invalidContent(answer.error().message + ": " + snippet(reply->body));
  if (auto st = adoptToken(*answer); !st) return st;
  log_->info("enrolled as {} (token id {})", settings_.host, answer->token_id);
  return okStatus();
}

Status Agent::adoptToken(const protocol::Enrolment& e) {
  if (auto st = writeAgentToken(settings_.state_dir, e.token); !st) return st;
  const std::int64_t renew_at = e.expires_in_s > 0 ? wallMs(clock_) + e.expires_in_s * 1000 * 2 / 3 : 0;
  const auto renew_file = settings_.state_dir / kRenewFileName;
  std::error_code ec;
  if (renew_at > 0)
    std::ofstream(renew_file, std::ios::trunc) << renew_at << "\n";
  else
    std::filesystem::remove(renew_file, ec);
  std::lock_guard lock(mu_);
  token_ = e.token;
  renew_at_ms_ = renew_at;
  return okStatus();
}

void Agent::renewIfDue() {
  std::string token;
  {
    std::lock_guard lock(mu_);
    if (renew_at_ms_ == 0 || wallMs(clock_) < renew_at_ms_ || stopping_) return;
    token = token_;
  }
  std::lock_guard enrol_lock(enrol_mu_);
  auto reply = transport_.send({"POST", protocol::renewPath(settings_.host), "", token, false});
  auto retry_later = [&](const std::string& why) {
    log_->warn("token renewal: {}; trying again in a minute", why);
    std::lock_guard lock(mu_);
    renew_at_ms_ = wallMs(clock_) + 60000;
  };
  if (!reply) return retry_later(reply.error().message);
  if (reply->status == 401) return;  // the poll's 401 re-enrols
  if (reply->status != 200) return retry_later("kilnd answered " + std::to_string(reply->status) + ": " + snippet(reply->body));
  auto answer = protocol::enrolmentFromBody(reply->body);
  if (!answer) return retry_later(answer.error().message);
  if (auto st = adoptToken(*answer); !st) return retry_later(st.error().message);
  log_->info("agent token renewed (token id {}, good for {} s)", answer->token_id, answer->expires_in_s);
}

bool Agent::reEnrol(const std::string& refused_token) {
  std::lock_guard enrol_lock(enrol_mu_);
  {
    std::lock_guard lock(mu_);
    if (token_ != refused_token) return true;  // another thread enrolled meanwhile
  }
  if (settings_.enroll_token_file.empty()) {
    log_->error("kilnd refused the agent token and there is no enrolment token file");
    return false;
  }
  log_->warn("kilnd refused the agent token: enrolling again");
  auto st = enrolOnce();
  if (!st) log_->warn("enrolment failed: {}", st.error().message);
  return st.ok();
}

// ---- poller --------------------------------------------------------------------------------

void Agent::pollLoop() {
  Backoff backoff(*this);
  int refused_in_a_row = 0;
  // The step the last running= decision was about, and since when the agent has held it.
  std::string timed;
  MonoTime timed_since{};
  while (true) {
    renewIfDue();
    std::string running, token, boot_id;
    {
      std::unique_lock lock(mu_);
      if (stopping_) break;
      auto current = [&]() -> std::string {
        if (!held_.empty()) return held_;
        if (!queue_.empty() && queue_.front().value("id", json()).is_string())
          return queue_.front()["id"].get<std::string>();
        return "";
      };
      running = current();
      if (!running.empty() && settings_.running_poll_delay.count() > 0) {
        if (running != timed) {
          timed = running;
          timed_since = clock_.monotonic();
        }
        // A step that ends within the delay is never polled for: its report's answer says
        // all a poll would have (kRunningPollDelayMs).
        const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.monotonic() - timed_since);
        if (waited < settings_.running_poll_delay) {
          clock_.waitFor(lock, cv_, settings_.running_poll_delay - waited,
                         [&] { return stopping_ || current() != running; });
          continue;
        }
      }
      token = token_;
      boot_id = boot_id_;
    }
    auto reply = transport_.send(
        {"GET", workPath(settings_.host, settings_.poll_wait_s, boot_id, running), "", token, true});
    if (stopping()) break;
    if (!reply) {
      log_->warn("poll: {}", reply.error().message);
      waitBackoff(backoff.next());
      continue;
    }
    if (reply->status != 401) refused_in_a_row = 0;
    if (reply->status == 200) {
      backoff.reset();
      handlePollAnswer(reply->body);
    } else if (reply->status == 204) {
      backoff.reset();
    } else if (reply->status == 401) {
      // A fresh token refused again must not turn into a tight enrol/poll loop.
      if (!reEnrol(token) || ++refused_in_a_row > 1) waitBackoff(backoff.next());
      continue;
    } else {
      log_->warn("poll answered {}: {}", reply->status, snippet(reply->body));
      waitBackoff(backoff.next());
    }
  }
  cancelAfterStopGrace();
}

void Agent::handlePollAnswer(const std::string& body) {
  auto answer = pollAnswerFromBody(body);
  if (!answer) {
    log_->warn("poll: {}: {}", answer.error().message, snippet(body));
    return;
  }
  std::lock_guard lock(mu_);
  if (answer->assignment) queue_.push_back(std::move(*answer->assignment));
  for (const std::string& id : answer->cancel) {
    if (running_ && running_->id == id) {
      log_->info("assignment {}: cancelled by kilnd", id);
      running_->cancel->cancel();
      continue;
    }
    const bool queued = std::any_of(queue_.begin(), queue_.end(), [&](const json& q) {
      return q.is_object() && q.value("id", json()) == json(id);
    });
    if (queued) {
      log_->info("assignment {}: cancelled by kilnd before it started", id);
      cancelled_ids_.insert(id);
    }
  }
  cv_.notify_all();
}

void Agent::queueHandedOut(const std::string& body) {
  auto answer = protocol::reportReplyFromBody(body);
  if (!answer || !answer->assignment) return;
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(*answer->assignment));
  cv_.notify_all();
}

void Agent::cancelAfterStopGrace() {
  std::unique_lock lock(mu_);
  if (!running_) return;
  const std::string id = running_->id;
  log_->info("stopping: giving step {} up to {} ms to finish", id, settings_.stop_grace.count());
  const bool done = clock_.waitFor(lock, cv_, settings_.stop_grace,
                                   [&] { return !running_ || running_->id != id; });
  if (done) return;
  log_->warn("stopping: cancelling step {}", id);
  running_->note = kStopNote;
  running_->cancel->cancel();
}

// ---- executor ------------------------------------------------------------------------------

void Agent::process(const json& raw) {
  auto parsed = assignmentFromJson(raw);
  if (!parsed) {
    const std::string id = raw.is_object() ? raw.value("id", std::string()) : std::string();
    log_->error("{}", parsed.error().message);
    if (id.empty()) return;  // nothing to report against
    const std::int64_t lease = raw.value("lease", json()).is_number_integer()
                                   ? raw["lease"].get<std::int64_t>()
                                   : 0;
    if (journal_->find(id, lease) != nullptr) return;
    Assignment bad;
    bad.id = id;
    bad.lease = lease;
    StepReport body = baseBody(bad);
    body.spawn_error = "invalid assignment: " + parsed.error().message;
    finish(id, lease, toJson(body));
    return;
  }
  const Assignment& a = *parsed;
  if (const JournalEntry* known = journal_->find(a.id, a.lease)) {
    {
      std::lock_guard lock(mu_);
      cancelled_ids_.erase(a.id);
    }
    if (known->reported) {
      log_->info("assignment {} lease {}: already reported, not run again", a.id, a.lease);
      return;
    }
    log_->info("assignment {} lease {}: known to the journal, not run again", a.id, a.lease);
    const JournalEntry copy = *known;  // the journal's entries move as it is written
    resume(copy);
    return;
  }
  log_->info("assignment {} lease {}: {} {}", a.id, a.lease, a.type,
             a.isStage() ? std::to_string(a.artifacts.size()) + " artifact(s)" : a.argv.front());
  if (settings_.allowed_executables && !a.isStage())
    if (auto why = executableRefusal(*settings_.allowed_executables, a.argv)) {
      // This host's own rule, whatever kilnd sent: nothing is spawned.
      log_->error("assignment {} lease {}: refused: {}", a.id, a.lease, *why);
      StepReport body = baseBody(a);
      body.spawn_error = "refused on this host: " + *why;
      finish(a.id, a.lease, toJson(body));
      return;
    }
  if (a.isStage()) {
    runStage(a);
  } else if (a.isReboot()) {
    runReboot(a);
  } else {
    runStep(a);
  }
}

Result<std::vector<std::string>> Agent::withArtifacts(const Assignment& a, const exec::CancelToken* cancel) {
  const bool names_artifact = std::any_of(a.argv.begin(), a.argv.end(), [](const std::string& arg) {
    return arg.find(kArtifactPlaceholderPrefix) != std::string::npos;
  });
  if (a.artifacts.empty() && !names_artifact) return a.argv;
  if (artifacts_ == nullptr) return unavailable("this agent has no artifact cache: the step's artifacts cannot be fetched");
  auto fetched = artifacts_->prepare(a.artifacts, cancel);
  if (!fetched) return fetched.error();
  std::map<std::string, std::string> paths;
  for (const auto& [sha, f] : *fetched) paths[sha] = f.path.string();
  return replaceArtifactPlaceholders(a.argv, paths);
}

void Agent::runStage(const Assignment& a) {
  auto cancel = beginRunning(a);
  const std::int64_t start = wallMs(clock_);
  Result<std::map<std::string, FetchedArtifact>> fetched =
      artifacts_ == nullptr ? Result<std::map<std::string, FetchedArtifact>>(unavailable("this agent has no artifact cache"))
                            : artifacts_->prepare(a.artifacts, cancel.get());
  const std::string note = endRunning();
  StepReport body = baseBody(a);
  body.agent_note = note;
  body.duration_ms = wallMs(clock_) - start;
  if (!fetched) {
    body.spawn_error = fetched.error().message;
    body.cancelled = cancel->cancelled();
    log_->error("assignment {}: staging failed: {}", a.id, fetched.error().message);
  } else {
    // A stage is a step that ran and exited 0: what it staged is its output.
    body.started = true;
    body.exit_code = 0;
    for (const auto& [sha, f] : *fetched)
      body.stdout_tail += "staged " + f.path.filename().string() + " sha256 " + sha + " " + std::to_string(f.bytes) +
                          " bytes " + (f.from_cache ? "already cached" : "from " + f.source) + "\n";
    body.stdout_bytes = static_cast<std::int64_t>(body.stdout_tail.size());
    log_->info("assignment {}: staged {} artifact(s)", a.id, fetched->size());
  }
  finish(a.id, a.lease, toJson(body));
}

StepReport Agent::baseBody(const Assignment& a) const {
  StepReport r;
  r.lease = a.lease;
  r.host = settings_.host;
  r.boot_id = bootId();
  return r;
}

void Agent::addProcessResult(StepReport& body, const Assignment& a, const exec::ProcessResult& r) const {
  body.started = r.started;
  body.spawn_error = r.spawn_error;
  body.exit_code = r.exit_code;
  body.signal = r.term_signal;
  body.timed_out = r.timed_out;
  body.cancelled = r.cancelled;
  body.duration_ms = r.duration.count();
  body.stdout_tail = r.stdout_tail;
  body.stderr_tail = r.stderr_tail;
  body.stdout_bytes = r.stdout_bytes;
  body.stderr_bytes = r.stderr_bytes;
  if (a.parse.empty() || !r.started || r.timed_out || r.cancelled) return;
  auto format = parsers::formatFromName(a.parse);
  if (!format) {
    body.parse_error = format.error().message;
  } else if (r.stdout_bytes > r.stdout_full.size()) {
    body.parse_error = "stdout is " + std::to_string(r.stdout_bytes) +
                          " bytes, over the agent's parse limit of " +
                          std::to_string(settings_.parse_capture_cap) + " bytes";
  } else if (auto doc = parsers::parse(*format, r.stdout_full)) {
    body.parsed = std::move(*doc);
  } else {
    body.parse_error = doc.error().message;
  }
  // A clean, parsed run sends only the step's parsed_output_cap of its stdout.
  trimParsedStdout(a, body);
}

void Agent::addInventory(StepReport& body) {
  auto inv = probe_.inventory();
  if (inv) {
    body.inventory = inventoryForKilnd(*inv);
    return;
  }
  log_->warn("inventory: {}", inv.error().message);
  std::string note = body.agent_note;
  body.agent_note = (note.empty() ? "" : note + "; ") + "inventory failed: " +
                       inv.error().message;
}

json Agent::startedRecord(const Assignment& a, const std::string& boot_id,
                          std::int64_t started_at_ms) const {
  return json{{"id", a.id},           {"lease", a.lease},
              {"pid", 0},             {"boot_id", boot_id},
              {"started_at_ms", started_at_ms}, {"assignment", toJson(a)}};
}

std::shared_ptr<exec::CancelToken> Agent::beginRunning(const Assignment& a) {
  auto cancel = std::make_shared<exec::CancelToken>();
  {
    std::lock_guard lock(mu_);
    if (cancelled_ids_.erase(a.id) > 0) cancel->cancel();
    running_ = Running{a.id, a.lease, cancel, ""};
  }
  ensurePoller();  // a reboot resumed from the journal is the first thing that may run
  return cancel;
}

void Agent::ensurePoller() {
  if (!poller_.joinable()) poller_ = std::thread([this] { pollLoop(); });
}

std::string Agent::endRunning() {
  std::string note;
  {
    std::lock_guard lock(mu_);
    if (running_) note = running_->note;
    running_.reset();
  }
  cv_.notify_all();
  return note;
}

void Agent::runStep(const Assignment& a) {
  auto cancel = beginRunning(a);
  // Artifacts first, before the journal says the step started: fetching twice is harmless, and
  // a step whose artifact is not the one kilnd named never starts.
  auto argv = withArtifacts(a, cancel.get());
  if (!argv) {
    const std::string note = endRunning();
    log_->error("assignment {}: not run: {}", a.id, argv.error().message);
    StepReport body = baseBody(a);
    body.spawn_error = argv.error().message;
    body.cancelled = cancel->cancelled();
    body.agent_note = note;
    finish(a.id, a.lease, toJson(body));
    return;
  }
  json started = startedRecord(a, bootId(), wallMs(clock_));
  if (auto st = journal_->started(started); !st) {
    // Without a journal record a restart could run the step twice: do not run it.
    endRunning();
    log_->error("assignment {}: {}", a.id, st.error().message);
    StepReport body = baseBody(a);
    body.spawn_error = "agent cannot write its journal: " + st.error().message;
    reportUntilDone(a.id, a.lease, toJson(body));
    return;
  }
  exec::ProcessSpec spec;
  spec.argv = std::move(*argv);
  spec.env = settings_.step_env;
  spec.timeout = milliseconds(a.timeout_ms);
  spec.kill_grace = milliseconds(a.kill_grace_ms);
  spec.output_cap = a.output_cap;
  spec.parse_capture_cap = a.parse.empty() ? 0 : settings_.parse_capture_cap;
  LiveOutputSender live(transport_, clock_, live_log_, settings_.host, a.id, a.lease,
                        [this] {
                          std::lock_guard lock(mu_);
                          return token_;
                        },
                        settings_.live_output);
  spec.on_output = [&live](bool is_stderr, const char* data, std::size_t n) { live.add(is_stderr, data, n); };
  exec::ProcessResult r = runner_.run(spec, cancel.get(), [&](int pid) {
    started["pid"] = pid;
    if (auto st = journal_->started(started); !st) {
      log_->error("assignment {}: {}", a.id, st.error().message);
    }
  });
  live.stop();  // the report carries the tails from here on
  const std::string note = endRunning();
  StepReport body = baseBody(a);
  addProcessResult(body, a, r);
  body.agent_note = note;
  if (a.inventory_after) addInventory(body);
  log_->info("assignment {}: exit {} signal {}{}{}", a.id, r.exit_code, r.term_signal,
             r.timed_out ? " timed out" : "", r.cancelled ? " cancelled" : "");
  finish(a.id, a.lease, toJson(body));
}

void Agent::runReboot(const Assignment& a) {
  auto cancel = beginRunning(a);
  refreshBootId();
  const std::string before = bootId();
  if (before.empty()) {
    endRunning();
    StepReport body = baseBody(a);
    body.spawn_error = "cannot read the boot id: a reboot could not be detected";
    finish(a.id, a.lease, toJson(body));
    return;
  }
  const std::int64_t started_at = wallMs(clock_);
  json started = startedRecord(a, before, started_at);
  if (auto st = journal_->started(started); !st) {
    endRunning();
    StepReport body = baseBody(a);
    body.spawn_error = "agent cannot write its journal: " + st.error().message;
    reportUntilDone(a.id, a.lease, toJson(body));
    return;
  }
  exec::ProcessSpec spec;
  spec.argv = a.argv;
  spec.env = settings_.step_env;
  spec.timeout = milliseconds(a.timeout_ms);
  spec.kill_grace = milliseconds(a.kill_grace_ms);
  spec.output_cap = a.output_cap;
  exec::ProcessResult r = runner_.run(spec, cancel.get(), [&](int pid) {
    started["pid"] = pid;
    if (auto st = journal_->started(started); !st) {
      log_->error("assignment {}: {}", a.id, st.error().message);
    }
  });
  StepReport body = baseBody(a);
  addProcessResult(body, a, r);
  if (stopping()) {
    // The machine is probably going down: the next start settles it by the boot id rule.
    endRunning();
    return;
  }
  if (!r.succeeded()) {
    body.agent_note = endRunning();
    finish(a.id, a.lease, toJson(body));
    return;
  }
  auto done = awaitReboot(a, before, started_at, std::move(body), cancel);
  const std::string note = endRunning();
  if (!done) return;
  if (!note.empty()) done->agent_note = note;
  finish(a.id, a.lease, toJson(*done));
}

std::optional<StepReport> Agent::awaitReboot(const Assignment& a, const std::string& boot_before,
                                       std::int64_t started_at_ms, StepReport body,
                                       const std::shared_ptr<exec::CancelToken>& cancel) {
  const std::int64_t deadline = started_at_ms + a.timeout_ms;
  while (true) {
    auto now_id = probe_.bootId();
    if (now_id && *now_id != boot_before) {
      {
        std::lock_guard lock(mu_);
        boot_id_ = *now_id;
      }
      log_->info("assignment {}: rebooted, boot id {}", a.id, *now_id);
      body.started = true;
      body.exit_code = 0;
      body.signal = 0;
      body.timed_out = false;
      body.boot_id = *now_id;
      body.duration_ms = std::max<std::int64_t>(0, wallMs(clock_) - started_at_ms);
      if (a.inventory_after) addInventory(body);
      return body;
    }
    if (!now_id) log_->warn("assignment {}: boot id: {}", a.id, now_id.error().message);
    body.boot_id = boot_before;
    body.duration_ms = std::max<std::int64_t>(0, wallMs(clock_) - started_at_ms);
    if (cancel->cancelled()) {
      body.cancelled = true;
      body.exit_code = -1;
      return body;
    }
    const std::int64_t left = deadline - wallMs(clock_);
    if (left <= 0) {
      log_->warn("assignment {}: boot id did not change within {} ms", a.id, a.timeout_ms);
      body.timed_out = true;
      body.exit_code = -1;
      return body;
    }
    std::unique_lock lock(mu_);
    clock_.waitFor(lock, cv_, std::min(settings_.reboot_check_interval, milliseconds(left)),
                   [&] { return stopping_ || cancel->cancelled(); });
    if (stopping_) return std::nullopt;
  }
}

void Agent::resume(const JournalEntry& entry) {
  if (entry.reported) return;
  if (entry.finished()) {
    log_->info("assignment {} lease {}: finished before the restart, reporting it", entry.id,
               entry.lease);
    reportUntilDone(entry.id, entry.lease, entry.result);
    return;
  }
  if (!entry.started.is_object()) return;
  auto assignment = assignmentFromJson(entry.started.value("assignment", json::object()));
  if (!assignment) {
    log_->error("journal: assignment {}: {}", entry.id, assignment.error().message);
    return;
  }
  const Assignment& a = *assignment;
  StepReport body = baseBody(a);
  const int pid = entry.started.value("pid", 0);
  const std::int64_t started_at = entry.started.value("started_at_ms", std::int64_t{0});
  body.started = pid != 0;
  body.duration_ms = std::max<std::int64_t>(0, wallMs(clock_) - started_at);
  if (a.isReboot()) {
    log_->info("assignment {}: reboot step was running at the restart: checking the boot id",
               a.id);
    const std::string before = entry.started.value("boot_id", "");
    auto cancel = beginRunning(a);
    auto done = awaitReboot(a, before, started_at, std::move(body), cancel);
    const std::string note = endRunning();
    if (!done) return;
    if (!note.empty()) done->agent_note = note;
    finish(a.id, a.lease, toJson(*done));
    return;
  }
  log_->warn("assignment {}: {} (pid {}): reported as failed, not run again", a.id,
             kRestartedNote, pid);
  body.agent_note = kRestartedNote;
  finish(a.id, a.lease, toJson(body));
}

void Agent::finish(const std::string& id, std::int64_t lease, json body) {
  if (auto st = journal_->finished(id, lease, body); !st) {
    log_->error("assignment {}: {}", id, st.error().message);
  }
  if (stopping()) return;  // reported at the next start
  reportUntilDone(id, lease, body);
}

bool Agent::reportUntilDone(const std::string& id, std::int64_t lease, const json& body) {
  json sent = body;
  {
    // Holding no other step, the agent takes its next one with the acknowledgement.
    std::lock_guard lock(mu_);
    sent[protocol::report_field::kReady] = queue_.empty() && !stopping_;
  }
  const std::string text = dumpJson(sent);
  Backoff backoff(*this);
  int refused_in_a_row = 0;
  auto settle = [&](const char* how) {
    log_->info("assignment {} lease {}: {}", id, lease, how);
    if (auto st = journal_->reported(id, lease); !st) {
      log_->error("assignment {}: {}", id, st.error().message);
    }
    return true;
  };
  while (true) {
    std::string token;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return false;
      token = token_;
    }
    auto reply = transport_.send({"POST", resultPath(id), text, token, false});
    if (!reply) {
      if (stopping()) return false;
      log_->warn("report {}: {}", id, reply.error().message);
      waitBackoff(backoff.next());
      continue;
    }
    switch (reply->status) {
      case 200:
        queueHandedOut(reply->body);
        return settle("reported");
      case 409:
        return settle("report refused: the lease is stale (step reassigned); dropped");
      case 401:
        if (!reEnrol(token) || ++refused_in_a_row > 1) waitBackoff(backoff.next());
        continue;
      case 400:
      case 404:
      case 410:
      case 422:
        // Sending the same report again cannot succeed: keeping it would wedge the agent.
        log_->error("report {}: kilnd answered {}: {}", id, reply->status, snippet(reply->body));
        return settle("report rejected; dropped");
      default:
        log_->warn("report {}: kilnd answered {}: {}", id, reply->status, snippet(reply->body));
        waitBackoff(backoff.next());
    }
  }
}

// ---- token file ----------------------------------------------------------------------------

Result<std::string> readAgentToken(const std::filesystem::path& state_dir) {
  const auto path = state_dir / kTokenFileName;
  std::ifstream in(path);
  if (!in) {
    if (!std::filesystem::exists(path)) return std::string();
    return unavailable("cannot read " + path.string());
  }
  std::stringstream buf;
  buf << in.rdbuf();
  return trimmed(buf.str());
}

Status writeAgentToken(const std::filesystem::path& state_dir, const std::string& token) {
  const auto path = state_dir / kTokenFileName;
  const auto tmp = state_dir / (std::string(kTokenFileName) + ".tmp");
  auto fail = [&](const std::string& what) {
    return unavailable(what + " " + tmp.string() + ": " + std::strerror(errno));
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return fail("cannot create");
  ::fchmod(fd, 0600);
  const std::string text = token + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return fail("cannot write");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename");
  int dir = ::open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return okStatus();
}

}  // namespace kiln::agent
