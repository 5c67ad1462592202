// Signed bundles against a real kilnd (issue 31): kilnd started with --trusted-keys (a key the
// real gpg made) stores a bundle only when its checksums list every component and its signature
// verifies with gpgv against those keys; any other bundle is a 422 saying why, and nothing is
// stored. Without keys an unsigned bundle is stored as before; a missing keys file stops kilnd.

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "tests/api/api_fixture.h"
#include "tests/support/signing_key.h"

namespace kiln::apitest {
namespace {

// What the bundle's two files hold; their sha256 are what the bundle and its checksums name.
const std::string kTrayFile = "tray package bytes", kNicFile = "connectx image bytes";

std::string sha256Of(const std::string& content) {
  return testing::SigningKey::sumsLine(content, "x").substr(0, 64);
}

// A catalina bundle of a tray package and a NIC image, unsigned.
json twoComponentBundle(const std::string& version) {
  return {{"name", "gb200-fw"},
          {"version", version},
          {"platforms", json::array({"catalina"})},
          {"components", json::array({json{{"kind", "hmc_bundle"},
                                           {"version", "1.4.0"},
                                           {"artifact", "https://firmware.example/gb200/tray.fwpkg"},
                                           {"sha256", sha256Of(kTrayFile)}},
                                      json{{"kind", "nic"},
                                           {"version", "28.44.1036"},
                                           {"artifact", "/opt/kiln/fw/cx7.bin"},
                                           {"sha256", sha256Of(kNicFile)}}})}};
}

// A fresh directory for the test's keys and files, removed after.
std::string freshDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kiln-signing-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
  return pattern;
}

class SignedBundlesApiTest : public ApiTest {
 protected:
  std::vector<std::string> extraKilndArgs() const override {
    return {"--workflows-dir", KILN_WORKFLOWS_DIR, "--trusted-keys", key_->keyring()};
  }
  void SetUp() override {
    dir_ = freshDir();
    key_ = std::make_unique<testing::SigningKey>(dir_ + "/trusted");
    ApiTest::SetUp();
    if (HasFatalFailure()) return;
    op_ = client(createToken("operator", "sre"));
  }
  void TearDown() override {
    op_.reset();
    ApiTest::TearDown();
    other_.reset();
    key_.reset();
    std::filesystem::remove_all(dir_);
  }

  // The bundle with checksums of both files and `signer`'s signature of them.
  json signedBundle(const std::string& version, const testing::SigningKey& signer) {
    json b = twoComponentBundle(version);
    const std::string sums =
        testing::SigningKey::sumsLine(kTrayFile, "tray.fwpkg") + testing::SigningKey::sumsLine(kNicFile, "cx7.bin");
    b["checksums"] = sums;
    b["signature"] = signer.sign(sums);
    return b;
  }
  std::size_t bundlesStored() {
    Reply r = call(*op_, "GET", "/api/v1/bundles");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.doc().is_object() ? r.doc()["items"].size() : 0;
  }
  // A 422 invalid_content whose message holds `words`.
  static ::testing::AssertionResult refusedSaying(const Reply& r, const std::string& words) {
    auto e = isError(r, 422, "invalid_content");
    if (!e) return e;
    const std::string message = r.doc()["error"]["message"].get<std::string>();
    if (message.find(words) == std::string::npos)
      return ::testing::AssertionFailure() << "message '" << message << "' does not say '" << words << "'";
    return ::testing::AssertionSuccess();
  }

