#pragma once
// Scripted collaborators for the agent's unit tests.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/agent/artifacts.h"
#include "agents/agent/host_probe.h"
#include "agents/agent/transport.h"

namespace kiln::agent::testing {

// A scripted kilnd. Polls take the next scripted poll answer, or block until one is scripted
// (or interrupt()); reports and registrations take their next scripted answer, or succeed.
class FakeTransport final : public Transport {
 public:
  Result<HttpReply> send(const HttpCall& call) override {
    std::unique_lock lock(mu_);
    Result<HttpReply> reply = unavailable("unset");
    if (call.path.find("/work?") != std::string::npos) {
      polls_.push_back(call);
      cv_.notify_all();
      cv_.wait(lock, [&] { return interrupted_ || !poll_answers_.empty(); });
      if (interrupted_) return unavailable("interrupted");
      reply = std::move(poll_answers_.front());
      poll_answers_.pop_front();
    } else if (call.path == "/api/v1/agents/register") {
      if (interrupted_) return unavailable("interrupted");
      registers_.push_back(call);
      if (!register_answers_.empty()) {
        reply = std::move(register_answers_.front());
        register_answers_.pop_front();
      } else {
        reply = newToken(0);
      }
    } else if (call.path.size() > 6 && call.path.compare(call.path.size() - 6, 6, "/token") == 0) {
      if (interrupted_) return unavailable("interrupted");
      renewals_.push_back(call);
      if (!renewal_answers_.empty()) {
        reply = std::move(renewal_answers_.front());
        renewal_answers_.pop_front();
      } else {
        reply = newToken(3000);
      }
    } else {
      if (interrupted_) return unavailable("interrupted");
      reports_.push_back(call);
      if (!report_answers_.empty()) {
        reply = std::move(report_answers_.front());
        report_answers_.pop_front();
      } else {
        reply = HttpReply{200, R"({"acknowledged": true})"};
      }
    }
    cv_.notify_all();
    return reply;
  }

  void interrupt() override {
    std::lock_guard lock(mu_);
    interrupted_ = true;
    cv_.notify_all();
  }

  void pushPoll(Result<HttpReply> r) {
    std::lock_guard lock(mu_);
    poll_answers_.push_back(std::move(r));
    cv_.notify_all();
  }
  void pushAssignment(const nlohmann::json& a) {
    pushPoll(HttpReply{200, nlohmann::json{{"assignment", a}}.dump()});
  }
  void pushReport(Result<HttpReply> r) {
    std::lock_guard lock(mu_);
    report_answers_.push_back(std::move(r));
  }
  void pushRegister(Result<HttpReply> r) {
    std::lock_guard lock(mu_);
    register_answers_.push_back(std::move(r));
  }
  void pushRenewal(Result<HttpReply> r) {
    std::lock_guard lock(mu_);
    renewal_answers_.push_back(std::move(r));
  }

