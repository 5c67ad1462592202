// POST /api/v1/interruptions decoded at the edge (reliability::decodeInterruption).

#include <gtest/gtest.h>

#include "orchestrator/reliability/reliability_service.h"

namespace kiln::reliability {
namespace {

using nlohmann::json;

json valid() {
  return json::parse(R"({"id": "slurm-4815-nodefail", "at": "2026-12-02T10:00:00Z", "job": "4815", "job_gpus": 4096,
                         "hosts": ["prn-b01-p01-h03"], "cause": "gpu", "owner": "training"})");
}

TEST(InterruptionDecodeTest, DecodesAValidInterruption) {
  auto i = decodeInterruption(valid());
  ASSERT_TRUE(i.ok()) << i.error();
  EXPECT_EQ(i->id, "slurm-4815-nodefail");
  EXPECT_EQ(formatTime(i->at), "2026-12-02T10:00:00Z");
  EXPECT_EQ(i->job_gpus, 4096);
}

// Found by tests/fuzz (rest_bodies): a year past 2262 overflowed the nanosecond TimePoint in
// system_clock::from_time_t (signed overflow, undefined behaviour); it is refused now.
TEST(InterruptionDecodeTest, TimesATimePointCannotHoldAreRefused) {
  for (const char* at : {"4962-12-02T10:00:00Z", "9999-01-01", "1000-01-01T00:00:00Z"}) {
    json body = valid();
    body["at"] = at;
    auto i = decodeInterruption(body);
    ASSERT_FALSE(i.ok()) << at;
    EXPECT_EQ(i.error().fields.at(0).path, "at") << at;
  }
  EXPECT_TRUE(parseTime("2200-01-01T00:00:00Z").has_value());
  EXPECT_FALSE(parseTime("2300-01-01T00:00:00Z").has_value());
}

TEST(InterruptionDecodeTest, EveryBadFieldIsListed) {
  json body = valid();
  body["job_gpus"] = 1e300;
  body["hosts"] = {1};
  body["colour"] = "red";
  auto i = decodeInterruption(body);
  ASSERT_FALSE(i.ok());
  std::vector<std::string> paths;
  for (const auto& f : i.error().fields) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"colour", "job_gpus", "hosts", "hosts"}));
}

}  // namespace
}  // namespace kiln::reliability
