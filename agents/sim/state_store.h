#pragma once
// Per-host simulator state on disk: DIR/state.json, written atomically (temp file + rename),
// with read-modify-write serialised across processes by an flock on DIR/state.lock.

#include <filesystem>
#include <functional>
#include <string>

#include "agents/sim/host_state.h"
#include "common/result.h"

namespace kiln::sim {

// What a state directory is initialised with on first use.
struct StateDefaults {
  std::string host;
  Platform platform = Platform::kCatalina;
};

class StateStore {
 public:
  StateStore(std::filesystem::path dir, StateDefaults defaults);

  // Loads the state (creating the directory and a default state on first use), applies
  // `mutate`, and writes the result back atomically. The whole sequence holds an exclusive
  // lock, so concurrent processes on the same directory never lose each other's updates.
  // Thread-safety: safe across processes and threads (flock on a per-call descriptor).
  Result<HostState> update(const std::function<void(HostState&)>& mutate);

  // Like update() without a change (still creates the state on first use).
  Result<HostState> read();

  // Replaces the state wholesale (used by `kiln-hwsim init`).
  Status reset(const HostState& state);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  StateDefaults defaults_;
};

}  // namespace kiln::sim
