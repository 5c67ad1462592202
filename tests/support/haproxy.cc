#include "tests/support/haproxy.h"

#include <regex>
#include <sstream>

namespace kiln::testing {

std::string localHaproxyConfig(const std::string& shipped, int port, const std::vector<int>& kilnd_ports, int maxconn) {
  std::istringstream in(shipped);
  std::string out, line;
  bool servers_written = false;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(' ');
    const std::string body = first == std::string::npos ? "" : line.substr(first);
    if (body.rfind("log ", 0) == 0 || body == "option httplog") continue;
    if (body.rfind("http-request set-header X-Forwarded-Proto", 0) == 0) continue;
    if (body.rfind("bind ", 0) == 0) {
      out += "    bind 127.0.0.1:" + std::to_string(port) + "\n";
      continue;
    }
    if (body.rfind("backend ", 0) == 0) servers_written = false;  // each backend gets the list
    if (body.rfind("server ", 0) == 0) {
      if (!servers_written)
        for (std::size_t i = 0; i < kilnd_ports.size(); ++i)
          out += "    server kilnd" + std::to_string(i + 1) + " 127.0.0.1:" + std::to_string(kilnd_ports[i]) + " check\n";
      servers_written = true;
      continue;
    }
    // The production connection limits need a descriptor limit a test machine does not give.
    out += std::regex_replace(line, std::regex("maxconn [0-9]+"), "maxconn " + std::to_string(maxconn)) + "\n";
  }
  return out;
}

}  // namespace kiln::testing
