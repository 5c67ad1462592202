// agents/agent/artifacts.h against a scripted Downloader: the cache, resumes, mirrors, the hash
// and signature checks, eviction, the argv substitution. The real libcurl downloader meets a real
// nginx in tests/e2e/artifacts_test.cc.
#include "agents/agent/artifacts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "agents/agent/tests/fakes.h"
#include "common/artifact_ref.h"
#include "common/crypto.h"

namespace kiln::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::ScriptedDownloader;

class NullLog : public Logger {
 public:
  void log(LogLevel, std::string_view) override {}
};

std::string readAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class ArtifactsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_artifacts_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    settings_.cache_dir = dir_ / "cache";
    settings_.retry_wait = 0ms;
  }
  void TearDown() override { fs::remove_all(dir_); }

  ArtifactFetcher& fetcher(SignatureCheck verify = {}) {
    fetcher_ =
        std::make_unique<ArtifactFetcher>(settings_, downloader_, std::move(verify), std::make_shared<NullLog>());
    EXPECT_TRUE(fetcher_->open().ok());
    return *fetcher_;
  }
  protocol::ArtifactRef serve(const std::string& url, const std::string& body) {
    downloader_.bodies[url] = body;
    return {url, sha256Hex(body), "", ""};
  }

  fs::path dir_;
  ArtifactSettings settings_;
  ScriptedDownloader downloader_;
  std::unique_ptr<ArtifactFetcher> fetcher_;
};

TEST_F(ArtifactsTest, FetchesChecksAndKeepsTheFileUnderItsHashAndName) {
  const auto a = serve("https://artifacts.example/fw/nvfw_GB200.fwpkg", "tray firmware bits");
  auto& f = fetcher();
  auto got = f.prepare({a}, nullptr);
  ASSERT_TRUE(got.ok()) << got.error();
  const FetchedArtifact& file = got->at(a.sha256);
  EXPECT_EQ(file.path, settings_.cache_dir / a.sha256 / "nvfw_GB200.fwpkg");
  EXPECT_EQ(readAll(file.path), "tray firmware bits");
  EXPECT_FALSE(file.from_cache);
  EXPECT_FALSE(fs::exists(f.cache().partial(a.sha256)));

  auto again = f.prepare({a}, nullptr);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->at(a.sha256).from_cache);
  EXPECT_EQ(downloader_.fetches.size(), 1u) << "the second use comes from the cache";
}

TEST_F(ArtifactsTest, WrongBitsAreNeverKeptNorHandedOut) {
  protocol::ArtifactRef a = serve("https://artifacts.example/fw/x.bin", "tampered");
  a.sha256 = sha256Hex("the real firmware");
  auto got = fetcher().prepare({a}, nullptr);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::kInvalidContent);
  EXPECT_NE(got.error().message.find("sha256 mismatch"), std::string::npos) << got.error().message;
  EXPECT_NE(got.error().message.find("artifact x.bin"), std::string::npos) << got.error().message;
  EXPECT_FALSE(fs::exists(settings_.cache_dir / a.sha256));
  EXPECT_FALSE(fs::exists(fetcher_->cache().partial(a.sha256)));
}

TEST_F(ArtifactsTest, ABrokenDownloadResumesWhereItStopped) {
  const std::string body(100000, 'f');
  const auto a = serve("https://artifacts.example/fw/big.bin", body);
  downloader_.break_after[a.url] = 40000;
  auto got = fetcher().prepare({a}, nullptr);
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_EQ(downloader_.fetches.size(), 2u);
  EXPECT_EQ(downloader_.fetches[1].second, 40000u) << "the second try asked for the rest only";
  EXPECT_EQ(readAll(got->at(a.sha256).path), body);
}

TEST_F(ArtifactsTest, AnUnreachableSourceFailsWithEveryReasonAndKeepsThePartForTheNextTry) {
  const std::string body(5000, 'n');
  protocol::ArtifactRef a{"https://artifacts.example/fw/nic.bin", sha256Hex(body), "", ""};
  settings_.mirrors = {{"https://artifacts.example/", "http://mirror-b01/"}};
  downloader_.bodies["http://mirror-b01/fw/nic.bin"] = body;
  downloader_.break_after["http://mirror-b01/fw/nic.bin"] = 1000;
  settings_.tries_per_source = 1;
  auto& f = fetcher();
  auto got = f.prepare({a}, nullptr);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(got.error().message.find("http://mirror-b01/fw/nic.bin: transfer closed"), std::string::npos)
      << got.error().message;
  EXPECT_NE(got.error().message.find("https://artifacts.example/fw/nic.bin: Could not connect"), std::string::npos);
  EXPECT_EQ(fs::file_size(f.cache().partial(a.sha256)), 1000u);
  // The mirror is back: the next try (the step's retry) resumes.
  auto later = f.prepare({a}, nullptr);
  ASSERT_TRUE(later.ok()) << later.error();
  EXPECT_EQ(downloader_.fetches.back(), (std::pair<std::string, std::uint64_t>{"http://mirror-b01/fw/nic.bin", 1000}));
}

