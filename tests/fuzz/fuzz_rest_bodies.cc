// The other REST request bodies and query parameters, through the codecs the routes use
// (orchestrator/api/codecs.h): the first byte picks the decoder, the rest is the body or the
// parameter. Properties: never throws; a 422 names its fields; decoded values keep their bounds.

#include "common/agent_protocol.h"
#include "orchestrator/api/codecs.h"
#include "orchestrator/reliability/reliability_service.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void expectFields(const kiln::Error& e) {
  if (e.code == kiln::ErrorCode::kInvalidContent && e.message.rfind("invalid ", 0) == 0 &&
      e.message.find(": ") != std::string::npos && e.fields.empty() && e.details.empty())
    kiln::fuzz::fail("a 422 of several fields lists none: " + e.message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t which = data[0] % 9;
  const std::string_view rest = kiln::fuzz::text(data + 1, size - 1);
  if (which == 0) {
    auto page = kiln::api::decodePage(rest.substr(0, rest.find('&')),
                                      rest.find('&') == std::string_view::npos ? "" : rest.substr(rest.find('&') + 1));
    if (page.ok()) KILN_FUZZ_EXPECT(page->limit >= 1 && page->limit <= 1000, std::to_string(page->limit));
    return 0;
  }
  if (which == 1) {
    auto s = kiln::api::decodeSeconds(rest, 0, 60, 25, "wait must be a number of seconds (0-60)");
    if (s.ok()) KILN_FUZZ_EXPECT(*s >= 0 && *s <= 60, std::to_string(*s));
    return 0;
  }
  if (which == 2) {
    auto reason = kiln::api::decodeVerbReason(rest, "application/json");
    if (reason.ok()) KILN_FUZZ_EXPECT(reason->size() <= 1000, "reason too long");
    else expectFields(reason.error());
    return 0;
  }
  auto doc = kiln::api::decodeDocument(rest, "application/json", /*yaml_ok=*/false);
  if (!doc.ok()) return 0;
  switch (which) {
    case 3: {
      auto r = kiln::api::decodeStartRun(*doc);
      // Every id given is kept, none made up.
      if (r.ok()) KILN_FUZZ_EXPECT(r->hosts.size() == doc->value("hosts", nlohmann::json::array()).size() &&
                                       r->pods.size() == doc->value("pods", nlohmann::json::array()).size(),
                                   "hosts or pods lost");
      break;
    }
    case 4: {
      auto r = kiln::api::decodeHostAction(*doc);
      if (r.ok()) {
        KILN_FUZZ_EXPECT(r->reason.size() <= 1000, "reason too long");
        KILN_FUZZ_EXPECT(r->to.has_value() == (r->action == kiln::core::HostAction::kOverride), "to only with override");
        KILN_FUZZ_EXPECT(kiln::core::actionKind(r->action) != kiln::core::ActionKind::kSystem, "a system action");
      } else {
        expectFields(r.error());
      }
      break;
    }
    case 5: {
      auto r = kiln::api::decodeTokenRequest(*doc);
      if (r.ok()) KILN_FUZZ_EXPECT(!r->name.empty() && r->name.size() <= 100, r->name);
      else expectFields(r.error());
      break;
    }
    case 6: {
      auto r = kiln::protocol::registrationFromJson(*doc);
      if (r.ok()) KILN_FUZZ_EXPECT(r->inventory.is_object(), "inventory");
      break;
    }
    default: {
      auto r = kiln::reliability::decodeInterruption(*doc);
      if (r.ok()) {
        KILN_FUZZ_EXPECT(!r->id.empty() && !r->cause.empty(), "id and cause");
        KILN_FUZZ_EXPECT(!r->hosts.empty() || !r->pod.empty(), "hosts or pod");
        KILN_FUZZ_EXPECT(!r->job_gpus || (*r->job_gpus >= 1 && *r->job_gpus <= 10000000), "job_gpus");
        (void)kiln::reliability::formatTime(r->at);
      } else {
        expectFields(r.error());
      }
      break;
    }
  }
  return 0;
}
