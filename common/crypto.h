#pragma once
// Small wrappers over OpenSSL's libcrypto used for API tokens and content hashes.

#include <string>
#include <string_view>

namespace kiln {

std::string sha256Hex(std::string_view data);
// `bytes` random bytes from the OS CSPRNG, as lower-case hex.
std::string randomHex(std::size_t bytes);
// Compares in time independent of where the strings differ (lengths may leak).
bool constantTimeEquals(std::string_view a, std::string_view b);

}  // namespace kiln
