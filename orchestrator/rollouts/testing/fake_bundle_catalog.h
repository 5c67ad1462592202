#pragma once
// An in-memory fake of rollouts::BundleCatalog, as PgRolloutStore keeps bundles, for tests
// without PostgreSQL (FakeRolloutStore holds one). Its interface methods take the fakes' one
// lock (core/testing/fakes_lock.h); the rest is for a test's own thread.

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/core/testing/fakes_lock.h"
#include "orchestrator/rollouts/rollout_store.h"

namespace kiln::rollouts::testing {

// Bundles in memory, as PgRolloutStore keeps them: one per name@version, ids "b-<n>"; a bundle
// a rollout used (markUsed) no longer changes. Creation times from `clock` when given, else the
// epoch.
class FakeBundleCatalog final : public BundleCatalog {
 public:
  explicit FakeBundleCatalog(const core::Clock* clock = nullptr) : clock_(clock) {}

  // Stores `b` as it is, under its own id (a test's fixture), replacing the one with that id.
  void add(const Bundle& b) {
    BundleRow row;
    row.bundle = b;
    row.created_at = now();
    row.created_by = "test";
    if (auto* r = byId(b.id)) {
      row.used = r->used;
      *r = row;
    } else {
      rows_.push_back(row);
    }
  }
  // A rollout references the bundle (PgRolloutStore reads that from the rollouts table).
  void markUsed(const std::string& id) {
    if (auto* r = byId(id)) r->used = true;
  }

  Result<std::pair<BundleRow, PutOutcome>> putBundle(const Bundle& b, const core::Actor& actor,
                                                     const std::optional<core::IfMatch>& if_match) override {
    core::testing::FakesLock fakes_lock;
    const std::string what = "bundle " + b.name + "@" + b.version;
    BundleRow* existing = byRef(b.name + "@" + b.version);
    if (if_match && !existing) return core::preconditionFailed(what, std::nullopt);
    if (existing) {
      const std::string etag = bundleEtag(existing->bundle);
      if (if_match && !if_match->matches(etag)) return core::preconditionFailed(what, etag);
      Bundle same = b;
      same.id = existing->bundle.id;
      if (existing->bundle == same) return std::make_pair(*existing, PutOutcome::kUnchanged);
      if (existing->used)
        return conflict(what + " was used by a rollout and cannot change: publish a new version")
            .with("bundle", existing->bundle.id);
      existing->bundle = same;
      return std::make_pair(*existing, PutOutcome::kUpdated);
    }
    BundleRow row;
    row.bundle = b;
    do row.bundle.id = "b-" + std::to_string(++next_id_);
    while (byId(row.bundle.id));
    row.created_at = now();
    row.created_by = actor.token_id;
    rows_.push_back(row);
    return std::make_pair(row, PutOutcome::kCreated);
  }
  Result<std::optional<BundleRow>> getBundle(const std::string& ref) override {
    core::testing::FakesLock fakes_lock;
    if (auto* r = byRef(ref)) return std::optional<BundleRow>(*r);
    return std::optional<BundleRow>();
  }
  // As the SQL: newest first, then by id.
  Result<std::vector<BundleRow>> listBundles() override {
    core::testing::FakesLock fakes_lock;
    std::vector<BundleRow> out = rows_;
    std::stable_sort(out.begin(), out.end(), [](const BundleRow& a, const BundleRow& b) {
      return a.created_at != b.created_at ? a.created_at > b.created_at : a.bundle.id < b.bundle.id;
    });
    return out;
  }

 private:
  core::TimePoint now() const { return clock_ ? clock_->now() : core::TimePoint{}; }
  BundleRow* byId(const std::string& id) {
    for (auto& r : rows_)
      if (r.bundle.id == id) return &r;
    return nullptr;
  }
  // By id ("b-3") or name@version.
  BundleRow* byRef(const std::string& ref) {
    const auto at = ref.find('@');
    if (at == std::string::npos) return byId(ref);
    for (auto& r : rows_)
      if (r.bundle.name == ref.substr(0, at) && r.bundle.version == ref.substr(at + 1)) return &r;
    return nullptr;
  }

  const core::Clock* clock_;
  int next_id_ = 0;
  std::vector<BundleRow> rows_;  // in creation order
};

}  // namespace kiln::rollouts::testing
