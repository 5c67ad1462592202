// One target per tool-output format (KILN_FUZZ_FORMAT names it at build time): bytes as a tool
// printed them -> parsers::parse. Properties: never throws, and a parsed document is valid
// UTF-8 (README.md of agents/parsers promises it) and an object.

#include "agents/parsers/parsers.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const kiln::parsers::Format format = *kiln::parsers::formatFromName(KILN_FUZZ_FORMAT);
  auto parsed = kiln::parsers::parse(format, kiln::fuzz::text(data, size));
  if (parsed.ok()) {
    if (format != kiln::parsers::Format::kJson) KILN_FUZZ_EXPECT(parsed->is_object(), KILN_FUZZ_FORMAT);
    kiln::fuzz::dumpOrDie(*parsed, /*strict=*/true);
  } else {
    KILN_FUZZ_EXPECT(!parsed.error().message.empty(), "an error says what is wrong");
  }
  return 0;
}
