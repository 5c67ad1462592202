#pragma once
// Detached OpenPGP signatures checked with gpgv (issue 31), kilnd's at bundle upload and
// kiln-agent's before a step uses an artifact.
//
// Why gpgv: it is Debian's own verifier (apt's), installed on every Debian host (Priority:
// important), made only to check signatures against a fixed keyring, and sites already manage
// OpenPGP release keys with gpg. minisign would need a package on every host and its own key
// handling. The keyring is a file of public keys as `gpg --export` writes it.

#include <string>

#include "common/artifact_trust.h"
#include "common/exec/process_runner.h"
#include "common/result.h"

namespace kiln::exec {

// `gpgv --homedir EMPTY --keyring KEYRING SIG DATA` over private temporary copies of `data` and
// `signature` (in a fresh directory under `tmp_dir`, removed after). ok on exit 0; otherwise an
// error carrying gpgv's last words ("BAD signature from ...", "Can't check signature: No public
// key"). The homedir is that empty directory, so only `keyring` is trusted. `runner` must
// outlive the returned check; `keyring` must be an absolute path.
SignatureCheck gpgvCheck(ProcessRunner& runner, std::string keyring, std::string tmp_dir = "/tmp");

}  // namespace kiln::exec
