#include "agents/agent/cli.h"

#include <gtest/gtest.h>

#include <map>

#include "agents/agent/host_probe.h"
#include "agents/agent/protocol.h"

namespace kiln::agent {
namespace {

using nlohmann::json;

Result<RunOptions> parse(std::vector<std::string> args,
                         std::map<std::string, std::string> env = {}) {
  return parseRunOptions(
      args,
      [env](const std::string& name) -> std::optional<std::string> {
        auto it = env.find(name);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
      },
      "myhost");
}

TEST(RunOptionsTest, ReadsEveryFlag) {
  auto o = parse({"--url", "https://kilnd:8443/", "--host", "h1", "--state-dir", "/var/lib/k",
                  "--enroll-token-file", "/etc/e", "--ca-file", "/etc/ca", "--inventory-command",
                  "site-inv --json", "--boot-id-file=/tmp/b", "--poll-wait", "10", "--env-allow",
                  "CUDA_*,NCCL_DEBUG", "--env-allow", "FOO", "--path-prepend", "/a:/b",
                  "--log-level", "debug", "--stop-grace", "5", "--live-output-interval", "3"});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->url, "https://kilnd:8443");
  EXPECT_EQ(o->host, "h1");
  EXPECT_EQ(o->state_dir, "/var/lib/k");
  EXPECT_EQ(o->enroll_token_file, "/etc/e");
  EXPECT_EQ(o->ca_file, "/etc/ca");
  EXPECT_EQ(splitCommand(o->inventory_command), (std::vector<std::string>{"site-inv", "--json"}));
  EXPECT_EQ(o->boot_id_file, "/tmp/b");
  EXPECT_EQ(o->poll_wait_s, 10);
  EXPECT_EQ(o->env_allow, (std::vector<std::string>{"CUDA_*", "NCCL_DEBUG", "FOO"}));
  EXPECT_EQ(o->path_prepend, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(o->log_level, "debug");
  EXPECT_EQ(o->stop_grace_s, 5);
  EXPECT_EQ(o->live_output_interval_s, 3);
}

TEST(RunOptionsTest, ReadsTheArtifactFlags) {
  const std::vector<std::string> base = {"--url", "http://k", "--state-dir", "/s"};
  auto d = parse(base);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->artifact_cache_max, 64ull << 30);
  EXPECT_EQ(d->artifact_rate_limit, 0u);
  std::vector<std::string> args = base;
  for (const char* a : {"--artifact-cache", "/var/cache/kiln", "--artifact-cache-max", "200G", "--artifact-rate-limit",
                        "100M", "--artifact-ca-bundle", "/etc/ssl/site.pem", "--artifact-mirror",
                        "https://artifacts.example/=http://mirror-b01/", "--artifact-mirror",
                        "https://nvidia.example/=http://mirror-b01/nv/", "--trusted-keys", "/etc/kiln/keys.gpg"})
    args.push_back(a);
  auto o = parse(args, {{"KILN_AGENT_ARTIFACT_RATE_LIMIT", "1k"}});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->artifact_cache, "/var/cache/kiln");
  EXPECT_EQ(o->artifact_cache_max, 200ull << 30);
  EXPECT_EQ(o->artifact_rate_limit, 100ull << 20);
  EXPECT_EQ(o->artifact_ca_bundle, "/etc/ssl/site.pem");
  ASSERT_EQ(o->artifact_mirrors.size(), 2u);
  EXPECT_EQ(o->artifact_mirrors[1], (std::pair<std::string, std::string>{"https://nvidia.example/", "http://mirror-b01/nv/"}));
  EXPECT_EQ(o->trusted_keys, "/etc/kiln/keys.gpg");
  auto env = parse(base, {{"KILN_AGENT_ARTIFACT_RATE_LIMIT", "1k"}});
  EXPECT_EQ(env->artifact_rate_limit, 1024u);

  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--artifact-cache-max", "lots"}, {"--artifact-cache-max", "10k"},
        {"--artifact-rate-limit", "-5"}, {"--artifact-rate-limit", "5X"}, {"--artifact-mirror", "http://a/"},
        {"--artifact-mirror", "ftp://a/=http://b/"}}) {
    std::vector<std::string> all = base;
    all.insert(all.end(), bad.begin(), bad.end());
    auto r = parse(all);
    ASSERT_FALSE(r.ok()) << bad[0] << " " << bad[1];
    EXPECT_NE(r.error().message.find(bad[0]), std::string::npos) << r.error().message;
  }
}

