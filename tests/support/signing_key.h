#pragma once
// An OpenPGP signing key made by the real gpg for a test (issue 31's signed bundles): a fresh
// GNUPGHOME under `dir`, an ed25519 key without a passphrase, its public keyring exported as
// kilnd's and kiln-agent's --trusted-keys file, and detached ASCII-armored signatures made with
// it. Not thread-safe; each instance is its own key.

#include <string>

namespace kiln::testing {

class SigningKey {
 public:
  // Makes the key (gpg --quick-gen-key, ~1 s). Aborts the process with gpg's output when gpg
  // fails: a test cannot go on without it.
  SigningKey(std::string dir, const std::string& user_id = "Kiln Test Signer <signer@kiln.test>");
  ~SigningKey();
  SigningKey(const SigningKey&) = delete;
  SigningKey& operator=(const SigningKey&) = delete;

  // The exported public keyring (binary, as `gpg --export` writes it; gpgv --keyring reads it).
  const std::string& keyring() const { return keyring_; }
  // A detached ASCII-armored signature of `text`.
  std::string sign(const std::string& text) const;
  // The SHA256SUMS line sha256sum(1) prints for a file of this content and name.
  static std::string sumsLine(const std::string& content, const std::string& name);

 private:
  std::string dir_, home_, keyring_;
};

}  // namespace kiln::testing
