#pragma once
// Shared by the libFuzzer targets of tests/fuzz: the properties every decoder of outside input
// must keep, checked loudly (an abort is what libFuzzer reports as a crash, with the input).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kiln::fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz property failed: %s\n", what.c_str());
  std::abort();
}

#define KILN_FUZZ_EXPECT(cond, what) \
  do {                               \
    if (!(cond)) ::kiln::fuzz::fail(std::string(#cond) + ": " + (what)); \
  } while (0)

// A document Kiln sends on (REST answers, agent reports) must serialise: with invalid UTF-8
// replaced, as kilnd and the agent dump it; `strict` also demands valid UTF-8 (parsers promise it).
inline std::string dumpOrDie(const nlohmann::json& j, bool strict) {
  try {
    return j.dump(-1, ' ', false,
                  strict ? nlohmann::json::error_handler_t::strict : nlohmann::json::error_handler_t::replace);
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("dump: ") + e.what());
  }
}

}  // namespace kiln::fuzz