TEST(RunOptionsTest, AClientCertificateComesWithItsKey) {
  auto both = parse({"--url", "https://k", "--state-dir", "/s", "--client-cert", "/etc/kiln/host.pem", "--client-key",
                     "/etc/kiln/host.key"});
  ASSERT_TRUE(both.ok()) << both.error();
  EXPECT_EQ(both->client_cert, "/etc/kiln/host.pem");
  EXPECT_EQ(both->client_key, "/etc/kiln/host.key");
  auto half = parse({"--url", "https://k", "--state-dir", "/s", "--client-cert", "/etc/kiln/host.pem"});
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.error().message.find("--client-cert and --client-key go together"), std::string::npos);
}

TEST(RunOptionsTest, TakesDefaultsFromTheEnvironmentAndFlagsWin) {
  auto o = parse({"--poll-wait", "3"}, {{"KILN_AGENT_URL", "http://k:8080"},
                                        {"KILN_AGENT_STATE_DIR", "/s"},
                                        {"KILN_AGENT_POLL_WAIT", "40"},
                                        {"KILN_AGENT_ENV_ALLOW", "A,B"}});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->url, "http://k:8080");
  EXPECT_EQ(o->state_dir, "/s");
  EXPECT_EQ(o->poll_wait_s, 3);
  EXPECT_EQ(o->host, "myhost");
  EXPECT_EQ(o->inventory_command, "kiln-inventory");
  EXPECT_EQ(o->env_allow, (std::vector<std::string>{"A", "B"}));
}

TEST(RunOptionsTest, RefusesBadUsageWithAClearMessage) {
  auto missing_url = parse({"--state-dir", "/s"});
  ASSERT_FALSE(missing_url.ok());
  EXPECT_NE(missing_url.error().message.find("--url"), std::string::npos);
  auto bad_wait = parse({"--url", "http://k", "--state-dir", "/s", "--poll-wait", "61"});
  ASSERT_FALSE(bad_wait.ok());
  EXPECT_NE(bad_wait.error().message.find("0 to 60"), std::string::npos);
  EXPECT_FALSE(parse({"--url", "k:8080", "--state-dir", "/s"}).ok());
  EXPECT_FALSE(parse({"--url", "http://k", "--state-dir", "/s", "--bogus", "1"}).ok());
  EXPECT_FALSE(parse({"--url", "http://k", "--state-dir"}).ok());
  EXPECT_FALSE(parse({"--url", "http://k", "--state-dir", "/s", "--host", "a/b"}).ok());
  EXPECT_FALSE(parse({"--url", "http://k", "--state-dir", "/s", "--log-level", "loud"}).ok());
}

TEST(ProtocolTest, AssignmentTakesDefaultsAndRefusesWhatCannotRun) {
  auto a = assignmentFromJson({{"id", "a-1"}, {"argv", {"nvidia-smi", "-q"}}});
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->type, "run");
  EXPECT_EQ(a->timeout_ms, 60000);
  EXPECT_EQ(a->output_cap, 65536u);
  EXPECT_EQ(toJson(*a)["argv"], json::array({"nvidia-smi", "-q"}));
  EXPECT_FALSE(assignmentFromJson({{"argv", {"x"}}}).ok());
  EXPECT_FALSE(assignmentFromJson({{"id", "a"}, {"argv", json::array()}}).ok());
  EXPECT_FALSE(assignmentFromJson({{"id", "a"}, {"argv", {"x"}}, {"type", "shell"}}).ok());
  EXPECT_FALSE(assignmentFromJson({{"id", "a"}, {"argv", "nvidia-smi -q"}}).ok());
  EXPECT_FALSE(assignmentFromJson({{"id", "a"}, {"argv", {"x"}}, {"timeout_ms", -1}}).ok());
}

TEST(ProtocolTest, PathsArePercentEncoded) {
  EXPECT_EQ(workPath("h 1", 25, "b/1", "a&1"),
            "/api/v1/agents/h%201/work?wait=25&boot_id=b%2F1&running=a%261");
  EXPECT_EQ(workPath("h1", 0, "", ""), "/api/v1/agents/h1/work?wait=0");
  EXPECT_EQ(resultPath("a-1"), "/api/v1/assignments/a-1/result");
}

TEST(ProtocolTest, PollAnswerReadsAssignmentAndCancels) {
  auto p = pollAnswerFromBody(R"({"cancel": ["a-1", 3], "assignment": {"id": "a-2"}})");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->cancel, (std::vector<std::string>{"a-1"}));
  ASSERT_TRUE(p->assignment.has_value());
  EXPECT_FALSE(pollAnswerFromBody("nope").ok());
}

}  // namespace
}  // namespace kiln::agent