  // Waits (at most 10 s of real time, a safety net) until `done` holds; true if it did.
  // `done` runs with the fake's lock held: it must not call the fake's accessors.
  bool waitUntil(const std::function<bool()>& done) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), done);
  }
  bool waitForReports(std::size_t n) {
    return waitUntil([&] { return reports_.size() >= n; });
  }
  bool waitForPolls(std::size_t n) {
    return waitUntil([&] { return polls_.size() >= n; });
  }
  // Waits for a poll whose path contains `text`.
  bool waitForPollWith(const std::string& text) {
    return waitUntil([&] {
      return std::any_of(polls_.begin(), polls_.end(), [&](const HttpCall& c) {
        return c.path.find(text) != std::string::npos;
      });
    });
  }

  std::vector<HttpCall> polls() const { std::lock_guard l(mu_); return {polls_.begin(), polls_.end()}; }
  std::vector<HttpCall> reports() const { std::lock_guard l(mu_); return {reports_.begin(), reports_.end()}; }
  std::vector<HttpCall> registers() const { std::lock_guard l(mu_); return {registers_.begin(), registers_.end()}; }
  std::vector<HttpCall> renewals() const { std::lock_guard l(mu_); return {renewals_.begin(), renewals_.end()}; }
  bool waitForRenewals(std::size_t n) {
    return waitUntil([&] { return renewals_.size() >= n; });
  }
  nlohmann::json reportBody(std::size_t i) const { return nlohmann::json::parse(reports().at(i).body); }

 private:
  // The next token kilnd would issue (registration or renewal); expires_in_s 0: not sent.
  HttpReply newToken(std::int64_t expires_in_s) {
    ++tokens_issued_;
    nlohmann::json j{{"host", "h1"},
                     {"token", "kiln_" + std::to_string(tokens_issued_) + "_s"},
                     {"token_id", std::to_string(tokens_issued_)}};
    if (expires_in_s > 0) j["expires_in_s"] = expires_in_s;
    return HttpReply{200, j.dump()};
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool interrupted_ = false;
  int tokens_issued_ = 0;
  std::deque<Result<HttpReply>> poll_answers_, report_answers_, register_answers_, renewal_answers_;
  std::deque<HttpCall> polls_, reports_, registers_, renewals_;
};

class FakeProbe final : public HostProbe {
 public:
  Result<nlohmann::json> inventory() override {
    std::lock_guard l(mu_);
    ++inventory_calls_;
    nlohmann::json inv = inventory_;
    inv["boot_id"] = boot_id_;
    return inv;
  }
  Result<std::string> bootId() override {
    std::lock_guard l(mu_);
    ++boot_reads_;
    if (change_after_ >= 0 && boot_reads_ > change_after_) boot_id_ = next_boot_id_;
    return boot_id_;
  }
  void setBootId(const std::string& id) { std::lock_guard l(mu_); boot_id_ = id; }
  // After `reads` more reads of the boot id, it becomes `id`.
  void changeBootIdAfter(int reads, const std::string& id) {
    std::lock_guard l(mu_);
    change_after_ = boot_reads_ + reads;
    next_boot_id_ = id;
  }
  void setInventory(nlohmann::json inv) { std::lock_guard l(mu_); inventory_ = std::move(inv); }
  int inventoryCalls() const { std::lock_guard l(mu_); return inventory_calls_; }

 private:
  mutable std::mutex mu_;
  std::string boot_id_ = "boot-1";
  nlohmann::json inventory_ = {{"gpu_vbios", "97.00.82.00.0E"}, {"nic", "28.43.1014"},
                               {"pending", nlohmann::json::object()}};
  int inventory_calls_ = 0;
  int boot_reads_ = 0;
  int change_after_ = -1;
  std::string next_boot_id_;
};

// Serves bodies by URL. `break_after[url]`: the next fetch of it writes that many bytes of the
// rest and fails (a dying mirror). Records each fetch's URL and resume offset.
class ScriptedDownloader : public Downloader {
 public:
  std::map<std::string, std::string> bodies;
  std::map<std::string, std::size_t> break_after;
  std::vector<std::pair<std::string, std::uint64_t>> fetches;

  Status fetch(const std::string& url, const std::filesystem::path& part, const exec::CancelToken*) override {
    std::error_code ec;
    const std::uint64_t offset = std::filesystem::exists(part, ec) ? std::filesystem::file_size(part, ec) : 0;
    fetches.emplace_back(url, offset);
    auto it = bodies.find(url);
    if (it == bodies.end()) return unavailable("Could not connect to server");
    std::string rest = offset < it->second.size() ? it->second.substr(offset) : "";
    std::ofstream out(part, std::ios::binary | std::ios::app);
    if (auto b = break_after.find(url); b != break_after.end()) {
      out << rest.substr(0, b->second);
      break_after.erase(b);
      return unavailable("transfer closed with bytes remaining to read");
    }
    out << rest;
    return okStatus();
  }
};

}  // namespace kiln::agent::testing
