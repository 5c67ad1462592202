// POST /api/v1/rollouts (`kilnctl rollout plan|create`): the request's selector and policy, and
// maintenance windows, -> typed values. Properties: never throws; an accepted selector or policy
// renders (toJson, what GET /rollouts/{id} answers) to a document that parses back to the same
// rendering, so that an answer can be sent again as a request.

#include "orchestrator/api/codecs.h"
#include "orchestrator/api/rollout_documents.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

template <typename Parse>
void roundTrip(const nlohmann::json& doc, Parse parse) {
  auto value = parse(doc);
  if (!value.ok()) return;
  const nlohmann::json rendered = kiln::api::toJson(*value);
  auto again = parse(rendered);
  KILN_FUZZ_EXPECT(again.ok(), again.ok() ? "" : again.error().message + " in " + kiln::fuzz::dumpOrDie(rendered, false));
  KILN_FUZZ_EXPECT(kiln::api::toJson(*again) == rendered, kiln::fuzz::dumpOrDie(rendered, false));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto doc = kiln::api::decodeDocument(kiln::fuzz::text(data, size), "application/json", /*yaml_ok=*/true);
  if (!doc.ok() || !doc->is_object()) return 0;
  const nlohmann::json none;
  roundTrip(doc->contains("selector") ? (*doc)["selector"] : none, kiln::api::parseSelector);
  roundTrip(doc->contains("policy") ? (*doc)["policy"] : none, kiln::api::parsePolicy);
  if (auto w = doc->find("window"); w != doc->end() && w->is_string()) {
    std::string why;
    (void)kiln::rollouts::parseWindow(w->get<std::string>(), &why);
  }
  return 0;
}
