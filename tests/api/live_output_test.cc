// Issue 18, live work, over HTTP against a real kilnd: a running step's output posted by the
// host's agent (POST /assignments/{id}/output) and read back by offsets (GET ...?stdout_since=),
// who may post, and the run's answers that name the current assignment and the rollout that
// started the run.

#include <functional>
#include <thread>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

class LiveOutputTest : public ApiTest {
 protected:
  std::vector<std::string> extraKilndArgs() const override { return {"--workflows-dir", KILN_WORKFLOWS_DIR}; }

  void SetUp() override {
    ApiTest::SetUp();
    if (HasFatalFailure()) return;
    importFleet(smallFleet(1));
    hosts_ = podHosts("t01-b01-p0001");
    ASSERT_GE(hosts_.size(), 2u);
    Reply put = call(*admin_, "PUT", "/api/v1/workflows/two-steps", kTwoStepsWorkflow, "application/yaml");
    ASSERT_TRUE(put.status == 200 || put.status == 201) << put.body;
    auto enroller = client(createToken("enroll", "test enrolment"));
    for (int i = 0; i < 2; ++i) {
      Reply r = call(*enroller, "POST", "/api/v1/agents/register",
                     json{{"host", hosts_[i]}, {"boot_id", "boot-1"}, {"agent_version", "test"}}.dump());
      ASSERT_EQ(r.status, 200) << r.body;
      agents_.push_back(client(r.doc()["token"].get<std::string>()));
    }
    viewer_ = client(createToken("viewer", "test viewer"));
  }

  // Starts a two-steps run on host 0 and takes its first step as host 0's agent.
  json takeFirstStep() {
    Reply r = call(*admin_, "POST", "/api/v1/workflow-runs", json{{"workflow", "two-steps"}, {"hosts", {hosts_[0]}}}.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    run_ = r.doc().value("id", "");
    for (int tries = 0; tries < 10; ++tries) {
      Reply p = call(*agents_[0], "GET", "/api/v1/agents/" + hosts_[0] + "/work?wait=2&boot_id=boot-1");
      if (p.status == 200 && p.doc().contains("assignment")) return p.doc()["assignment"];
    }
    ADD_FAILURE() << "no assignment";
    return json::object();
  }

  Reply post(int agent, const json& a, const json& body) {
    return call(*agents_[agent], "POST", "/api/v1/assignments/" + a["id"].get<std::string>() + "/output", body.dump());
  }
  Reply read(const json& a, const std::string& query = "") {
    return call(*viewer_, "GET", "/api/v1/assignments/" + a["id"].get<std::string>() + "/output" + query);
  }

  std::vector<std::string> hosts_;
  std::vector<std::unique_ptr<http::Client>> agents_;
  std::unique_ptr<http::Client> viewer_;
  std::string run_;
};

TEST_F(LiveOutputTest, ChunksPostedWhileTheStepRunsAreReadBackFromTheOffsetsAReaderHasSeen) {
  const json a = takeFirstStep();
  ASSERT_TRUE(a.contains("id"));
  // The run names the step handed out now, where the console finds its output.
  const json view = call(*viewer_, "GET", "/api/v1/workflow-runs/" + run_).doc();
  EXPECT_EQ(view["hosts"][0]["assignment"], a["id"]);

  Reply none = read(a);
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_EQ(none.doc()["state"], "dispatched");
  EXPECT_EQ(none.doc()["stdout"], (json{{"offset", 0}, {"end", 0}, {"data", ""}}));
  EXPECT_TRUE(none.doc()["updated_at"].is_null());

  Reply p1 = post(0, a, {{"lease", a["lease"]}, {"host", hosts_[0]}, {"stdout", {{"offset", 0}, {"data", "line 1\n"}}}});
  ASSERT_EQ(p1.status, 200) << p1.body;
  EXPECT_EQ(p1.doc()["stdout_end"], 7);
  EXPECT_EQ(p1.doc()["stderr_end"], 0);
  // The same chunk again (its answer was lost) with more: only the new bytes are added.
  Reply p2 = post(0, a, {{"lease", a["lease"]},
                         {"stdout", {{"offset", 0}, {"data", "line 1\nline 2\n"}}},
                         {"stderr", {{"offset", 0}, {"data", "warn\n"}}}});
  ASSERT_EQ(p2.status, 200) << p2.body;
  EXPECT_EQ(p2.doc()["stdout_end"], 14);

  Reply all = read(a);
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.doc()["stdout"], (json{{"offset", 0}, {"end", 14}, {"data", "line 1\nline 2\n"}}));
  EXPECT_EQ(all.doc()["stderr"], (json{{"offset", 0}, {"end", 5}, {"data", "warn\n"}}));
  EXPECT_EQ(all.doc()["host"], hosts_[0]);
  EXPECT_EQ(all.doc()["run"], run_);
  EXPECT_EQ(all.doc()["step"], "first");
  EXPECT_FALSE(all.doc()["updated_at"].is_null());
  Reply rest = read(a, "?stdout_since=7&stderr_since=5");
  ASSERT_EQ(rest.status, 200) << rest.body;
  EXPECT_EQ(rest.doc()["stdout"], (json{{"offset", 7}, {"end", 14}, {"data", "line 2\n"}}));
  EXPECT_EQ(rest.doc()["stderr"], (json{{"offset", 5}, {"end", 5}, {"data", ""}}));

