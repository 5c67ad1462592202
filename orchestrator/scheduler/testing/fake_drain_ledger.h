#pragma once
// A complete scheduler::DrainLedger for tests, in memory: the rows by node, each write with the
// audit record the PostgreSQL ledger writes with it (orchestrator/db/pg_drain_ledger.cc) when
// given a FakeAuditLog. orchestrator/db/tests/drain_ledger_contract_test.cc runs both through
// one suite. Thread-safe.

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "orchestrator/core/testing/fake_audit_log.h"
#include "orchestrator/scheduler/drain_ledger.h"

namespace kiln::scheduler::testing {

class FakeDrainLedger final : public DrainLedger {
 public:
  // `audit`: where the writes' audit records go (none kept when null).
  explicit FakeDrainLedger(core::testing::FakeAuditLog* audit = nullptr) : audit_(audit) {}

  // When set, every write is also logged there as "ledger put <node>" or
  // "ledger remove <node> <action>" (a removal of a node without a row too), so a test can
  // check the order of ledger and Slurm writes in one list.
  std::vector<std::string>* calls = nullptr;

  // Ordered by node (byte order, as the column's COLLATE "C").
  Result<std::vector<Drain>> list() override {
    std::lock_guard lock(mu_);
    std::vector<Drain> out;
    for (const auto& [_, d] : rows_) out.push_back(d);
    return out;
  }

  Status put(const Drain& d, const core::Actor& actor) override {
    std::lock_guard lock(mu_);
    if (calls) calls->push_back("ledger put " + d.node);
    rows_[d.node] = d;
    if (audit_)
      return audit_->audit(actor, "slurm.drain", d.node, nlohmann::json{{"host", d.host}, {"reason", d.reason}}.dump());
    return Ok{};
  }

  // A node without a row: nothing happens and no audit record is written.
  Status remove(const std::string& node, const std::string& action, const std::string& why,
                const core::Actor& actor) override {
    std::lock_guard lock(mu_);
    if (calls) calls->push_back("ledger remove " + node + " " + action);
    auto it = rows_.find(node);
    if (it == rows_.end()) return Ok{};
    const std::string host = it->second.host;
    rows_.erase(it);
    if (audit_) return audit_->audit(actor, action, node, nlohmann::json{{"host", host}, {"why", why}}.dump());
    return Ok{};
  }

 private:
  core::testing::FakeAuditLog* audit_;
  std::mutex mu_;
  std::map<std::string, Drain> rows_;
};

}  // namespace kiln::scheduler::testing
