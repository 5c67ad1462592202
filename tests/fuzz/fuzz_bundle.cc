// POST /api/v1/bundles (`kilnctl bundle create`): a bundle in YAML or JSON -> a Bundle.
// Properties: never throws; an accepted bundle renders (toJson) to a document that parses back
// to the same rendering (what GET /bundles answers can be posted again).

#include "orchestrator/api/codecs.h"
#include "orchestrator/api/rollout_documents.h"
#include "orchestrator/rollouts/bundle.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto doc = kiln::api::decodeDocument(kiln::fuzz::text(data, size), "application/yaml", /*yaml_ok=*/true);
  if (!doc.ok()) return 0;
  auto bundle = kiln::api::parseBundle(*doc);
  if (!bundle.ok()) return 0;
  nlohmann::json rendered = kiln::rollouts::toJson(*bundle);
  rendered.erase("id");  // kilnd's, not the author's: a bundle document does not carry it
  auto again = kiln::api::parseBundle(rendered);
  KILN_FUZZ_EXPECT(again.ok(), again.ok() ? "" : again.error().message);
  nlohmann::json again_rendered = kiln::rollouts::toJson(*again);
  again_rendered.erase("id");
  KILN_FUZZ_EXPECT(again_rendered == rendered, kiln::fuzz::dumpOrDie(rendered, false));
  return 0;
}