  // Output the agent had to drop: the next chunk starts past the end, and a reader learns
  // where the kept text begins.
  ASSERT_EQ(post(0, a, {{"lease", a["lease"]}, {"stdout", {{"offset", 100}, {"data", "tail\n"}}}}).status, 200);
  Reply gap = read(a, "?stdout_since=14");
  EXPECT_EQ(gap.doc()["stdout"], (json{{"offset", 100}, {"end", 105}, {"data", "tail\n"}}));

  // Only the last 64 KiB of a stream are kept.
  const std::string big(100 * 1024, 'x');
  ASSERT_EQ(post(0, a, {{"lease", a["lease"]}, {"stdout", {{"offset", 105}, {"data", big}}}}).status, 200);
  Reply tail = read(a);
  EXPECT_EQ(tail.doc()["stdout"]["end"], 105 + 100 * 1024);
  EXPECT_EQ(tail.doc()["stdout"]["offset"], 105 + 100 * 1024 - 64 * 1024);
  EXPECT_EQ(tail.doc()["stdout"]["data"].get<std::string>().size(), 64u * 1024);
}

TEST_F(LiveOutputTest, OnlyTheAgentOfTheHostThatHoldsTheStepWithItsCurrentLeasePosts) {
  const json a = takeFirstStep();
  ASSERT_TRUE(a.contains("id"));
  const json chunk = {{"offset", 0}, {"data", "x\n"}};
  // Another host's agent.
  EXPECT_TRUE(isError(post(1, a, {{"lease", a["lease"]}, {"stdout", chunk}}), 403, "permission_denied"));
  EXPECT_TRUE(isError(post(0, a, {{"lease", a["lease"]}, {"host", hosts_[1]}, {"stdout", chunk}}), 403, "permission_denied"));
  // A stale lease.
  EXPECT_TRUE(isError(post(0, a, {{"lease", a["lease"].get<int>() + 1}, {"stdout", chunk}}), 409, "conflict"));
  // Not an agent token, or no such assignment.
  EXPECT_TRUE(isError(call(*viewer_, "POST", "/api/v1/assignments/" + a["id"].get<std::string>() + "/output",
                           json{{"lease", a["lease"]}, {"stdout", chunk}}.dump()),
                      403, "permission_denied"));
  EXPECT_TRUE(isError(post(0, json{{"id", "r-999:nope:1"}}, {{"lease", 1}, {"stdout", chunk}}), 404, "not_found"));
  // Bad bodies.
  EXPECT_TRUE(isError(post(0, a, {{"stdout", chunk}}), 422, "invalid_content"));
  EXPECT_TRUE(isError(post(0, a, {{"lease", a["lease"]}, {"stdout", {{"offset", -1}, {"data", "x"}}}}), 422, "invalid_content"));
  EXPECT_TRUE(isError(post(0, a, {{"lease", a["lease"]}, {"stdout", {{"offset", 0}, {"data", std::string("a\0b", 3)}}}}), 422,
                      "invalid_content"));
  EXPECT_TRUE(isError(read(a, "?stdout_since=abc"), 400, "invalid_argument"));
  // Nothing of it was stored.
  EXPECT_EQ(read(a).doc()["stdout"]["end"], 0);

  // Once the step is reported, its output is closed: a late chunk is refused like a stale lease.
  json report = {{"lease", a["lease"]}, {"host", hosts_[0]}, {"started", true}, {"exit_code", 0},
                 {"signal", 0},         {"timed_out", false}, {"cancelled", false}, {"duration_ms", 5},
                 {"stdout_tail", "x\n"}, {"stderr_tail", ""},  {"boot_id", "boot-1"}};
  Reply done = call(*agents_[0], "POST", "/api/v1/assignments/" + a["id"].get<std::string>() + "/result", report.dump());
  ASSERT_EQ(done.status, 200) << done.body;
  EXPECT_TRUE(isError(post(0, a, {{"lease", a["lease"]}, {"stdout", chunk}}), 409, "conflict"));
  EXPECT_EQ(read(a).doc()["state"], "done");
}

