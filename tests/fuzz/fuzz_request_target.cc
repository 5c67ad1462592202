// An HTTP request target as kilnd's server receives it -> path and query, percent-decoded.
// Properties: never throws; a target without '%' decodes to itself (path part).

#include "orchestrator/http/server.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view target = kiln::fuzz::text(data, size);
  auto split = kiln::http::splitTarget(target);
  if (target.find('%') == std::string_view::npos) {
    KILN_FUZZ_EXPECT(split.has_value(), std::string(target));
    KILN_FUZZ_EXPECT(split->first == target.substr(0, target.find('?')), split->first);
  }
  if (split) KILN_FUZZ_EXPECT(split->first.size() <= target.size(), "decoding never grows");
  return 0;
}
