#include "agents/sim/fleet/host_store.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace kiln::vfleet {
namespace {

TEST(DirHostStoreTest, KeepsTokensPrivateAndStatesAcrossInstances) {
  char tmpl[] = "/tmp/vfleet-store-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::filesystem::path dir = tmpl;
  {
    DirHostStore store(dir);
    EXPECT_FALSE(store.loadToken("h1").has_value());
    ASSERT_TRUE(store.saveToken("h1", "kiln_1_secret").ok());
    auto state = sim::makeDefaultState("h1", sim::Platform::kClemente);
    state.versions["driver"] = "999.1";
    ASSERT_TRUE(store.saveState(state).ok());
  }
  DirHostStore again(dir);
  EXPECT_EQ(again.loadToken("h1"), "kiln_1_secret");
  auto state = again.loadState("h1");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->versions["driver"], "999.1");
  EXPECT_EQ(state->platform, sim::Platform::kClemente);
  struct stat st {};
  ASSERT_EQ(::stat((dir / "tokens" / "h1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(again.loadState("h2").has_value());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::vfleet
