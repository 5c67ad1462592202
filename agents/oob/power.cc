#include "agents/oob/power.h"

#include <cctype>
#include <charconv>

namespace kiln::oob {

std::string_view powerStateName(PowerState s) {
  return s == PowerState::kOn ? "on" : "off";
}

std::string_view powerActionName(PowerAction a) {
  switch (a) {
    case PowerAction::kOn:
      return "on";
    case PowerAction::kOff:
      return "off";
    case PowerAction::kCycle:
      return "cycle";
    case PowerAction::kReset:
      return "reset";
  }
  return "?";
}

std::optional<PowerAction> parsePowerAction(std::string_view text) {
  for (auto a : {PowerAction::kOn, PowerAction::kOff, PowerAction::kCycle, PowerAction::kReset})
    if (text == powerActionName(a)) return a;
  return std::nullopt;
}

Result<BmcEndpoint> parseBmcAddress(std::string_view text, int default_port) {
  auto bad = [&](const std::string& why) { return invalidArgument("BMC address '" + std::string(text) + "': " + why); };
  if (text.empty()) return bad("empty");
  if (text.front() == '-') return bad("must not start with '-'");
  for (char c : text)
    if (std::isspace(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) < 0x20 || c == '/' || c == '@')
      return bad("expected HOST, HOST:PORT or [IPv6]:PORT");
  BmcEndpoint e;
  e.port = default_port;
  std::string_view host = text, port;
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return bad("unclosed '['");
    host = text.substr(1, close - 1);
    auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return bad("expected ':' after ']'");
      port = rest.substr(1);
    }
  } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    if (text.find(':') != colon) return bad("an IPv6 address goes in brackets: [ADDRESS]:PORT");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) return bad("no host");
  e.address = std::string(host);
  if (!port.empty() || (text.back() == ':')) {
    int p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p < 1 || p > 65535)
      return bad("port must be 1 to 65535");
    e.port = p;
  }
  return e;
}

}  // namespace kiln::oob
