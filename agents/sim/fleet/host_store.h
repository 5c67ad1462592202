#pragma once
// Where simulated hosts keep what outlives the process: their agent tokens (so a restarted
// fleet does not re-enrol, like a real agent's state directory) and their simulated hardware
// state (firmware flashed in a demo survives a restart). Not thread-safe.

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "agents/sim/host_state.h"
#include "common/result.h"

namespace kiln::vfleet {

class HostStore {
 public:
  virtual ~HostStore() = default;
  virtual std::optional<std::string> loadToken(const std::string& host) = 0;
  virtual Status saveToken(const std::string& host, const std::string& token) = 0;
  virtual std::optional<sim::HostState> loadState(const std::string& host) = 0;
  virtual Status saveState(const sim::HostState& state) = 0;
};

// Keeps everything in memory (no --state-dir).
class MemoryHostStore : public HostStore {
 public:
  std::optional<std::string> loadToken(const std::string& host) override;
  Status saveToken(const std::string& host, const std::string& token) override;
  std::optional<sim::HostState> loadState(const std::string& host) override;
  Status saveState(const sim::HostState& state) override;

 private:
  std::map<std::string, std::string> tokens_;
  std::map<std::string, sim::HostState> states_;
};

// DIR/tokens/<host> (mode 0600) and DIR/hosts/<host>.json. Files that cannot be read count as
// absent; the directories are created on first write.
class DirHostStore : public HostStore {
 public:
  explicit DirHostStore(std::filesystem::path dir);
  std::optional<std::string> loadToken(const std::string& host) override;
  Status saveToken(const std::string& host, const std::string& token) override;
  std::optional<sim::HostState> loadState(const std::string& host) override;
  Status saveState(const sim::HostState& state) override;

 private:
  std::filesystem::path dir_;
};

}  // namespace kiln::vfleet
