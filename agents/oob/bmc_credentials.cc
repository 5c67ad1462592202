#include "agents/oob/bmc_credentials.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace kiln::oob {
namespace {

// Opens `path` and checks it before reading a byte: a regular file, owned by this user or
// root, no permission for group or others. O_NOFOLLOW: a symlink planted in its place is refused.
Result<std::string> readPrivateFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return notFound(path + ": no such file");
    return invalidArgument(path + ": cannot open: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalidArgument(path + ": not a regular file");
  }
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    ::close(fd);
    return invalidArgument(path + ": owned by uid " + std::to_string(st.st_uid) +
                           ", expected this runner's user or root");
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return invalidArgument(path + ": mode " + mode +
                           " lets other users read or change BMC credentials: expected 0600 or 0400 (chmod 600 " +
                           path + ")");
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const auto n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > (1u << 20)) {
      ::close(fd);
      return invalidArgument(path + ": larger than 1 MiB");
    }
  }
  ::close(fd);
  return out;
}

Result<BmcCredential> credentialFrom(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("user") || !j["user"].is_string() || !j.contains("password") ||
      !j["password"].is_string())
    return invalidArgument(where + ": expected {\"user\": \"...\", \"password\": \"...\"}");
  BmcCredential c;
  c.user = j["user"].get<std::string>();
  c.password = Secret(j["password"].get<std::string>());
  if (c.user.empty() || c.user.size() > 16)
    return invalidArgument(where + ": user must be 1 to 16 characters (IPMI's limit)");
  if (c.password.empty()) return invalidArgument(where + ": empty password");
  return c;
}

}  // namespace

bool validCredentialName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return name != "." && name != "..";
}

Result<BmcCredential> loadBmcCredential(const std::string& name, const std::string& file,
                                        const std::string& credentials_directory) {
  if (!validCredentialName(name))
    return invalidArgument("credential name '" + name + "': expected 1 to 64 of A-Z a-z 0-9 . _ -");
  if (!credentials_directory.empty()) {
    const std::string path = credentials_directory + "/bmc-" + name;
    auto text = readPrivateFile(path);
    if (text.ok()) {
      auto j = nlohmann::json::parse(*text, nullptr, false);
      if (j.is_discarded())
        return invalidArgument(path + ": not JSON: expected {\"user\": \"...\", \"password\": \"...\"}");
      return credentialFrom(j, path);
    }
    if (text.error().code != ErrorCode::kNotFound) return text.error();
  }
  auto text = readPrivateFile(file);
  if (!text.ok()) {
    if (text.error().code == ErrorCode::kNotFound)
      return notFound(
          "no BMC credential '" + name + "' (" + file + " does not exist" +
          (credentials_directory.empty() ? std::string(")") : ", nor " + credentials_directory + "/bmc-" + name + ")"));
    return text.error();
  }
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalidArgument(file + ": not a JSON object of credentials by name");
  if (!j.contains(name)) return notFound("no BMC credential '" + name + "' in " + file);
  return credentialFrom(j[name], file + ": " + name);
}

std::string redact(std::string text, const Secret& secret) {
  const std::string& s = secret.reveal();
  if (s.empty()) return text;
  for (auto at = text.find(s); at != std::string::npos; at = text.find(s, at + 3)) text.replace(at, s.size(), "***");
  return text;
}

}  // namespace kiln::oob
