#include "orchestrator/kilnd/config.h"

#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace kiln::kilnd {
namespace {

Result<std::string> noFile(const std::string&) { return notFound("no file"); }

TEST(KilndConfigTest, FlagsBeatEnvironmentBeatFile) {
  auto file = [](const std::string&) -> Result<std::string> {
    return std::string("listen: 127.0.0.1:7000\nlog_level: debug\ndatabase_url: file-url\nthreads: 3\n");
  };
  auto c = parseConfig({"--config", "k.yaml", "--listen", "127.0.0.1:9000"},
                       {{"KILN_LOG_LEVEL", "warn"}, {"KILN_LISTEN", "127.0.0.1:8000"}}, file);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->listen, "127.0.0.1:9000");
  EXPECT_EQ(c->log_level, "warn");
  EXPECT_EQ(c->database_url, "file-url");
  EXPECT_EQ(c->threads, 3);
  EXPECT_EQ(c->port(), 9000);
}

TEST(KilndConfigTest, LogFormatIsTextOrJsonFromFlagEnvironmentOrFile) {
  auto c = parseConfig({"--database-url", "x"}, {}, noFile);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->log_format, "text");
  EXPECT_EQ(parseConfig({"--database-url", "x", "--log-format", "json"}, {}, noFile)->log_format, "json");
  EXPECT_EQ(parseConfig({"--database-url", "x"}, {{"KILN_LOG_FORMAT", "json"}}, noFile)->log_format, "json");
  auto file = [](const std::string&) -> Result<std::string> { return std::string("database_url: x\nlog_format: json\n"); };
  EXPECT_EQ(parseConfig({"--config", "k.yaml"}, {}, file)->log_format, "json");
  auto bad = parseConfig({"--database-url", "x", "--log-format", "logfmt"}, {}, noFile);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--log-format must be text or json"), std::string::npos) << bad.error().message;
}

TEST(KilndConfigTest, TrustedKeysFromFlagEnvironmentOrFile) {
  EXPECT_EQ(parseConfig({"--database-url", "x"}, {}, noFile)->trusted_keys, "");
  EXPECT_EQ(parseConfig({"--database-url", "x", "--trusted-keys", "/etc/kiln/keys.gpg"}, {}, noFile)->trusted_keys,
            "/etc/kiln/keys.gpg");
  EXPECT_EQ(parseConfig({"--database-url", "x"}, {{"KILN_TRUSTED_KEYS", "k.gpg"}}, noFile)->trusted_keys, "k.gpg");
  auto file = [](const std::string&) -> Result<std::string> {
    return std::string("database_url: x\ntrusted_keys: /etc/kiln/release-keys.gpg\n");
  };
  EXPECT_EQ(parseConfig({"--config", "k.yaml"}, {}, file)->trusted_keys, "/etc/kiln/release-keys.gpg");
}

