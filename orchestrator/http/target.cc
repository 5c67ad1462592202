// Request targets: path and query, percent-decoded. Apart from server_beast.cc so that it is
// tested and fuzzed without Boost.Beast.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "orchestrator/http/server.h"

namespace kiln::http {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hexValue(s[i + 1]), lo = hexValue(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace

std::optional<std::pair<std::string, std::map<std::string, std::string>>> splitTarget(std::string_view target) {
  const auto q = target.find('?');
  auto path = percentDecode(target.substr(0, q));
  if (!path) return std::nullopt;
  std::map<std::string, std::string> query;
  if (q != std::string_view::npos) {
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
      const auto amp = rest.find('&');
      const std::string_view pair = rest.substr(0, amp);
      rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
      if (pair.empty()) continue;
      const auto eq = pair.find('=');
      auto key = percentDecode(pair.substr(0, eq));
      auto value = percentDecode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
      if (!key || !value) return std::nullopt;
      query[*key] = *value;
    }
  }
  return std::make_pair(std::move(*path), std::move(query));
}

}  // namespace kiln::http
