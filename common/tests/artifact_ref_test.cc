// common/artifact_ref.h: the artifact value a workflow parameter holds, the placeholder, the
// checksum list a signature covers.
#include "common/artifact_ref.h"

#include <gtest/gtest.h>

#include <vector>

namespace kiln {
namespace {

const std::string kHash = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08";
const std::string kLower = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

TEST(ArtifactRefTest, ReadsUrlsAndLocalPathsWithTheirHash) {
  auto a = parseArtifactValue("https://mirror.b01/fw/nvfw_GB200.fwpkg#sha256=" + kHash);
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->location, "https://mirror.b01/fw/nvfw_GB200.fwpkg");
  EXPECT_EQ(a->sha256, kLower);
  EXPECT_EQ(artifactValue(*a), "https://mirror.b01/fw/nvfw_GB200.fwpkg#sha256=" + kLower);
  auto local = parseArtifactValue("/srv/fw/x.bin#sha256=" + kLower);
  ASSERT_TRUE(local.ok()) << local.error();
  EXPECT_EQ(local->location, "/srv/fw/x.bin");
  EXPECT_TRUE(parseArtifactValue("http://10.0.0.1:8080/a/b.bin?x=1#sha256=" + kLower).ok());
}

TEST(ArtifactRefTest, RefusesWhatIsNotALocationWithAHashAndSaysWhatWasExpected) {
  for (const std::string& bad : std::vector<std::string>{
           "https://m/x.fwpkg", "https://m/x.fwpkg#sha256=abc", "https://m/x.fwpkg#sha256=" + kLower + "0",
           "relative/x.bin#sha256=" + kLower, "ftp://m/x#sha256=" + kLower, "https://#sha256=" + kLower,
           "https://m/#sha256=" + kLower, "https://m#sha256=" + kLower, "/srv/fw/#sha256=" + kLower,
           "/srv/a b#sha256=" + kLower, "/srv/a\nb#sha256=" + kLower, "#sha256=" + kLower,
           "/srv/a#b#sha256=" + kLower}) {
    auto r = parseArtifactValue(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(r.error().message.find("expected LOCATION#sha256=HEX"), std::string::npos) << r.error().message;
  }
}

TEST(ArtifactRefTest, PlaceholderAndFileName) {
  EXPECT_EQ(artifactPlaceholder(kHash), "kiln-artifact:sha256:" + kLower);
  EXPECT_EQ(artifactPlaceholder(kHash).rfind(kArtifactPlaceholderPrefix, 0), 0u);
  EXPECT_EQ(artifactFileName("https://m/fw/nvfw_GB200_prod-signed.fwpkg"), "nvfw_GB200_prod-signed.fwpkg");
  EXPECT_EQ(artifactFileName("https://m/fw/x.bin?token=1"), "x.bin");
  EXPECT_EQ(artifactFileName("/srv/fw/.."), "artifact");
  EXPECT_EQ(artifactFileName("https://m/fw/a%20b.bin"), "a_20b.bin");
}

TEST(ArtifactRefTest, ReplacesEveryPlaceholderAndRefusesAnUnknownOne) {
  const std::map<std::string, std::string> paths{{kLower, "/var/cache/kiln/" + kLower + "/fw.bin"}};
  auto argv = replaceArtifactPlaceholders(
      {"mlxfwmanager", "-i", artifactPlaceholder(kLower), "--image=" + artifactPlaceholder(kLower)}, paths);
  ASSERT_TRUE(argv.ok()) << argv.error();
  EXPECT_EQ((*argv)[2], "/var/cache/kiln/" + kLower + "/fw.bin");
  EXPECT_EQ((*argv)[3], "--image=/var/cache/kiln/" + kLower + "/fw.bin");
  auto unknown = replaceArtifactPlaceholders({"x", artifactPlaceholder(std::string(64, 'b'))}, paths);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("does not carry"), std::string::npos);
  auto cut = replaceArtifactPlaceholders({std::string(kArtifactPlaceholderPrefix) + "abc"}, paths);
  EXPECT_FALSE(cut.ok()) << "a placeholder cut short names nothing";
}

TEST(ArtifactRefTest, ReadsSha256sumOutputAndRefusesAnythingElse) {
  auto sums = parseChecksums(kLower + "  nvfw.fwpkg\n" + std::string(64, 'a') + " *fw.bin\r\n\n");
  ASSERT_TRUE(sums.ok()) << sums.error();
  EXPECT_EQ(*sums, (std::set<std::string>{kLower, std::string(64, 'a')}));
  EXPECT_TRUE(parseChecksums(kHash + "  x").ok());
  for (const std::string& bad : std::vector<std::string>{"", "\n\n", kLower + " x", kLower + "  ",
                                                         "zz" + kLower.substr(2) + "  x", "hello world"}) {
    auto r = parseChecksums(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  auto r = parseChecksums(kLower + "  a\nnot a line\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("line 2"), std::string::npos) << r.error().message;
}

TEST(ArtifactRefTest, Sha256HexIsSixtyFourHexDigits) {
  EXPECT_TRUE(isSha256Hex(kHash));
  EXPECT_FALSE(isSha256Hex(kHash.substr(1)));
  EXPECT_FALSE(isSha256Hex(kHash.substr(1) + "g"));
}

}  // namespace
}  // namespace kiln