TEST(KilndConfigTest, TheSlurmSchedulerFromFlagsOrAMapInTheFile) {
  auto c = parseConfig({"--database-url", "x"}, {}, noFile);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->scheduler, "none");
  auto flags = parseConfig({"--database-url", "x", "--scheduler", "slurm", "--slurm-on-jobs", "requeue"}, {}, noFile);
  ASSERT_TRUE(flags.ok()) << flags.error();
  EXPECT_EQ(flags->scheduler, "slurm");
  EXPECT_EQ(flags->slurm_on_jobs, "requeue");
  EXPECT_EQ(flags->slurm_node_name, "{host}");
  auto file = [](const std::string&) -> Result<std::string> {
    return std::string(
        "database_url: x\n"
        "scheduler:\n"
        "  kind: slurm\n"
        "  node_name: gpu-{pod}-{tray2}\n"
        "  interval: 5\n"
        "  bin_dir: /opt/slurm/bin\n"
        "  nodes:\n"
        "    prn-b01-p0001-h01: special01\n");
  };
  auto m = parseConfig({"--config", "k.yaml"}, {}, file);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->scheduler, "slurm");
  EXPECT_EQ(m->slurm_node_name, "gpu-{pod}-{tray2}");
  EXPECT_EQ(m->slurm_interval_s, 5);
  EXPECT_EQ(m->slurm_bin_dir, "/opt/slurm/bin");
  EXPECT_EQ(m->slurm_nodes.at("prn-b01-p0001-h01"), "special01");
  auto hookFile = [](const std::string&) -> Result<std::string> {
    return std::string("database_url: x\nscheduler: {kind: hook, hook: http://127.0.0.1:9/release}\n");
  };
  auto h = parseConfig({"--config", "k.yaml"}, {}, hookFile);
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ(h->scheduler, "hook");
  EXPECT_EQ(h->scheduler_hook, "http://127.0.0.1:9/release");

  auto typo = [](const std::string&) -> Result<std::string> { return std::string("database_url: x\nscheduler:\n  knd: slurm\n"); };
  auto bad = parseConfig({"--config", "k.yaml"}, {}, typo);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("k.yaml:3: unknown setting 'scheduler.knd'"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(parseConfig({"--database-url", "x", "--scheduler", "pbs"}, {}, noFile).ok());
  EXPECT_FALSE(parseConfig({"--database-url", "x", "--scheduler", "hook"}, {}, noFile).ok());
  EXPECT_FALSE(parseConfig({"--database-url", "x", "--scheduler", "slurm", "--scheduler-hook", "http://h/x"}, {}, noFile).ok());
  EXPECT_FALSE(parseConfig({"--database-url", "x", "--slurm-on-jobs", "kill"}, {}, noFile).ok());
}

TEST(KilndConfigTest, TargetsDefaultToFactsAndComeFromTheFileOrFlags) {
  auto c = parseConfig({"--database-url", "x"}, {}, noFile);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_DOUBLE_EQ(c->reliability_target, 2.0);
  EXPECT_EQ(c->pod_p90_target_s, 7200);
  auto file = [](const std::string&) -> Result<std::string> {
    return std::string("database_url: x\nreliability_target: 0.5\npod_p90_target: 10800\n");
  };
  auto f = parseConfig({"--config", "k.yaml"}, {}, file);
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_DOUBLE_EQ(f->reliability_target, 0.5);
  EXPECT_EQ(f->pod_p90_target_s, 10800);
  auto flag = parseConfig({"--config", "k.yaml", "--reliability-target", "3"}, {}, file);
  ASSERT_TRUE(flag.ok()) << flag.error();
  EXPECT_DOUBLE_EQ(flag->reliability_target, 3.0);
  for (const char* bad : {"0", "-1", "two", "nan", "1e9"}) {
    auto r = parseConfig({"--database-url", "x", "--reliability-target", bad}, {}, noFile);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("--reliability-target must be a number above 0"), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(parseConfig({"--database-url", "x", "--pod-p90-target", "2h"}, {}, noFile).ok());
}

TEST(KilndConfigTest, RefusesPlainHttpOffLoopback) {
  auto c = parseConfig({"--listen", "0.0.0.0:8080", "--database-url", "x"}, {}, noFile);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("--tls-cert"), std::string::npos);
  EXPECT_TRUE(parseConfig({"--listen=0.0.0.0:8080", "--database-url=x", "--allow-insecure-http"}, {}, noFile).ok());
  EXPECT_TRUE(parseConfig({"--listen=0.0.0.0:8443", "--database-url=x", "--tls-cert=c", "--tls-key=k"}, {}, noFile).ok());
}

