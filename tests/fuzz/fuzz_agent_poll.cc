// GET /api/v1/agents/{host}/work answers as the agents read them: the poll answer and the
// assignment in it (common/agent_protocol.h, the decoder kiln-agent and kiln-vfleet share).
// Properties: never throws; an accepted assignment has an id and an argv, and survives its own
// rendering (toJson) unchanged.

#include "common/agent_protocol.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto answer = kiln::protocol::pollAnswerFromBody(std::string(kiln::fuzz::text(data, size)));
  if (!answer.ok() || !answer->assignment) return 0;
  auto a = kiln::protocol::assignmentFromJson(*answer->assignment);
  if (!a.ok()) return 0;
  KILN_FUZZ_EXPECT(!a->id.empty() && !a->argv.empty() && !a->argv.front().empty(), a->id);
  KILN_FUZZ_EXPECT(a->output_cap <= kiln::protocol::kMaxOutputCap, "output_cap");
  const nlohmann::json rendered = kiln::protocol::toJson(*a);
  auto again = kiln::protocol::assignmentFromJson(rendered);
  KILN_FUZZ_EXPECT(again.ok(), again.ok() ? "" : again.error().message);
  KILN_FUZZ_EXPECT(kiln::protocol::toJson(*again) == rendered, kiln::fuzz::dumpOrDie(rendered, false));
  // The agent journals and reports with dumpJson: never throws on any bytes.
  (void)kiln::protocol::dumpJson(rendered);
  return 0;
}
