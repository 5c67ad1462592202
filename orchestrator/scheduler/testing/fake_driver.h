#pragma once
// A complete scheduler::Driver for tests: records every ask and every move it is told of, asks
// the gate function a test sets, answers a node view and naming a test sets. Asks are answered
// when the test calls answer() (from any thread), as a real scheduler answers later.
// Thread-safe.

#include <map>
#include <mutex>

#include "orchestrator/scheduler/driver.h"

namespace kiln::scheduler::testing {

class FakeDriver final : public Driver {
 public:
  struct Ask {
    ReleaseRequest request;
    std::function<void(bool)> done;
  };

  std::string_view kind() const override { return "fake"; }
  void requestDrain(const ReleaseRequest& request, std::function<void(bool told)> done) override {
    std::lock_guard lock(mu_);
    asks_.push_back({request, std::move(done)});
  }
  std::optional<std::string> heldBack(const core::HostSummary& host, const std::string& reason) override {
    Gate gate;
    {
      std::lock_guard lock(mu_);
      gate = gate_;
    }
    return gate ? gate(host, reason) : std::nullopt;  // outside the lock: a test's gate may wait
  }
  void hostsMoved(const std::vector<std::string>& hosts) override {
    std::lock_guard lock(mu_);
    moved_.insert(moved_.end(), hosts.begin(), hosts.end());
  }
  std::optional<DriverStatus> status() const override {
    std::lock_guard lock(mu_);
    return status_;
  }
  std::string hostOfNode(const std::string& node) const override {
    std::lock_guard lock(mu_);
    auto it = naming_.find(node);
    return it == naming_.end() ? "" : it->second;
  }

  // What the test sets. Without a gate function no host is held back.
  using Gate = std::function<std::optional<std::string>(const core::HostSummary&, const std::string&)>;
  void setGate(Gate gate) {
    std::lock_guard lock(mu_);
    gate_ = std::move(gate);
  }
  void setStatus(std::optional<DriverStatus> s) {
    std::lock_guard lock(mu_);
    status_ = std::move(s);
  }
  void name(const std::string& node, const std::string& host) {
    std::lock_guard lock(mu_);
    naming_[node] = host;
  }
  // Answers ask `i` (in the order asked) with `told`.
  void answer(std::size_t i, bool told) {
    std::function<void(bool)> done;
    {
      std::lock_guard lock(mu_);
      done = asks_.at(i).done;
    }
    done(told);
  }

  // What the test reads.
  std::vector<Ask> asks() const {
    std::lock_guard lock(mu_);
    return asks_;
  }
  std::vector<std::string> moved() const {
    std::lock_guard lock(mu_);
    return moved_;
  }
 private:
  mutable std::mutex mu_;
  std::vector<Ask> asks_;
  std::vector<std::string> moved_;
  std::map<std::string, std::string> naming_;
  std::optional<DriverStatus> status_;
  Gate gate_;
};

}  // namespace kiln::scheduler::testing
