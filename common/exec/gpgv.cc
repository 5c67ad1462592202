#include "common/exec/gpgv.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <system_error>

namespace kiln::exec {
namespace {

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out.flush());
}

// The last non-empty gpgv line that says what happened (its output starts with when the
// signature was made and which key made it).
std::string lastWords(const std::string& text) {
  std::string best, line;
  for (std::size_t pos = 0; pos <= text.size();) {
    auto nl = text.find('\n', pos);
    line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() + 1 : nl + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    if (line.find("BAD signature") != std::string::npos || line.find("Can't check") != std::string::npos ||
        line.find("no valid OpenPGP") != std::string::npos || line.find("not a detached") != std::string::npos)
      return line;
    best = line;
  }
  return best;
}

}  // namespace

SignatureCheck gpgvCheck(ProcessRunner& runner, std::string keyring, std::string tmp_dir) {
  return [&runner, keyring = std::move(keyring), tmp_dir = std::move(tmp_dir)](const std::string& data,
                                                                               const std::string& signature) -> Status {
    std::string tmpl = tmp_dir + "/kiln-gpgv.XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return internalError("gpgv: no temporary directory under " + tmp_dir);
    const std::string dir = tmpl;
    struct Cleanup {
      std::string dir;
      ~Cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
      }
    } cleanup{dir};
    if (!writeFile(dir + "/data", data) || !writeFile(dir + "/data.asc", signature))
      return internalError("gpgv: cannot write under " + dir);
    ProcessSpec spec;
    spec.argv = {"gpgv", "--homedir", dir, "--keyring", keyring, dir + "/data.asc", dir + "/data"};
    spec.env = {{"PATH", "/usr/bin:/bin"}, {"LANG", "C"}, {"LC_ALL", "C"}};
    spec.timeout = std::chrono::seconds(30);
    spec.output_cap = 8192;
    ProcessResult r = runner.run(spec);
    if (r.succeeded()) return okStatus();
    if (!r.started) return unavailable("gpgv did not start: " + r.spawn_error + " (install Debian's gpgv)");
    std::string why = lastWords(r.stderr_tail + "\n" + r.stdout_tail);
    return invalidContent(why.empty() ? "gpgv " + describeFailure(r, spec.timeout) : why);
  };
}

}  // namespace kiln::exec
