#include "common/artifact_trust.h"

#include <cctype>

#include "common/artifact_ref.h"

namespace kiln {

Status checkArtifactTrust(const SignedChecksums& s, const std::vector<std::string>& sha256s,
                          const SignatureCheck& verify, const std::string& what) {
  const bool has_list = !s.checksums.empty(), has_sig = !s.signature.empty();
  if (has_list != has_sig)
    return invalidContent(what + ": " + (has_list ? "checksums without a signature" : "a signature without checksums") +
                          " (a signed bundle carries both: the SHA256SUMS text and its detached signature)");
  if (!has_list) {
    if (verify) return invalidContent(what + ": not signed, and this site requires signed artifacts (--trusted-keys)");
    return okStatus();
  }
  auto listed = parseChecksums(s.checksums);
  if (!listed.ok()) return invalidContent(what + ": " + listed.error().message);
  for (const auto& sha : sha256s) {
    std::string lower = sha;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!listed->count(lower)) return invalidContent(what + ": sha256 " + lower + " is not in the signed checksums");
  }
  if (!verify) return okStatus();
  if (auto ok = verify(s.checksums, s.signature); !ok.ok())
    return invalidContent(what + ": the signature does not verify against the trusted keys: " + ok.error().message);
  return okStatus();
}

}  // namespace kiln
