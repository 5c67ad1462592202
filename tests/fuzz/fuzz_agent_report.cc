// POST /api/v1/assignments/{id}/result: an agent's report body -> StepReport (kilnd's side of the
// agent protocol). An agent token is all it takes to send one, so a report of any shape must be
// an answer, not an exception on the report thread. Properties: never throws; an accepted
// report's numbers are in their documented ranges.

#include "orchestrator/api/codecs.h"
#include "orchestrator/runs/report.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto doc = kiln::api::decodeDocument(kiln::fuzz::text(data, size), "application/json", /*yaml_ok=*/false);
  if (!doc.ok()) return 0;
  auto report = kiln::runs::decodeStepReport(*doc);
  if (report.ok()) {
    KILN_FUZZ_EXPECT(report->lease >= 0, std::to_string(report->lease));
    KILN_FUZZ_EXPECT(report->result.duration_ms >= 0, "duration");
    KILN_FUZZ_EXPECT(report->result.signal >= 0 && report->result.signal <= 255, "signal");
  } else {
    KILN_FUZZ_EXPECT(report.error().code == kiln::ErrorCode::kInvalidContent, report.error().message);
  }
  // What kilnd reads back from the rows it stored never throws either.
  (void)kiln::runs::storedStepResult(*doc);
  return 0;
}
