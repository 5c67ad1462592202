#pragma once
// Which artifacts Kiln trusts (issue 31): the one rule kilnd applies when a bundle is uploaded
// and each kiln-agent applies again before a step uses an artifact. Pure apart from `verify`.
//
//   - The checksum list and its signature come together: one without the other is refused.
//   - A signed list must list every artifact's sha256 (what it vouches for).
//   - With trusted keys (kilnd's and the agent's --trusted-keys): every artifact must be
//     signed, and the signature must verify against those keys.
//   - Without trusted keys a signature cannot be checked: it is not (the sha256 still is, by
//     the agent, before any use). A site turns signatures on by giving keys.

#include <functional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kiln {

struct SignedChecksums {
  std::string checksums;  // SHA256SUMS text; "" = unsigned
  std::string signature;  // ASCII-armored detached OpenPGP signature of checksums
};

// Checks `signature` over `data` against the trusted keys (common/exec/gpgv.h does it with gpgv).
using SignatureCheck = std::function<Status(const std::string& data, const std::string& signature)>;

// ok, or kInvalidContent saying what is wrong ("not signed, and this site requires signed
// artifacts (--trusted-keys)", "sha256 ab... is not in the signed checksums", "the signature
// does not verify against the trusted keys: gpgv: BAD signature from ...").
// `verify` empty = no trusted keys. `what` names the artifacts' owner in messages ("bundle x").
Status checkArtifactTrust(const SignedChecksums& signed_list, const std::vector<std::string>& sha256s,
                          const SignatureCheck& verify, const std::string& what);

}  // namespace kiln
