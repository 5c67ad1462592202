#include "cli/system.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>

#include <unistd.h>

namespace kiln::cli {

System realSystem() {
  System s;
  s.get_env = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  s.read_file = [](const std::string& path) -> Result<std::string> {
    if (path == "-") {
      std::ostringstream buf;
      buf << std::cin.rdbuf();
      return buf.str();
    }
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return invalidArgument("cannot read " + path + ": is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) return notFound("cannot read " + path + ": " + std::strerror(errno));
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) return invalidArgument("cannot read " + path);
    return content;
  };
  s.write_file = [](const std::string& path, const std::string& content) -> Status {
    if (path == "-") {
      std::cout << content << std::flush;
      return Ok{};
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return invalidArgument("cannot write " + path + ": " + std::strerror(errno));
    out << content;
    out.close();
    if (!out) return invalidArgument("cannot write " + path);
    return Ok{};
  };
  s.file_exists = [](const std::string& path) {
    std::error_code ec;
    return std::filesystem::exists(path, ec);
  };
  s.now = [] { return std::chrono::steady_clock::now(); };
  s.sleep_for = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  s.stdout_is_tty = [] { return ::isatty(STDOUT_FILENO) == 1; };
  s.host_name = []() -> std::string {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return "";
    return name;
  };
  return s;
}

}  // namespace kiln::cli
