// common/artifact_trust.h: the one rule for which artifacts are trusted, with a scripted verifier.
#include "common/artifact_trust.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

const std::string kA(64, 'a'), kB(64, 'b'), kC(64, 'c');
const std::string kSums = kA + "  a.bin\n" + kB + "  b.bin\n";

struct Verifier {
  int calls = 0;
  bool good = true;
  SignatureCheck check() {
    return [this](const std::string& data, const std::string& sig) -> Status {
      ++calls;
      EXPECT_EQ(data, kSums);
      EXPECT_EQ(sig, "SIG");
      if (good) return okStatus();
      return invalidContent("gpgv: BAD signature from \"x\"");
    };
  }
};

TEST(ArtifactTrustTest, WithoutKeysUnsignedPassesAndASignedListMustStillListEveryHash) {
  EXPECT_TRUE(checkArtifactTrust({}, {kA}, {}, "bundle x").ok());
  EXPECT_TRUE(checkArtifactTrust({kSums, "SIG"}, {kA, kB}, {}, "bundle x").ok());
  auto missing = checkArtifactTrust({kSums, "SIG"}, {kA, kC}, {}, "bundle x");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidContent);
  EXPECT_NE(missing.error().message.find(kC + " is not in the signed checksums"), std::string::npos);
}

TEST(ArtifactTrustTest, WithKeysEverythingMustBeSignedAndVerify) {
  Verifier v;
  EXPECT_TRUE(checkArtifactTrust({kSums, "SIG"}, {kA}, v.check(), "bundle x").ok());
  EXPECT_EQ(v.calls, 1);
  auto unsigned_ = checkArtifactTrust({}, {kA}, v.check(), "bundle x");
  ASSERT_FALSE(unsigned_.ok());
  EXPECT_NE(unsigned_.error().message.find("not signed, and this site requires signed artifacts"), std::string::npos);
  v.good = false;
  auto bad = checkArtifactTrust({kSums, "SIG"}, {kA}, v.check(), "bundle x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("does not verify against the trusted keys: gpgv: BAD signature"),
            std::string::npos);
  // A hash the list does not hold is refused before gpgv runs.
  const int calls = v.calls;
  EXPECT_FALSE(checkArtifactTrust({kSums, "SIG"}, {kC}, v.check(), "bundle x").ok());
  EXPECT_EQ(v.calls, calls);
}

TEST(ArtifactTrustTest, HalfASignatureIsRefused) {
  for (const SignedChecksums& half : {SignedChecksums{kSums, ""}, SignedChecksums{"", "SIG"}}) {
    auto r = checkArtifactTrust(half, {kA}, {}, "bundle x");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("bundle x: "), std::string::npos);
  }
  auto bad_list = checkArtifactTrust({"nonsense", "SIG"}, {kA}, {}, "bundle x");
  ASSERT_FALSE(bad_list.ok());
  EXPECT_NE(bad_list.error().message.find("checksums line 1"), std::string::npos) << bad_list.error().message;
}

}  // namespace
}  // namespace kiln
