#pragma once
// HAProxy in front of kilnd replicas for the e2e tier and the benchmarks: the shipped
// deploy/haproxy/kiln.cfg made local. Pure apart from reading the file.

#include <string>
#include <vector>

namespace kiln::testing {

// (A free port for it: freeLoopbackPort() of tests/support/kilnd_process.h.)

// `shipped` (deploy/haproxy/kiln.cfg's text) with the bind address (127.0.0.1:`port`, no TLS),
// the server list (127.0.0.1:each of `kilnd_ports`), syslog and connection limits (`maxconn`)
// made local; every other line (timeouts, health checks, balance, retries) is production's.
std::string localHaproxyConfig(const std::string& shipped, int port, const std::vector<int>& kilnd_ports, int maxconn = 4000);

}  // namespace kiln::testing
