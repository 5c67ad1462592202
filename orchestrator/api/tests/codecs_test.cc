// REST request decoding (orchestrator/api/codecs.h): typed values or a clear 400/422, never an
// exception, whatever the body holds.

#include "orchestrator/api/codecs.h"

#include <gtest/gtest.h>

namespace kiln::api {
namespace {

using nlohmann::json;

TEST(CodecsTest, DocumentIsJsonOrYamlWhereTheRouteTakesIt) {
  auto j = decodeDocument(R"({"a": 1})", "application/json", false);
  ASSERT_TRUE(j.ok()) << j.error();
  EXPECT_EQ((*j)["a"], 1);
  auto y = decodeDocument("a: 1\n", "application/yaml", true);
  ASSERT_TRUE(y.ok()) << y.error();
  EXPECT_EQ((*y)["a"], 1);
  auto not_yaml_here = decodeDocument("a: 1\n", "text/plain", false);
  ASSERT_FALSE(not_yaml_here.ok());
  EXPECT_EQ(not_yaml_here.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(decodeDocument("", "application/json", true).error().message, "the request needs a body");
  auto overflow = decodeDocument("[1e999999]", "application/json", false);
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.error().code, ErrorCode::kInvalidArgument);
}

TEST(CodecsTest, PageAndSecondsAreWholeNumbersInRange) {
  EXPECT_EQ(decodePage("", "")->limit, 100);
  EXPECT_EQ(decodePage("1000", "h-9")->limit, 1000);
  EXPECT_EQ(decodePage("1000", "h-9")->cursor, "h-9");
  for (const char* bad : {"0", "1001", "-1", "12abc", " 5", "5 ", "1e2", "99999999999999999999", "+5"})
    EXPECT_FALSE(decodePage(bad, "").ok()) << bad;
  EXPECT_EQ(*decodeSeconds("", 0, 60, 25, "m"), 25);
  EXPECT_EQ(*decodeSeconds("0", 0, 60, 25, "m"), 0);
  // std::stoi took "25abc" as 25; a wait that is not a number is refused now.
  EXPECT_EQ(decodeSeconds("25abc", 0, 60, 25, "wait...").error().message, "wait...");
  EXPECT_FALSE(decodeSeconds("61", 0, 60, 25, "m").ok());
}

TEST(CodecsTest, StartRunNamesTheBadField) {
  auto ok = decodeStartRun(json::parse(R"({"workflow": "pre-job-health", "pods": ["p1"], "params": {"x": 1}})"));
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->workflow, "pre-job-health");
  EXPECT_EQ(ok->pods, std::vector<std::string>{"p1"});
  EXPECT_EQ(ok->params["x"], 1);
  auto unknown = decodeStartRun(json::parse(R"({"workflow": "w", "hostz": []})"));
  EXPECT_EQ(unknown.error().details.at("field"), "hostz");
  auto hosts = decodeStartRun(json::parse(R"({"workflow": "w", "hosts": [1]})"));
  EXPECT_EQ(hosts.error().details.at("field"), "hosts");
  auto purpose = decodeStartRun(json::parse(R"({"workflow": "w", "purpose": 3})"));
  EXPECT_EQ(purpose.error().details.at("field"), "purpose");
  EXPECT_EQ(decodeStartRun(json::array()).error().code, ErrorCode::kInvalidContent);
  EXPECT_EQ(decodeStartRun(json::array()).error().fields.at(0).path, "");
}

TEST(CodecsTest, StartRunListsEveryBadField) {
  auto bad = decodeStartRun(json::parse(R"({"hostz": [], "hosts": [1], "pods": "p1", "purpose": 3})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidContent);
  std::vector<std::string> paths;
  for (const auto& f : bad.error().fields) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"hostz", "workflow", "hosts", "pods", "purpose"}));
  EXPECT_EQ(bad.error().details.count("field"), 0u) << "details.field only when exactly one field is bad";
}

TEST(CodecsTest, HostActionListsEveryBadField) {
  auto ok = decodeHostAction(json::parse(R"({"action": "override", "to": "available", "reason": "checked"})"));
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->action, core::HostAction::kOverride);
  EXPECT_EQ(ok->to, core::HostState::kAvailable);
  auto bad = decodeHostAction(json::parse(R"({"action": "override", "colour": 1, "reason": 5})"));
  ASSERT_FALSE(bad.ok());
  std::vector<std::string> paths;
  for (const auto& f : bad.error().fields) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"colour", "reason", "reason", "to"}));
  EXPECT_EQ(bad.error().message, "invalid host action: colour: unknown field");
  auto system = decodeHostAction(json::parse(R"({"action": "validation_pass"})"));
  ASSERT_FALSE(system.ok());
  EXPECT_EQ(system.error().fields.at(0).path, "action");
  auto to_without_override = decodeHostAction(json::parse(R"({"action": "drain", "to": "failed"})"));
  EXPECT_EQ(to_without_override.error().fields.at(0).path, "to");
  auto long_reason = decodeHostAction(json{{"action", "fail"}, {"reason", std::string(1001, 'x')}});
  EXPECT_EQ(long_reason.error().fields.at(0).path, "reason");
}

TEST(CodecsTest, TokenRequest) {
  auto ok = decodeTokenRequest(json::parse(R"({"role": "agent", "name": "a", "host": "h1"})"));
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->role, core::Role::kAgent);
  EXPECT_EQ(ok->host, "h1");
  auto bad = decodeTokenRequest(json::parse(R"({"role": "root", "name": "", "host": 7})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().fields.size(), 3u);
}

TEST(CodecsTest, VerbReason) {
  EXPECT_EQ(*decodeVerbReason("", ""), "");
  EXPECT_EQ(*decodeVerbReason(" \n", "application/json"), "");
  EXPECT_EQ(*decodeVerbReason(R"({"reason": "change 4411"})", "application/json"), "change 4411");
  auto bad = decodeVerbReason(R"({"why": 1})", "application/json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().details.at("field"), "why");
  EXPECT_EQ(decodeVerbReason("[1]", "application/json").error().code, ErrorCode::kInvalidContent);
}

TEST(CodecsTest, ChoiceIsAnEnumValueOrAbsent) {
  EXPECT_TRUE(decodeChoice("", "state", {"running"}).ok());
  EXPECT_TRUE(decodeChoice("running", "state", {"running", "passed"}).ok());
  auto bad = decodeChoice("bogus", "state", {"running", "passed"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidContent);
  ASSERT_EQ(bad.error().fields.size(), 1u);
  EXPECT_EQ(bad.error().fields[0], (FieldError{"state", "expected one of running, passed"}));
}

TEST(CodecsTest, HostSortIsAColumnWithAnOptionalMinusForDescending) {
  auto def = decodeHostSort("");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->key, core::HostSortKey::kId);
  EXPECT_FALSE(def->descending);
  auto since = decodeHostSort("-state_since");
  ASSERT_TRUE(since.ok());
  EXPECT_EQ(since->key, core::HostSortKey::kStateSince);
  EXPECT_TRUE(since->descending);
  auto reason = decodeHostSort("reason");
  ASSERT_TRUE(reason.ok());
  EXPECT_EQ(reason->key, core::HostSortKey::kReason);
  EXPECT_FALSE(reason->descending);
  for (const char* bad : {"-", "--id", "name", "ID", "state,id"}) {
    auto r = decodeHostSort(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidContent) << bad;
    ASSERT_EQ(r.error().fields.size(), 1u);
    EXPECT_EQ(r.error().fields[0].path, "sort");
  }
}

}  // namespace
}  // namespace kiln::api
