#pragma once
// Where kilnctl connects and with which token: flags win over the environment, the
// environment over the config file (--config FILE, else $KILN_CONFIG, else
// ~/.config/kiln/kilnctl.yaml when it exists).
//
//   # ~/.config/kiln/kilnctl.yaml
//   url: https://kiln.example.net:8443
//   token_file: admin.token      # relative to this file's folder
//   ca_file: /etc/kiln/ca.pem
//
// A token and a token file at the same level: the token file wins only if the token is
// unset there (both given as flags is a usage error). Pure apart from the injected System.

#include <chrono>
#include <optional>
#include <string>

#include "cli/system.h"
#include "common/result.h"

namespace kiln::cli {

inline constexpr const char* kDefaultUrl = "http://127.0.0.1:8080";
inline constexpr const char* kDefaultConfigPath = "~/.config/kiln/kilnctl.yaml";

// Flags common to every command, as given on the command line (unset = not given).
struct GlobalOptions {
  std::optional<std::string> url, token, token_file, ca_file, config;
  std::optional<double> timeout_seconds;
  bool json = false;
};

struct ConnectionSettings {
  std::string url = kDefaultUrl;  // without a trailing slash
  std::string token;
  std::string ca_file;
  std::chrono::milliseconds timeout{120000};  // a 1M-GPU fleet import takes tens of seconds
};

// Errors (kInvalidArgument, a one-line message for stderr, exit code 2): an unreadable or
// malformed config file or token file, an unknown config key, a URL that is not http(s).
Result<ConnectionSettings> resolveConnection(const GlobalOptions& flags, const System& system);

}  // namespace kiln::cli
