#pragma once
// What the agent learns about its host: the inventory (component kind -> version) and the boot
// id. docs/agent-protocol.md, "Inventory": the inventory command prints one JSON object; the
// boot id is its "boot_id" if present, else the boot id file
// (/proc/sys/kernel/random/boot_id).

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/exec/process_runner.h"
#include "common/result.h"

namespace kiln::agent {

class HostProbe {
 public:
  virtual ~HostProbe() = default;
  // The inventory command's JSON object, as printed. Errors: the command failed or did not
  // print a JSON object.
  virtual Result<nlohmann::json> inventory() = 0;
  // The current boot id (never empty on success).
  virtual Result<std::string> bootId() = 0;
};

inline constexpr const char* kProcBootIdFile = "/proc/sys/kernel/random/boot_id";

// Runs the inventory command through a ProcessRunner (argv, never a shell) with `env`.
// Thread-safe.
class CommandHostProbe final : public HostProbe {
 public:
  // `boot_id_file` empty = kProcBootIdFile. When `boot_id_file_only` is set the inventory
  // command is never run for the boot id (an explicit --boot-id-file).
  CommandHostProbe(exec::ProcessRunner& runner, std::vector<std::string> inventory_argv,
                   std::map<std::string, std::string> env, std::string boot_id_file,
                   bool boot_id_file_only);
  Result<nlohmann::json> inventory() override;
  Result<std::string> bootId() override;

 private:
  Result<std::string> readBootIdFile() const;

  exec::ProcessRunner& runner_;
  const std::vector<std::string> inventory_argv_;
  const std::map<std::string, std::string> env_;
  const std::string boot_id_file_;
  std::mutex mu_;
  // Once the inventory command has printed no boot_id, the file is read directly.
  bool inventory_has_boot_id_;
};

// Splits an --inventory-command value into argv on blanks (no quoting, no shell).
std::vector<std::string> splitCommand(const std::string& command);

}  // namespace kiln::agent
