#include "agents/oob/ipmi_power.h"

#include "common/exec/process_runner.h"

namespace kiln::oob {
namespace {

std::string lastLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  const auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

}  // namespace

std::vector<std::string> ipmitoolArgv(const IpmiOptions& o, const BmcEndpoint& bmc, const std::string& user,
                                      const std::vector<std::string>& command) {
  std::vector<std::string> argv = {o.ipmitool,
                                   "-I",
                                   "lanplus",
                                   "-H",
                                   bmc.address,
                                   "-p",
                                   std::to_string(bmc.port),
                                   "-U",
                                   user,
                                   "-E",  // the password from IPMI_PASSWORD
                                   "-C",
                                   std::to_string(bmc.cipher_suite),
                                   "-R",
                                   std::to_string(o.retries),
                                   "-N",
                                   std::to_string(o.retransmit_s)};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

Result<PowerState> parseChassisPowerStatus(std::string_view out) {
  // ipmitool: "Chassis Power is on" / "Chassis Power is off".
  const std::string_view key = "Chassis Power is ";
  const auto at = out.find(key);
  if (at != std::string_view::npos) {
    auto rest = out.substr(at + key.size());
    if (rest.rfind("on", 0) == 0) return PowerState::kOn;
    if (rest.rfind("off", 0) == 0) return PowerState::kOff;
  }
  std::string shown(out.substr(0, 200));
  return unavailable("ipmitool answered no power state: '" + lastLine(shown) + "'");
}

std::vector<LogEntry> parseSelList(std::string_view text) {
  std::vector<LogEntry> out;
  std::size_t at = 0;
  while (at < text.size()) {
    auto nl = text.find('\n', at);
    std::string line(text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    at = nl == std::string_view::npos ? text.size() : nl + 1;
    std::vector<std::string> fields;
    std::size_t from = 0;
    for (auto bar = line.find('|');; bar = line.find('|', from)) {
      std::string f = line.substr(from, bar == std::string::npos ? std::string::npos : bar - from);
      while (!f.empty() && (f.front() == ' ' || f.front() == '\t')) f.erase(f.begin());
      while (!f.empty() && (f.back() == ' ' || f.back() == '\r' || f.back() == '\t')) f.pop_back();
      fields.push_back(f.substr(0, 200));
      if (bar == std::string::npos) break;
      from = bar + 1;
    }
    if (fields.size() < 4 || fields[0].empty() ||
        fields[0].find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      continue;  // "SEL has no entries", headers, noise
    LogEntry e;
    e.id = fields[0];
    // "id | date | time | sensor | event | direction" (or "id | Pre-Init | stamp | ...").
    std::size_t first = 2;
    e.created = fields[1];
    if (fields.size() >= 6) {
      e.created += " " + fields[2];
      first = 3;
    }
    for (std::size_t i = first; i < fields.size(); ++i) e.message += (i > first ? " | " : "") + fields[i];
    out.push_back(std::move(e));
  }
  return out;
}

IpmiPower::IpmiPower(std::shared_ptr<exec::ProcessRunner> runner, CredentialSource credential, IpmiOptions options)
    : runner_(std::move(runner)), credential_(std::move(credential)), options_(std::move(options)) {}

Result<std::string> IpmiPower::run(const BmcEndpoint& bmc, const std::vector<std::string>& command) {
  auto cred = credential_(bmc.credential);
  if (!cred.ok()) return cred.error();
  exec::ProcessSpec spec;
  spec.argv = ipmitoolArgv(options_, bmc, cred->user, command);
  // The child's whole environment: no PATH search needed (an absolute ipmitool), the secret
  // where -E reads it.
  spec.env = {{"IPMI_PASSWORD", cred->password.reveal()}, {"LANG", "C"}};
  spec.timeout = options_.timeout;
  spec.kill_grace = std::chrono::milliseconds(1000);
  spec.output_cap = 8192;
  const exec::ProcessResult r = runner_->run(spec);
  const std::string what = "ipmitool " + bmc.address + ":" + std::to_string(bmc.port);
  if (!r.succeeded()) {
    std::string why = redact(exec::describeFailure(r, options_.timeout), cred->password);
    if (r.stderr_tail.find("Unable to establish IPMI v2") != std::string::npos)
      why += " (the BMC did not answer, or refused user '" + cred->user + "' with cipher suite " +
             std::to_string(bmc.cipher_suite) + ": check the address, the credential '" + bmc.credential +
             "' and the suites the BMC offers)";
    return unavailable(what + ": " + why);
  }
  return redact(r.stdout_tail, cred->password);
}

Result<PowerState> IpmiPower::status(const BmcEndpoint& bmc) {
  auto out = run(bmc, {"chassis", "power", "status"});
  if (!out.ok()) return out.error();
  return parseChassisPowerStatus(*out);
}

Status IpmiPower::act(const BmcEndpoint& bmc, PowerAction action) {
  auto out = run(bmc, {"chassis", "power", std::string(powerActionName(action))});
  if (!out.ok()) return out.error();
  // "Chassis Power Control: Up/On", "Down/Off", "Cycle", "Reset".
  if (out->find("Chassis Power Control:") == std::string::npos)
    return unavailable("ipmitool did not confirm power " + std::string(powerActionName(action)) + ": '" +
                       lastLine(*out) + "'");
  return Ok{};
}

Result<std::vector<LogEntry>> IpmiPower::eventLog(const BmcEndpoint& bmc, std::size_t last) {
  auto out = run(bmc, {"sel", "list"});
  if (!out.ok()) return out.error();
  auto entries = parseSelList(*out);
  if (entries.size() > last) entries.erase(entries.begin(), entries.end() - static_cast<std::ptrdiff_t>(last));
  return entries;
}

}  // namespace kiln::oob
