#pragma once
// The out-of-band runner's BMC credentials (issue 32): by reference, never in PostgreSQL, a
// workflow, a log, an API answer or step output. A credential is read from
//   - a systemd credential: $CREDENTIALS_DIRECTORY/bmc-<name> (LoadCredential=), or
//   - the runner's credential file (default /etc/kiln/bmc-credentials.json):
//       {"<name>": {"user": "...", "password": "..."}, ...}
// Both must be regular files owned by the runner's user (or root) that no group or other
// user can read or write: a file others can read is refused, naming the mode, never read.
//
// A Secret prints as "***". redact() removes a secret from any text before it is shown
// (ipmitool echoes what it was given in some errors).

#include <map>
#include <string>
#include <string_view>

#include "common/result.h"

namespace kiln::oob {

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  // The secret itself: only for handing it to the protocol (an environment variable of the
  // client process, a request header), never for text meant for people.
  const std::string& reveal() const { return value_; }
  bool empty() const { return value_.empty(); }
  std::string shown() const { return "***"; }

 private:
  std::string value_;
};

struct BmcCredential {
  std::string user;
  Secret password;
};

inline constexpr std::string_view kDefaultCredentialsFile = "/etc/kiln/bmc-credentials.json";

// A credential name: [A-Za-z0-9._-], 1 to 64 characters.
bool validCredentialName(std::string_view name);

// Reads credential `name`: from $CREDENTIALS_DIRECTORY (when `credentials_directory` is not
// empty) if it holds bmc-<name>, else from `file`. kNotFound when neither has it; kInvalidArgument
// for a file others can read, a bad name or a malformed file (the message names the file and
// what was expected, never a secret).
Result<BmcCredential> loadBmcCredential(const std::string& name, const std::string& file,
                                        const std::string& credentials_directory);

// `text` with every occurrence of the secret replaced by "***" (a secret shorter than 4
// characters is still replaced: a password is never shown, however short).
std::string redact(std::string text, const Secret& secret);

}  // namespace kiln::oob
