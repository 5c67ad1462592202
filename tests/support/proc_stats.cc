#include "tests/support/proc_stats.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kiln::testing {

double cpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return -1;
  // The command name (field 2) may hold spaces: fields are counted after its closing ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

long rssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

std::vector<pid_t> findProcesses(const std::string& program, const std::string& arg, const std::string& value) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::vector<std::string> args;
    std::string a;
    while (std::getline(in, a, '\0')) args.push_back(a);
    if (args.empty()) continue;
    const std::string& argv0 = args[0];
    if (argv0.size() < program.size() || argv0.compare(argv0.size() - program.size(), program.size(), program) != 0)
      continue;
    for (std::size_t i = 1; i + 1 < args.size(); ++i)
      if (args[i] == arg && args[i + 1] == value) {
        out.push_back(static_cast<pid_t>(std::stol(name)));
        break;
      }
  }
  return out;
}

std::string loadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

MachineCpu machineCpu() {
  MachineCpu m;
  m.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream in("/proc/stat");
  std::string label;
  if (!(in >> label) || label != "cpu") return m;
  // user nice system idle iowait irq softirq steal (guest time is already inside user and nice)
  unsigned long long v[8] = {};
  for (auto& x : v) in >> x;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  unsigned long long total = 0;
  for (auto x : v) total += x;
  m.total_s = static_cast<double>(total) / tick;
  m.busy_s = static_cast<double>(total - v[3] - v[4]) / tick;
  return m;
}

}  // namespace kiln::testing
