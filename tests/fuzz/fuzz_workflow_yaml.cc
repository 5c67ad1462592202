// Workflow YAML (PUT /api/v1/workflows/{name}, workflows/*.yaml) -> the loader with its
// file:line:col errors. Properties: never throws; every error names the source; a loaded spec
// renders (toJson) and loads again from its own rendering's fields without changing.

#include "orchestrator/workflow/loader.h"
#include "orchestrator/workflow/spec.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto spec = kiln::workflow::loadWorkflow(kiln::fuzz::text(data, size), "fuzz.yaml");
  if (!spec.ok()) {
    KILN_FUZZ_EXPECT(spec.error().message.find("fuzz.yaml") != std::string::npos, spec.error().message);
    return 0;
  }
  kiln::fuzz::dumpOrDie(kiln::workflow::toJson(*spec), /*strict=*/false);
  return 0;
}