// Issue 33: retention rules, how often the leader sweeps, where audit records go first.
TEST(KilndConfigTest, RetentionRulesAreCheckedAtStart) {
  auto c = parseConfig({"--database-url", "x"}, {}, noFile);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->retention, "");
  EXPECT_EQ(c->retention_interval_s, 600);
  EXPECT_EQ(c->audit_export_dir, "");
  auto file = [](const std::string&) -> Result<std::string> {
    return std::string(
        "database_url: x\nretention: pre_job_runs=3d,audit=400d\naudit_export_dir: /var/lib/kiln/audit\n");
  };
  c = parseConfig({"--config", "k.yaml", "--retention-interval", "0"}, {}, file);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->retention, "pre_job_runs=3d,audit=400d");
  EXPECT_EQ(c->retention_interval_s, 0);
  EXPECT_EQ(c->audit_export_dir, "/var/lib/kiln/audit");
  auto bad = parseConfig({"--database-url", "x", "--retention", "runs=90"}, {}, noFile);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("runs=90: expected a duration like 90d"), std::string::npos)
      << bad.error().message;
  EXPECT_FALSE(parseConfig({"--database-url", "x", "--retention-interval", "-1"}, {}, noFile).ok());
}

TEST(KilndConfigTest, TheOldestAgentVersionIsAVersionNumber) {
  EXPECT_EQ(parseConfig({"--database-url", "x"}, {}, noFile)->min_agent_version, "");
  EXPECT_EQ(parseConfig({"--database-url", "x", "--min-agent-version", "0.2.0"}, {}, noFile)->min_agent_version, "0.2.0");
  auto bad = parseConfig({"--database-url", "x", "--min-agent-version", "latest"}, {}, noFile);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--min-agent-version must start with a version number"), std::string::npos);
}

TEST(KilndConfigTest, ClearErrors) {
  EXPECT_NE(parseConfig({"--bogus"}, {}, noFile).error().message.find("unknown flag"), std::string::npos);
  EXPECT_NE(parseConfig({}, {}, noFile).error().message.find("--database-url"), std::string::npos);
  EXPECT_FALSE(parseConfig({"--database-url", "x", "--listen", "127.0.0.1:99999"}, {}, noFile).ok());
  EXPECT_FALSE(parseConfig({"--database-url", "x", "--threads", "0"}, {}, noFile).ok());
  EXPECT_FALSE(parseConfig({"--database-url", "x", "--controller-threads", "0"}, {}, noFile).ok());
  EXPECT_EQ(parseConfig({"--database-url", "x", "--controller-threads", "2"}, {}, noFile)->controller_threads, 2);
  EXPECT_FALSE(parseConfig({"--database-url", "x", "--tls-cert", "c"}, {}, noFile).ok());
  EXPECT_NE(parseConfig({"--database-url", "x", "--scheduler-hook", "127.0.0.1:8091/release"}, {}, noFile)
                .error()
                .message.find("http:// or https://"),
            std::string::npos);
  EXPECT_TRUE(parseConfig({"--database-url", "x", "--scheduler-hook", "http://127.0.0.1:8091/release"}, {}, noFile).ok());
  // A command: an absolute path to an executable file.
  EXPECT_TRUE(parseConfig({"--database-url", "x", "--scheduler-hook", "/bin/true"}, {}, noFile).ok());
  char plain[] = "/tmp/kiln-config-test.XXXXXX";  // a file without execute permission
  ::close(::mkstemp(plain));
  for (const std::string& bad : std::vector<std::string>{"bin/true", "/nonexistent/release-pod", "/bin", plain})
    EXPECT_NE(parseConfig({"--database-url", "x", "--scheduler-hook", bad}, {}, noFile).error().message.find("absolute path of an executable"),
              std::string::npos)
        << bad;
  ::unlink(plain);
  auto bad_file = [](const std::string&) -> Result<std::string> { return std::string("listen: [1\n"); };
  auto e = parseConfig({"--config", "k.yaml", "--database-url", "x"}, {}, bad_file);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("k.yaml:"), std::string::npos);
  auto unknown = [](const std::string&) -> Result<std::string> { return std::string("database_url: x\nlisten_port: 1\n"); };
  EXPECT_NE(parseConfig({"--config", "k.yaml"}, {}, unknown).error().message.find("k.yaml:2: unknown setting"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::kilnd
