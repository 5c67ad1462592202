#pragma once
// The one lock the in-memory fakes of the stores share (FakeFleet, FakeRunStore, FakeRolloutStore
// and FakeBundleCatalog). Each of their interface methods takes it: a controller with reconcile
// threads calls them from several threads at once, as PgStore's pool serves it, and the fakes
// read each other's state (the rollout store the fleet's pods, the run store the fleet's hosts)
// and call each other (recursive). One lock for all, not one each, so that such a read never
// races a write of another fake.

#include <mutex>

namespace kiln::core::testing {

inline std::recursive_mutex& fakesMutex() {
  static std::recursive_mutex mu;
  return mu;
}
struct FakesLock {
  std::lock_guard<std::recursive_mutex> guard{fakesMutex()};
};

}  // namespace kiln::core::testing