TEST_F(ArtifactsTest, TheMirrorComesFirstAndATamperedMirrorFallsBackToTheOrigin) {
  settings_.mirrors = {{"https://artifacts.example/", "http://mirror-b01/"}, {"https://other/", "http://x/"}};
  auto& f = fetcher();
  EXPECT_EQ(f.sources("https://artifacts.example/fw/a.bin"),
            (std::vector<std::string>{"http://mirror-b01/fw/a.bin", "https://artifacts.example/fw/a.bin"}));
  const auto a = serve("https://artifacts.example/fw/a.bin", "good bits");
  downloader_.bodies["http://mirror-b01/fw/a.bin"] = "evil bits";
  auto got = f.prepare({a}, nullptr);
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(readAll(got->at(a.sha256).path), "good bits");
  EXPECT_EQ(got->at(a.sha256).source, "https://artifacts.example/fw/a.bin");
}

TEST_F(ArtifactsTest, AFileChangedInTheCacheIsFetchedAgain) {
  const auto a = serve("https://artifacts.example/fw/a.bin", "good bits");
  auto& f = fetcher();
  auto first = f.prepare({a}, nullptr);
  ASSERT_TRUE(first.ok());
  fs::permissions(first->at(a.sha256).path, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(first->at(a.sha256).path, std::ios::trunc) << "changed on disk";
  auto second = f.prepare({a}, nullptr);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->at(a.sha256).from_cache);
  EXPECT_EQ(readAll(second->at(a.sha256).path), "good bits");
  EXPECT_EQ(downloader_.fetches.size(), 2u);
}

TEST_F(ArtifactsTest, TheCacheEvictsTheLeastRecentlyUsedAndRefusesWhatCannotFit) {
  settings_.cache_max_bytes = 2500;
  auto& f = fetcher();
  const auto a = serve("https://m/a.bin", std::string(1000, 'a'));
  const auto b = serve("https://m/b.bin", std::string(1000, 'b'));
  const auto c = serve("https://m/c.bin", std::string(1000, 'c'));
  ASSERT_TRUE(f.prepare({a}, nullptr).ok());
  ASSERT_TRUE(f.prepare({b}, nullptr).ok());
  // a used again after b: b is now the least recently used.
  fs::last_write_time(settings_.cache_dir / b.sha256, fs::file_time_type::clock::now() - 1h);
  ASSERT_TRUE(f.prepare({a}, nullptr).ok());
  ASSERT_TRUE(f.prepare({c}, nullptr).ok());
  EXPECT_TRUE(fs::exists(settings_.cache_dir / a.sha256));
  EXPECT_FALSE(fs::exists(settings_.cache_dir / b.sha256));
  EXPECT_TRUE(fs::exists(settings_.cache_dir / c.sha256));
  EXPECT_LE(f.cache().usedBytes(), 2500u);

  const auto huge = serve("https://m/huge.bin", std::string(3000, 'h'));
  auto got = f.prepare({huge}, nullptr);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("more than the artifact cache holds"), std::string::npos) << got.error().message;
}

TEST_F(ArtifactsTest, ALocalPathIsCopiedInAndChecked) {
  fs::create_directories(dir_ / "srv");
  std::ofstream(dir_ / "srv" / "fw.bin") << "local bits";
  protocol::ArtifactRef a{(dir_ / "srv" / "fw.bin").string(), sha256Hex("local bits"), "", ""};
  auto got = fetcher().prepare({a}, nullptr);
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(readAll(got->at(a.sha256).path), "local bits");
  a.sha256 = sha256Hex("other bits");
  EXPECT_FALSE(fetcher_->prepare({a}, nullptr).ok());
  EXPECT_TRUE(downloader_.fetches.empty());
}

TEST_F(ArtifactsTest, WithTrustedKeysAnUnsignedOrBadlySignedArtifactIsRefusedBeforeAnyDownload) {
  int checks = 0;
  auto verify = [&](const std::string&, const std::string& sig) -> Status {
    ++checks;
    return sig == "GOOD" ? okStatus() : Status(invalidContent("gpgv: BAD signature"));
  };
  auto& f = fetcher(verify);
  protocol::ArtifactRef a = serve("https://m/a.bin", "bits");
  auto unsigned_ = f.prepare({a}, nullptr);
  ASSERT_FALSE(unsigned_.ok());
  EXPECT_NE(unsigned_.error().message.find("not signed"), std::string::npos) << unsigned_.error().message;
  a.checksums = a.sha256 + "  a.bin\n";
  a.signature = "FORGED";
  auto bad = f.prepare({a}, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("BAD signature"), std::string::npos);
  EXPECT_TRUE(downloader_.fetches.empty()) << "nothing fetched for an untrusted artifact";
  a.signature = "GOOD";
  EXPECT_TRUE(f.prepare({a}, nullptr).ok());
  EXPECT_EQ(checks, 2);

  // A bundle's artifacts share one signed list: one gpgv run for them; and a second artifact
  // that is not signed stops the step before the first one is fetched.
  protocol::ArtifactRef b = serve("https://m/b.bin", "more bits");
  const std::string sums = a.sha256 + "  a.bin\n" + b.sha256 + "  b.bin\n";
  a.checksums = b.checksums = sums;
  b.signature = "GOOD";
  const auto fetched_before = downloader_.fetches.size();
  EXPECT_TRUE(f.prepare({a, b}, nullptr).ok());
  EXPECT_EQ(checks, 3);
  protocol::ArtifactRef c = serve("https://m/c.bin", "unsigned bits");
  auto mixed = f.prepare({b, c}, nullptr);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message.find("artifact c.bin"), std::string::npos) << mixed.error().message;
  EXPECT_EQ(downloader_.fetches.size(), fetched_before + 1) << "only b was fetched (by the signed pair)";
}

}  // namespace
}  // namespace kiln::agent
