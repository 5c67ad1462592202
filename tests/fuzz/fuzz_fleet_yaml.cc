// POST /api/v1/fleet/import (and `kilnctl fleet import`): a body in YAML or JSON -> a FleetSpec.
// Properties: never throws; every pod of an accepted fleet has a valid name and a building
// the file declares.

#include "orchestrator/api/codecs.h"
#include "orchestrator/api/fleet_document.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto doc = kiln::api::decodeDocument(kiln::fuzz::text(data, size), "application/yaml", /*yaml_ok=*/true);
  if (!doc.ok()) return 0;
  auto fleet = kiln::api::parseFleetSpec(*doc);
  if (!fleet.ok()) {
    KILN_FUZZ_EXPECT(!fleet.error().message.empty(), "an error says what is wrong");
    return 0;
  }
  for (const auto& pod : fleet->pods) {
    KILN_FUZZ_EXPECT(kiln::core::isValidName(pod.id), pod.id);
    bool declared = false;
    for (const auto& b : fleet->buildings) declared = declared || (b.id == pod.building && b.site == pod.site);
    KILN_FUZZ_EXPECT(declared, pod.id + " in building " + pod.building);
  }
  return 0;
}
