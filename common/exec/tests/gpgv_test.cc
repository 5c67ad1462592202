// gpgvCheck against the real gpgv, with a key the real gpg makes (tests/support/signing_key.h).
#include "common/exec/gpgv.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/signing_key.h"

namespace kiln::exec {
namespace {

class GpgvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kiln-gpgv-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    key_ = std::make_unique<kiln::testing::SigningKey>(dir_ + "/a");
    other_ = std::make_unique<kiln::testing::SigningKey>(dir_ + "/b", "Someone Else <else@kiln.test>");
    runner_ = makeBoostProcessRunner();
  }
  void TearDown() override {
    key_.reset();
    other_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
  std::unique_ptr<kiln::testing::SigningKey> key_, other_;
  std::unique_ptr<ProcessRunner> runner_;
};

TEST_F(GpgvTest, AcceptsTheTrustedKeysSignatureAndNothingElse) {
  const std::string sums = kiln::testing::SigningKey::sumsLine("firmware", "fw.bin");
  auto check = gpgvCheck(*runner_, key_->keyring(), dir_);
  EXPECT_TRUE(check(sums, key_->sign(sums)).ok());

  auto tampered = check(sums + "\n", key_->sign(sums));
  ASSERT_FALSE(tampered.ok());
  EXPECT_NE(tampered.error().message.find("BAD signature"), std::string::npos) << tampered.error().message;

  auto stranger = check(sums, other_->sign(sums));
  ASSERT_FALSE(stranger.ok());
  EXPECT_NE(stranger.error().message.find("No public key"), std::string::npos) << stranger.error().message;

  auto garbage = check(sums, "not a signature");
  ASSERT_FALSE(garbage.ok());
  EXPECT_FALSE(garbage.error().message.empty());

  // Its scratch directories are gone.
  int left = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_))
    if (e.path().filename().string().rfind("kiln-gpgv.", 0) == 0) ++left;
  EXPECT_EQ(left, 0);
}

TEST_F(GpgvTest, AMissingKeyringIsAnErrorNotAPass) {
  const std::string sums = kiln::testing::SigningKey::sumsLine("firmware", "fw.bin");
  auto check = gpgvCheck(*runner_, dir_ + "/no-such-keyring.gpg", dir_);
  EXPECT_FALSE(check(sums, key_->sign(sums)).ok());
}

}  // namespace
}  // namespace kiln::exec