TEST_F(LiveOutputTest, ARunARolloutStartedNamesTheRolloutAndItsPodAndTheListShowsPods) {
  const std::string sha(64, 'a');
  json bundle = {{"name", "live-fw"},
                 {"version", "1.0"},
                 {"platforms", {"catalina"}},
                 {"components",
                  {{{"kind", "driver"}, {"version", "580.65.06"},
                    {"artifact", "/opt/kiln/drivers/NVIDIA-Linux-aarch64-580.65.06.run"}, {"sha256", sha}}}}};
  Reply b = call(*admin_, "POST", "/api/v1/bundles", bundle.dump());
  ASSERT_EQ(b.status, 201) << b.body;
  json policy = {{"canary_pods", 1}, {"waves", {"100%"}}, {"soak", "0s"}, {"max_concurrent_pods", 1},
                 {"capacity_floor", {{"max_percent_down", 100}}}, {"failure_budget", {{"pods", 1}}}};
  Reply r = call(*admin_, "POST", "/api/v1/rollouts",
                 json{{"bundle", b.doc()["id"]}, {"selector", {{"pods", {"t01-b01-p0001"}}}}, {"policy", policy},
                      {"start", true}}
                     .dump());
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string rollout = r.doc()["id"].get<std::string>();
  std::string run;
  for (int i = 0; i < 150 && run.empty(); ++i) {
    const json items = call(*admin_, "GET", "/api/v1/rollouts/" + rollout + "/pods").doc()["items"];
    if (!items.empty()) run = items[0].value("run_id", "");
    if (run.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(run.empty()) << "the rollout started no run";
  const json view = call(*viewer_, "GET", "/api/v1/workflow-runs/" + run).doc();
  EXPECT_EQ(view["purpose"], "rollout");
  EXPECT_EQ(view["rollout"], (json{{"id", rollout}, {"pod", "t01-b01-p0001"}, {"phase", "upgrade"}, {"attempt", 1}}));

  const json list = call(*viewer_, "GET", "/api/v1/workflow-runs?limit=10").doc();
  bool seen = false;
  for (const auto& item : list["items"]) {
    if (item["id"] != run) {
      EXPECT_TRUE(item["rollout"].is_null()) << item.dump();
      continue;
    }
    seen = true;
    EXPECT_EQ(item["rollout"]["id"], rollout);
    EXPECT_EQ(item["pods"], json::array({"t01-b01-p0001"}));
  }
  EXPECT_TRUE(seen) << list.dump();
  // A run started by hand names no rollout.
  Reply manual = call(*admin_, "POST", "/api/v1/workflow-runs", json{{"workflow", "two-steps"}, {"hosts", {hosts_[1]}}}.dump());
  ASSERT_EQ(manual.status, 201) << manual.body;
  EXPECT_TRUE(manual.doc()["rollout"].is_null());
}

}  // namespace
}  // namespace kiln::apitest
