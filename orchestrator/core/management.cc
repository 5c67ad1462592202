#include "orchestrator/core/management.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <set>

#include "common/runner_key.h"

namespace kiln::core {
namespace {

int defaultPort(const std::string& protocol) {
  return protocol == "ipmi" ? 623 : 443;
}

bool addressChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ':' || c == '[' ||
         c == ']';
}

// The template with its placeholders replaced; `allowed` are the placeholder names it may use.
std::string expand(const std::string& tmpl, const std::map<std::string, std::string>& values) {
  std::string out;
  for (std::size_t i = 0; i < tmpl.size();) {
    if (tmpl[i] == '{') {
      const auto close = tmpl.find('}', i);
      if (close != std::string::npos) {
        const std::string name = tmpl.substr(i + 1, close - i - 1);
        if (auto v = values.find(name); v != values.end()) {
          out += v->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += tmpl[i++];
  }
  return out;
}

std::optional<std::string> templateError(const std::string& tmpl, const std::vector<std::string>& placeholders) {
  if (tmpl.empty()) return std::nullopt;
  if (tmpl.size() > 200) return "longer than 200 characters";
  std::string literal;
  for (std::size_t i = 0; i < tmpl.size();) {
    if (tmpl[i] == '{') {
      const auto close = tmpl.find('}', i);
      if (close == std::string::npos) return "an unclosed '{'";
      const std::string name = tmpl.substr(i + 1, close - i - 1);
      if (std::find(placeholders.begin(), placeholders.end(), name) == placeholders.end()) {
        std::string list;
        for (const auto& p : placeholders) list += (list.empty() ? "{" : ", {") + p + "}";
        return "unknown placeholder {" + name + "} (expected " + list + ")";
      }
      literal += "x";
      i = close + 1;
      continue;
    }
    literal += tmpl[i++];
  }
  if (literal.front() == '-') return "must not start with '-'";
  for (char c : literal)
    if (!addressChar(c)) return std::string("'") + c + "' cannot be part of a host name or address";
  // An optional ":PORT" after a host name or a [v6] literal.
  const auto colon = literal.rfind(':');
  const auto bracket = literal.rfind(']');
  if (colon != std::string::npos && (bracket == std::string::npos || colon > bracket)) {
    if (bracket == std::string::npos && literal.find(':') != colon)
      return "an IPv6 address goes in brackets: [ADDRESS]:PORT";
    const std::string port = literal.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit) || std::stoi(port) < 1 ||
        std::stoi(port) > 65535)
      return "port must be 1 to 65535";
  }
  return std::nullopt;
}

std::optional<BmcEndpointView> endpoint(const ManagementSpec& m, const std::string& tmpl,
                                        const std::map<std::string, std::string>& values) {
  if (tmpl.empty() || m.protocol.empty()) return std::nullopt;
  const std::string addr = expand(tmpl, values);
  BmcEndpointView e;
  e.protocol = m.protocol;
  e.credential = m.credential;
  e.port = defaultPort(m.protocol);
  const auto colon = addr.rfind(':');
  const auto bracket = addr.rfind(']');
  if (colon != std::string::npos && (bracket == std::string::npos || colon > bracket) &&
      (bracket != std::string::npos || addr.find(':') == colon)) {
    e.address = addr.substr(0, colon);
    e.port = std::stoi(addr.substr(colon + 1));
  } else {
    e.address = addr;
  }
  if (e.address.size() > 2 && e.address.front() == '[' && e.address.back() == ']')
    e.address = e.address.substr(1, e.address.size() - 2);
  return e;
}

}  // namespace

const std::vector<std::string>& managementKeys() {
  static const std::vector<std::string> keys = {"protocol", "credential", "tray_bmc", "switch_bmc", "runner"};
  return keys;
}

bool secretLikeKey(const std::string& key) {
  std::string k;
  for (char c : key) k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* s : {"password", "passwd", "secret", "token", "key", "user", "username"})
    if (k.find(s) != std::string::npos) return true;
  return false;
}

std::vector<std::pair<std::string, std::string>> validateManagement(const ManagementSpec& m) {
  std::vector<std::pair<std::string, std::string>> errors;
  if (m.empty()) return errors;
  if (m.protocol != "redfish" && m.protocol != "ipmi") errors.push_back({"protocol", "expected redfish or ipmi"});
  const bool name_ok = !m.credential.empty() && m.credential.size() <= 64 &&
                       std::all_of(m.credential.begin(), m.credential.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
                       });
  if (!name_ok)
    errors.push_back({"credential",
                      "expected the name of a credential the out-of-band runners hold (1 to 64 of A-Z a-z 0-9 . _ -), "
                      "not a secret"});
  if (m.tray_bmc.empty() && m.switch_bmc.empty()) errors.push_back({"tray_bmc", "give tray_bmc, switch_bmc or both"});
  if (auto e = templateError(m.tray_bmc, {"host", "pod", "rack", "tray"})) errors.push_back({"tray_bmc", *e});
  if (auto e = templateError(m.switch_bmc, {"switch", "pod", "rack", "tray"})) errors.push_back({"switch_bmc", *e});
  if (!m.runner.empty()) {
    const auto names = runnersOf(m);  // empty entries kept: "a,,b" and "a," are refused
    std::set<std::string> seen;
    bool ok = names.size() <= 16;
    for (const auto& n : names) ok = ok && validRunnerName(n) && seen.insert(n).second;
    if (!ok)
      errors.push_back(
          {"runner",
           "expected an out-of-band runner's name, or up to 16 distinct names separated by commas: each 1 to "
           "63 of a-z 0-9 . _ -, starting with a letter or digit"});
  }
  return errors;
}

std::vector<std::string> runnersOf(const ManagementSpec& m) {
  std::vector<std::string> out;
  if (m.runner.empty()) return out;
  for (std::size_t start = 0;;) {
    const auto comma = m.runner.find(',', start);
    out.push_back(m.runner.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string runnerFor(const ManagementSpec& m, const std::string& device) {
  const auto names = runnersOf(m);
  if (names.empty()) return "";
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bits
  for (unsigned char c : device) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return names[h % names.size()];
}

ManagementSpec inheritManagement(ManagementSpec inner, const ManagementSpec& outer) {
  if (inner.protocol.empty()) inner.protocol = outer.protocol;
  if (inner.credential.empty()) inner.credential = outer.credential;
  if (inner.tray_bmc.empty()) inner.tray_bmc = outer.tray_bmc;
  if (inner.switch_bmc.empty()) inner.switch_bmc = outer.switch_bmc;
  if (inner.runner.empty()) inner.runner = outer.runner;
  return inner;
}

std::optional<BmcEndpointView> trayBmcOf(const ManagementSpec& m, const std::string& host, const std::string& pod,
                                         const std::string& rack, int tray) {
  return endpoint(m, m.tray_bmc, {{"host", host}, {"pod", pod}, {"rack", rack}, {"tray", std::to_string(tray)}});
}

std::string bmcArgument(const BmcEndpointView& e) {
  const bool v6 = e.address.find(':') != std::string::npos && e.address.front() != '[';
  return (v6 ? "[" + e.address + "]" : e.address) + ":" + std::to_string(e.port);
}

std::optional<BmcEndpointView> switchBmcOf(const ManagementSpec& m, const std::string& switch_tray,
                                           const std::string& pod, const std::string& rack, int tray) {
  return endpoint(m, m.switch_bmc,
                  {{"switch", switch_tray}, {"pod", pod}, {"rack", rack}, {"tray", std::to_string(tray)}});
}

}  // namespace kiln::core