  std::string dir_;
  std::unique_ptr<testing::SigningKey> key_, other_;
  std::unique_ptr<http::Client> op_;
};

TEST_F(SignedBundlesApiTest, AnUnsignedBundleIsRefusedAndNothingIsStored) {
  Reply r = call(*op_, "POST", "/api/v1/bundles", twoComponentBundle("1").dump());
  EXPECT_TRUE(refusedSaying(r, "not signed")) << r.body;
  EXPECT_TRUE(refusedSaying(r, "bundle gb200-fw@1")) << r.body;
  EXPECT_EQ(bundlesStored(), 0u);
}

TEST_F(SignedBundlesApiTest, ABundleSignedByAnotherKeyIsRefusedAndNothingIsStored) {
  other_ = std::make_unique<testing::SigningKey>(dir_ + "/other", "Someone Else <else@kiln.test>");
  Reply r = call(*op_, "POST", "/api/v1/bundles", signedBundle("1", *other_).dump());
  EXPECT_TRUE(refusedSaying(r, "does not verify")) << r.body;
  // A signature of other text (the checksums changed after signing) does not verify either.
  json tampered = signedBundle("1", *key_);
  tampered["checksums"] = tampered["checksums"].get<std::string>() + sha256Of("more") + "  more.bin\n";
  EXPECT_TRUE(refusedSaying(call(*op_, "POST", "/api/v1/bundles", tampered.dump()), "does not verify"));
  EXPECT_EQ(bundlesStored(), 0u);
}

TEST_F(SignedBundlesApiTest, ASignedBundleWhoseChecksumsMissAComponentIsRefused) {
  json b = twoComponentBundle("1");
  const std::string sums = testing::SigningKey::sumsLine(kTrayFile, "tray.fwpkg");  // no NIC image
  b["checksums"] = sums;
  b["signature"] = key_->sign(sums);
  Reply r = call(*op_, "POST", "/api/v1/bundles", b.dump());
  EXPECT_TRUE(refusedSaying(r, "sha256 " + sha256Of(kNicFile) + " is not in the signed checksums")) << r.body;
  // A signature without checksums is refused too.
  json half = twoComponentBundle("1");
  half["signature"] = key_->sign(sums);
  EXPECT_TRUE(refusedSaying(call(*op_, "POST", "/api/v1/bundles", half.dump()), "a signature without checksums"));
  EXPECT_EQ(bundlesStored(), 0u);
}

TEST_F(SignedBundlesApiTest, AGoodSignedBundleIsStoredWithItsChecksumsAndSignature) {
  const json b = signedBundle("1", *key_);
  Reply r = call(*op_, "POST", "/api/v1/bundles", b.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.doc()["checksums"], b["checksums"]);
  Reply got = call(*op_, "GET", "/api/v1/bundles/gb200-fw@1");
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.doc()["checksums"], b["checksums"]);
  EXPECT_EQ(got.doc()["signature"], b["signature"]);
  EXPECT_EQ(got.doc()["components"][1]["artifact"], "/opt/kiln/fw/cx7.bin");
  EXPECT_EQ(bundlesStored(), 1u);
  // The same again is unchanged (its signature checked again).
  Reply again = call(*op_, "POST", "/api/v1/bundles", b.dump());
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.doc()["outcome"], "unchanged") << again.body;
}

// kilnd without --trusted-keys: signatures are not checked, an unsigned bundle is stored.
class UnkeyedBundlesApiTest : public ApiTest {
 protected:
  std::vector<std::string> extraKilndArgs() const override { return {"--workflows-dir", KILN_WORKFLOWS_DIR}; }
};

TEST_F(UnkeyedBundlesApiTest, AnUnsignedBundleIsStoredWithoutChecksumsOrSignature) {
  Reply r = call(*admin_, "POST", "/api/v1/bundles", twoComponentBundle("1").dump());
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_FALSE(r.doc().contains("checksums")) << r.body;
  EXPECT_FALSE(r.doc().contains("signature")) << r.body;
  // Checksums that miss a component are refused even without keys: they vouch for nothing.
  json b = twoComponentBundle("2");
  b["checksums"] = sha256Of("other") + "  other.bin\n";
  b["signature"] = "-----BEGIN PGP SIGNATURE-----\nnot checked here\n-----END PGP SIGNATURE-----\n";
  EXPECT_TRUE(isError(call(*admin_, "POST", "/api/v1/bundles", b.dump()), 422, "invalid_content"));
}

TEST(TrustedKeysStartTest, KilndDoesNotStartWhenTheKeysFileCannotBeRead) {
  testing::TestDatabase db;
  testing::KilndProcess kilnd(testing::KilndOptions{
      .database_url = db.url(), .extra_args = {"--trusted-keys", "/nonexistent/kiln-trusted-keys.gpg"}});
  auto started = kilnd.start();
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.error().message.find("--trusted-keys"), std::string::npos) << started.error().message;
}

}  // namespace
}  // namespace kiln::apitest
