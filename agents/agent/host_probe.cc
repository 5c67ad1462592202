#include "agents/agent/host_probe.h"

#include <fstream>
#include <sstream>

namespace kiln::agent {

using nlohmann::json;

CommandHostProbe::CommandHostProbe(exec::ProcessRunner& runner,
                                   std::vector<std::string> inventory_argv,
                                   std::map<std::string, std::string> env,
                                   std::string boot_id_file, bool boot_id_file_only)
    : runner_(runner),
      inventory_argv_(std::move(inventory_argv)),
      env_(std::move(env)),
      boot_id_file_(boot_id_file.empty() ? kProcBootIdFile : std::move(boot_id_file)),
      inventory_has_boot_id_(!boot_id_file_only) {}

Result<json> CommandHostProbe::inventory() {
  if (inventory_argv_.empty()) return unavailable("no inventory command");
  exec::ProcessSpec spec;
  spec.argv = inventory_argv_;
  spec.env = env_;
  spec.timeout = std::chrono::seconds(60);
  spec.kill_grace = std::chrono::seconds(5);
  spec.output_cap = 1u << 20;
  exec::ProcessResult r = runner_.run(spec);
  const std::string what = "inventory command '" + inventory_argv_.front() + "'";
  if (!r.started) return unavailable(what + " did not start: " + r.spawn_error);
  if (!r.succeeded()) {
    return unavailable(what + " failed (exit " + std::to_string(r.exit_code) + ", signal " +
                       std::to_string(r.term_signal) + (r.timed_out ? ", timed out" : "") +
                       "): " + r.stderr_tail.substr(0, 200));
  }
  json j = json::parse(r.stdout_tail, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return invalidContent(what + " did not print a JSON object");
  return j;
}

Result<std::string> CommandHostProbe::readBootIdFile() const {
  std::ifstream in(boot_id_file_);
  std::string id;
  if (!in || !std::getline(in, id)) return unavailable("cannot read " + boot_id_file_);
  while (!id.empty() && std::isspace(static_cast<unsigned char>(id.back()))) id.pop_back();
  if (id.empty()) return unavailable(boot_id_file_ + " is empty");
  return id;
}

Result<std::string> CommandHostProbe::bootId() {
  bool use_inventory;
  {
    std::lock_guard lock(mu_);
    use_inventory = inventory_has_boot_id_;
  }
  if (use_inventory) {
    auto inv = inventory();
    if (inv) {
      auto it = inv->find("boot_id");
      if (it != inv->end() && it->is_string() && !it->get<std::string>().empty()) {
        return it->get<std::string>();
      }
      std::lock_guard lock(mu_);
      inventory_has_boot_id_ = false;
    }
  }
  return readBootIdFile();
}

std::vector<std::string> splitCommand(const std::string& command) {
  std::istringstream in(command);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

}  // namespace kiln::agent
