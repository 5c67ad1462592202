#pragma once
// The in-memory RetentionStore: rows with a kind, a time and what keeps them (a running run, a
// run an open rollout names, an event of a rollout not finished). Set-up methods stand for the
// tables the real store reads. The contract suite runs it beside PostgreSQL's.

#include <algorithm>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "orchestrator/retention/retention_store.h"

namespace kiln::retention::testing {

class FakeRetentionStore final : public RetentionStore {
 public:
  struct Row {
    Kind kind;
    std::string id;
    TimePoint at;       // finished_at (runs), at (events, audit), created_at (keys)
    bool kept = false;  // a running run, a run an open rollout names, an open rollout's event
    std::int64_t audit_id = 0;
    std::string audit_json;
  };

  void add(Row r) {
    std::lock_guard lock(mu_);
    if (r.kind == Kind::kAudit && r.audit_id == 0) r.audit_id = ++audit_seq_;
    rows_.push_back(std::move(r));
  }
  // The ids of a kind's rows still there, oldest first.
  std::vector<std::string> ids(Kind kind) const {
    std::lock_guard lock(mu_);
    std::vector<const Row*> of;
    for (const auto& r : rows_)
      if (r.kind == kind) of.push_back(&r);
    std::stable_sort(of.begin(), of.end(), [](const Row* a, const Row* b) { return a->at < b->at; });
    std::vector<std::string> out;
    for (const Row* r : of) out.push_back(r->id);
    return out;
  }
  // The next call of each method fails (an unreachable database), once.
  void failNext(bool fail = true) {
    std::lock_guard lock(mu_);
    fail_ = fail;
  }

  Result<int> prune(Kind kind, TimePoint before, int limit) override {
    std::lock_guard lock(mu_);
    if (fail_) return failed();
    if (kind == Kind::kAudit) return invalidArgument("audit records go through auditBefore and deleteAuditThrough");
    std::vector<std::size_t> due;
    for (std::size_t i = 0; i < rows_.size(); ++i)
      if (rows_[i].kind == kind && rows_[i].at < before && !rows_[i].kept) due.push_back(i);
    std::stable_sort(due.begin(), due.end(), [&](std::size_t a, std::size_t b) { return rows_[a].at < rows_[b].at; });
    if (static_cast<int>(due.size()) > limit) due.resize(static_cast<std::size_t>(std::max(limit, 0)));
    std::sort(due.rbegin(), due.rend());
    for (std::size_t i : due) rows_.erase(rows_.begin() + static_cast<std::ptrdiff_t>(i));
    return static_cast<int>(due.size());
  }
  Result<std::vector<AuditLine>> auditBefore(TimePoint before, int limit) override {
    std::lock_guard lock(mu_);
    if (fail_) return failed();
    std::vector<AuditLine> out;
    std::vector<const Row*> of;
    for (const auto& r : rows_)
      if (r.kind == Kind::kAudit && r.at < before) of.push_back(&r);
    std::sort(of.begin(), of.end(), [](const Row* a, const Row* b) { return a->audit_id < b->audit_id; });
    for (const Row* r : of) {
      if (static_cast<int>(out.size()) >= limit) break;
      out.push_back(
          {r->audit_id, r->audit_json.empty() ? "{\"id\":" + std::to_string(r->audit_id) + "}" : r->audit_json});
    }
    return out;
  }
  Result<int> deleteAuditThrough(std::int64_t through, TimePoint before) override {
    std::lock_guard lock(mu_);
    if (fail_) return failed();
    const auto n = std::erase_if(
        rows_, [&](const Row& r) { return r.kind == Kind::kAudit && r.audit_id <= through && r.at < before; });
    return static_cast<int>(n);
  }

 private:
  Error failed() {
    fail_ = false;
    return Error(ErrorCode::kUnavailable, "database unreachable (fake)");
  }
  mutable std::mutex mu_;
  std::vector<Row> rows_;
  std::int64_t audit_seq_ = 0;
  bool fail_ = false;
};

}  // namespace kiln::retention::testing
