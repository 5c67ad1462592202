// Who may enrol an agent as which host (core/enrolment.h): every refusal, and what is allowed.

#include "orchestrator/core/enrolment.h"

#include <gtest/gtest.h>

namespace kiln::core {
namespace {

EnrolmentFacts facts() {
  EnrolmentFacts f;
  f.host = "h1";
  f.host_exists = true;
  return f;
}

TEST(EnrolmentTest, AFleetWideTokenEnrolsOnlyAHostWithoutALiveAgent) {
  EnrolmentFacts f = facts();
  EXPECT_TRUE(decideEnrolment(f).ok());
  f.live_agent_token = "a1b2c3";
  auto st = decideEnrolment(f);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kConflict);
  EXPECT_NE(st.error().message.find("--reenroll"), std::string::npos) << st.error().message;
  EXPECT_EQ(st.error().details.at("agent_token"), "a1b2c3");
  f.reenroll = true;  // only a host's own token can carry it; a fleet-wide one never replaces
  EXPECT_EQ(decideEnrolment(f).error().code, ErrorCode::kConflict);
}

TEST(EnrolmentTest, AHostsTokenEnrolsThatHostOnceBeforeItExpires) {
  EnrolmentFacts f = facts();
  f.token_host = "h1";
  EXPECT_TRUE(decideEnrolment(f).ok());

  EnrolmentFacts other = f;
  other.host = "h2";
  EXPECT_EQ(decideEnrolment(other).error().code, ErrorCode::kPermissionDenied);
  other.host_exists = false;  // does not tell whether another host exists
  EXPECT_EQ(decideEnrolment(other).error().code, ErrorCode::kPermissionDenied);

  EnrolmentFacts spent = f;
  spent.token_spent = true;
  EXPECT_EQ(decideEnrolment(spent).error().code, ErrorCode::kUnauthenticated);
  EnrolmentFacts expired = f;
  expired.token_expired = true;
  EXPECT_EQ(decideEnrolment(expired).error().code, ErrorCode::kUnauthenticated);
}

TEST(EnrolmentTest, OnlyAReenrolmentTokenOfTheHostReplacesItsLiveAgent) {
  EnrolmentFacts f = facts();
  f.token_host = "h1";
  f.live_agent_token = "a1b2c3";
  EXPECT_EQ(decideEnrolment(f).error().code, ErrorCode::kConflict);
  f.reenroll = true;
  EXPECT_TRUE(decideEnrolment(f).ok());
  f.token_spent = true;
  EXPECT_EQ(decideEnrolment(f).error().code, ErrorCode::kUnauthenticated);
}

TEST(EnrolmentTest, AnUnknownHostIsNotFound) {
  EnrolmentFacts f = facts();
  f.host_exists = false;
  EXPECT_EQ(decideEnrolment(f).error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace kiln::core

namespace kiln::core {
namespace {

// Issue 33: which kiln-agent versions kilnd registers (--min-agent-version).
TEST(AgentVersionTest, VersionsCompareByTheirLeadingNumbers) {
  EXPECT_EQ(versionNumbers("0.10.2-vfleet"), (std::vector<long>{0, 10, 2}));
  EXPECT_EQ(versionNumbers("2"), (std::vector<long>{2}));
  EXPECT_EQ(versionNumbers("1.2."), (std::vector<long>{1, 2}));
  EXPECT_FALSE(versionNumbers("test").has_value());
  EXPECT_FALSE(versionNumbers("").has_value());
  EXPECT_FALSE(versionNumbers("v1.2").has_value());

  EXPECT_TRUE(acceptAgentVersion("anything", "").ok()) << "no minimum: any";
  EXPECT_TRUE(acceptAgentVersion("0.2.0", "0.2.0").ok());
  EXPECT_TRUE(acceptAgentVersion("0.10.0", "0.9.5").ok()) << "numbers, not text";
  EXPECT_TRUE(acceptAgentVersion("0.2", "0.2.0").ok()) << "a missing number is 0";
  EXPECT_TRUE(acceptAgentVersion("1.0.0-vfleet", "0.2.0").ok());
  for (const std::string old : {"0.1.9", "0.1", "0.1.0-vfleet", "test", ""}) {
    auto st = acceptAgentVersion(old, "0.2.0");
    ASSERT_FALSE(st.ok()) << old;
    EXPECT_EQ(st.error().code, ErrorCode::kConflict);
    EXPECT_NE(st.error().message.find("kilnd accepts kiln-agent 0.2.0 or newer"), std::string::npos)
        << st.error().message;
  }
}

}  // namespace
}  // namespace kiln::core
