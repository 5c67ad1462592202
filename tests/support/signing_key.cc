#include "tests/support/signing_key.h"

#include <openssl/sha.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace kiln::testing {
namespace {

// Runs a shell command; its exit status and combined output.
std::pair<int, std::string> shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

void mustRun(const std::string& cmd) {
  auto [rc, out] = shell(cmd);
  if (rc != 0) {
    std::cerr << "SigningKey: `" << cmd << "` failed (" << rc << "):\n" << out << std::endl;
    std::abort();
  }
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

SigningKey::SigningKey(std::string dir, const std::string& user_id) : dir_(std::move(dir)) {
  home_ = dir_ + "/gnupg";
  keyring_ = dir_ + "/trusted-keys.gpg";
  std::filesystem::create_directories(home_);
  std::filesystem::permissions(home_, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace);
  const std::string gpg = "gpg --batch --quiet --homedir '" + home_ + "' ";
  mustRun(gpg + "--passphrase '' --quick-gen-key '" + user_id + "' ed25519 sign never");
  mustRun(gpg + "--output '" + keyring_ + "' --export");
}

SigningKey::~SigningKey() {
  // gpg-agent outlives gpg: stop it, or each test leaves one behind.
  shell("gpgconf --homedir '" + home_ + "' --kill all");
}

std::string SigningKey::sign(const std::string& text) const {
  const std::string in = dir_ + "/to-sign", out = dir_ + "/to-sign.asc";
  std::ofstream(in, std::ios::binary | std::ios::trunc) << text;
  std::filesystem::remove(out);
  mustRun("gpg --batch --quiet --homedir '" + home_ + "' --armor --detach-sign --output '" + out + "' '" + in + "'");
  return readAll(out);
}

std::string SigningKey::sumsLine(const std::string& content, const std::string& name) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(content.data()), content.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : digest) {
    hex += kHex[c >> 4];
    hex += kHex[c & 15];
  }
  return hex + "  " + name + "\n";
}

}  // namespace kiln::testing
