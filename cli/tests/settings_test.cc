#include "cli/settings.h"

#include <gtest/gtest.h>

#include "cli/tests/test_support.h"

namespace kiln::cli {
namespace {

using testing::FakeSystem;

constexpr const char* kHomeConfig = "/home/sre/.config/kiln/kilnctl.yaml";

TEST(ConnectionSettingsTest, DefaultsWhenNothingIsGiven) {
  FakeSystem fs;
  fs.env["HOME"] = "/home/sre";
  auto s = resolveConnection({}, fs.system());
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->url, "http://127.0.0.1:8080");
  EXPECT_EQ(s->token, "");
  EXPECT_EQ(s->ca_file, "");
  EXPECT_EQ(s->timeout, std::chrono::milliseconds(120000));
}

TEST(ConnectionSettingsTest, FlagsBeatEnvironmentBeatConfigFile) {
  FakeSystem fs;
  fs.env["HOME"] = "/home/sre";
  fs.files[kHomeConfig] = "url: http://file:1\ntoken: file-token\nca_file: /etc/file-ca.pem\n";

  auto file_only = resolveConnection({}, fs.system());
  ASSERT_TRUE(file_only.ok()) << file_only.error();
  EXPECT_EQ(file_only->url, "http://file:1");
  EXPECT_EQ(file_only->token, "file-token");
  EXPECT_EQ(file_only->ca_file, "/etc/file-ca.pem");

  fs.env["KILN_URL"] = "http://env:2";
  fs.env["KILN_TOKEN"] = "env-token";
  auto env = resolveConnection({}, fs.system());
  ASSERT_TRUE(env.ok()) << env.error();
  EXPECT_EQ(env->url, "http://env:2");
  EXPECT_EQ(env->token, "env-token");
  EXPECT_EQ(env->ca_file, "/etc/file-ca.pem");

  GlobalOptions flags;
  flags.url = "https://flag:3/";
  flags.ca_file = "/flag-ca.pem";
  fs.env["KILN_CA_FILE"] = "/env-ca.pem";
  auto all = resolveConnection(flags, fs.system());
  ASSERT_TRUE(all.ok()) << all.error();
  EXPECT_EQ(all->url, "https://flag:3");  // trailing slash dropped
  EXPECT_EQ(all->token, "env-token");
  EXPECT_EQ(all->ca_file, "/flag-ca.pem");
}

TEST(ConnectionSettingsTest, TokenFileAtAHigherLevelBeatsATokenBelow) {
  FakeSystem fs;
  fs.files["/run/admin.token"] = "  s3cret\n";
  fs.env["KILN_TOKEN"] = "env-token";
  GlobalOptions flags;
  flags.token_file = "/run/admin.token";
  auto s = resolveConnection(flags, fs.system());
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->token, "s3cret");

  fs.env.erase("KILN_TOKEN");
  fs.env["KILN_TOKEN_FILE"] = "/run/admin.token";
  fs.files["/cfg/kilnctl.yaml"] = "token: file-token\n";
  GlobalOptions with_config;
  with_config.config = "/cfg/kilnctl.yaml";
  auto env_file = resolveConnection(with_config, fs.system());
  ASSERT_TRUE(env_file.ok()) << env_file.error();
  EXPECT_EQ(env_file->token, "s3cret");
}

TEST(ConnectionSettingsTest, ConfigTokenFileIsRelativeToTheConfigFolder) {
  FakeSystem fs;
  fs.env["KILN_CONFIG"] = "/etc/kiln/kilnctl.yaml";
  fs.files["/etc/kiln/kilnctl.yaml"] = "token_file: admin.token\n";
  fs.files["/etc/kiln/admin.token"] = "abc\n";
  auto s = resolveConnection({}, fs.system());
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->token, "abc");
}

TEST(ConnectionSettingsTest, ExplicitConfigBeatsKilnConfigAndHomeDefault) {
  FakeSystem fs;
  fs.env["HOME"] = "/home/sre";
  fs.files[kHomeConfig] = "url: http://home:1\n";
  fs.env["KILN_CONFIG"] = "/env.yaml";
  fs.files["/env.yaml"] = "url: http://envconfig:1\n";
  fs.files["/flag.yaml"] = "url: http://flagconfig:1\n";
  EXPECT_EQ(resolveConnection({}, fs.system())->url, "http://envconfig:1");
  GlobalOptions flags;
  flags.config = "/flag.yaml";
  EXPECT_EQ(resolveConnection(flags, fs.system())->url, "http://flagconfig:1");
}

TEST(ConnectionSettingsTest, TimeoutFlagInSeconds) {
  FakeSystem fs;
  GlobalOptions flags;
  flags.timeout_seconds = 2.5;
  EXPECT_EQ(resolveConnection(flags, fs.system())->timeout, std::chrono::milliseconds(2500));
}

TEST(ConnectionSettingsTest, RejectsBadConfigAndTokenFiles) {
  struct Case {
    std::string config;
    std::string message;
  } cases[] = {
      {"url: [1\n", "YAML error"},
      {"- a\n- b\n", "expected a mapping"},
      {"server: http://x\n", "unknown key 'server'"},
      {"url: 8080\n", "url must be a string"},
      {"token_file: empty.token\n", "token file /c/empty.token is empty"},
      {"token_file: /nowhere\n", "token file: cannot read /nowhere"},
      {"url: kiln:8080\n", "must start with http:// or https://"},
  };
  for (const auto& c : cases) {
    FakeSystem fs;
    fs.files["/c/kilnctl.yaml"] = c.config;
    fs.files["/c/empty.token"] = "\n";
    GlobalOptions flags;
    flags.config = "/c/kilnctl.yaml";
    auto s = resolveConnection(flags, fs.system());
    ASSERT_FALSE(s.ok()) << c.config;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message.find(c.message), std::string::npos) << s.error().message;
  }
}

TEST(ConnectionSettingsTest, EmptyConfigFileAndEmptyVariablesAreIgnored) {
  FakeSystem fs;
  fs.env["HOME"] = "/home/sre";
  fs.env["KILN_URL"] = "";
  fs.files[kHomeConfig] = "";
  auto s = resolveConnection({}, fs.system());
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->url, "http://127.0.0.1:8080");
}

}  // namespace
}  // namespace kiln::cli
