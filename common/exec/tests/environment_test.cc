#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/exec/process_runner.h"

namespace kiln::exec {
namespace {

using Env = std::map<std::string, std::string>;

class EnvBlock {
 public:
  explicit EnvBlock(std::vector<std::string> entries) : entries_(std::move(entries)) {
    for (std::string& e : entries_) pointers_.push_back(e.data());
    pointers_.push_back(nullptr);
  }
  char** get() { return pointers_.data(); }

 private:
  std::vector<std::string> entries_;
  std::vector<char*> pointers_;
};

TEST(AllowListedEnvironmentTest, KeepsOnlyExactNamesAndPrefixes) {
  EnvBlock parent({"PATH=/usr/bin:/bin", "PATHX=no", "HOME=/root", "SECRET_TOKEN=abc",
                   "KILN_HWSIM_DIR=/var/sim", "KILN_HWSIM_SEED=7", "KILN_OTHER=no",
                   "LD_PRELOAD=/evil.so"});
  Env env = allowListedEnvironment(parent.get(), defaultEnvAllowList(), {});
  EXPECT_EQ(env, (Env{{"PATH", "/usr/bin:/bin"},
                      {"HOME", "/root"},
                      {"KILN_HWSIM_DIR", "/var/sim"},
                      {"KILN_HWSIM_SEED", "7"}}));
}

TEST(AllowListedEnvironmentTest, ExtraOverridesAndAddsVariables) {
  EnvBlock parent({"PATH=/usr/bin", "TZ=UTC"});
  Env env = allowListedEnvironment(parent.get(), defaultEnvAllowList(),
                                   {{"PATH", "/opt/kiln/bin"}, {"KILN_STEP_ID", "42"}});
  EXPECT_EQ(env, (Env{{"PATH", "/opt/kiln/bin"}, {"TZ", "UTC"}, {"KILN_STEP_ID", "42"}}));
}

TEST(AllowListedEnvironmentTest, KeepsValuesWithEqualsSignsAndEmptyValues) {
  EnvBlock parent({"LANG=", "HOME=/a=b", "=weird", "NOEQUALS"});
  Env env = allowListedEnvironment(parent.get(), {"LANG", "HOME", "NOEQUALS"}, {});
  EXPECT_EQ(env, (Env{{"LANG", ""}, {"HOME", "/a=b"}}));
}

TEST(AllowListedEnvironmentTest, FirstOccurrenceOfANameWins) {
  EnvBlock parent({"TZ=UTC", "TZ=CET"});
  EXPECT_EQ(allowListedEnvironment(parent.get(), {"TZ"}, {}), (Env{{"TZ", "UTC"}}));
}

TEST(AllowListedEnvironmentTest, NullParentGivesOnlyExtra) {
  EXPECT_EQ(allowListedEnvironment(nullptr, defaultEnvAllowList(), {{"A", "1"}}),
            (Env{{"A", "1"}}));
}

TEST(AllowListedEnvironmentTest, LoneStarAllowsEverything) {
  EnvBlock parent({"A=1", "B=2"});
  EXPECT_EQ(allowListedEnvironment(parent.get(), {"*"}, {}), (Env{{"A", "1"}, {"B", "2"}}));
}

TEST(DefaultEnvAllowListTest, IsTheDocumentedList) {
  EXPECT_EQ(defaultEnvAllowList(),
            (std::vector<std::string>{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "KILN_HWSIM_*"}));
}

}  // namespace
}  // namespace kiln::exec
