#include "agents/agent/journal.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kiln::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kiln_journal_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<Journal> open(JournalLimits limits = {}) {
    auto j = Journal::open(dir_, limits);
    EXPECT_TRUE(j.ok());
    return j.ok() ? std::move(*j) : nullptr;
  }
  std::size_t lineCount() {
    std::ifstream in(dir_ / "journal.jsonl");
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
  fs::path dir_;
};

TEST_F(JournalTest, ReplaysStartedFinishedAndReportedAcrossReopen) {
  {
    auto j = open();
    ASSERT_TRUE(j->started({{"id", "a-1"}, {"lease", 1}, {"pid", 0}}).ok());
    ASSERT_TRUE(j->started({{"id", "a-1"}, {"lease", 1}, {"pid", 42}}).ok());
    ASSERT_TRUE(j->finished("a-1", 1, {{"exit_code", 0}}).ok());
    ASSERT_TRUE(j->started({{"id", "a-2"}, {"lease", 1}, {"pid", 43}}).ok());
    ASSERT_TRUE(j->started({{"id", "a-3"}, {"lease", 1}, {"pid", 44}}).ok());
    ASSERT_TRUE(j->finished("a-3", 1, {{"exit_code", 1}}).ok());
    ASSERT_TRUE(j->reported("a-3", 1).ok());
  }
  auto j = open();
  ASSERT_EQ(j->entries().size(), 3u);
  const JournalEntry* a1 = j->find("a-1", 1);
  ASSERT_NE(a1, nullptr);
  EXPECT_EQ(a1->started["pid"], 42);  // the later started record wins
  EXPECT_TRUE(a1->finished());
  EXPECT_FALSE(a1->reported);
  EXPECT_FALSE(j->find("a-2", 1)->finished());
  EXPECT_TRUE(j->find("a-3", 1)->reported);
  EXPECT_EQ(j->find("a-1", 2), nullptr);  // another lease is another step
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "journal.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(JournalTest, SkipsATornLastLineAndKeepsAppendingAfterIt) {
  {
    auto j = open();
    ASSERT_TRUE(j->started({{"id", "a-1"}, {"lease", 1}, {"pid", 7}}).ok());
  }
  std::ofstream(dir_ / "journal.jsonl", std::ios::app) << R"({"event":"finished","id":"a-1","le)";
  {
    auto j = open();
    EXPECT_EQ(j->skippedLines(), 1u);
    EXPECT_FALSE(j->find("a-1", 1)->finished());
    ASSERT_TRUE(j->finished("a-1", 1, {{"exit_code", 0}}).ok());
  }
  auto j = open();
  EXPECT_TRUE(j->find("a-1", 1)->finished());
}

TEST_F(JournalTest, InvalidUtf8InAResultIsStoredReplaced) {
  {
    auto j = open();
    ASSERT_TRUE(j->finished("a-1", 1, {{"stdout_tail", std::string("ok\xff")}}).ok());
  }
  auto j = open();
  EXPECT_EQ(j->find("a-1", 1)->result["stdout_tail"], "ok\xEF\xBF\xBD");
}

TEST_F(JournalTest, CompactionKeepsUnsettledStepsAndRecentReportedKeys) {
  const JournalLimits limits{.compact_lines = 40, .keep_reported = 8};
  auto j = open(limits);
  ASSERT_TRUE(j->started({{"id", "open"}, {"lease", 1}, {"pid", 1}}).ok());
  ASSERT_TRUE(j->started({{"id", "done-unreported"}, {"lease", 1}, {"pid", 2}}).ok());
  ASSERT_TRUE(j->finished("done-unreported", 1, {{"exit_code", 0}}).ok());
  const int steps = 30;
  for (int i = 0; i < steps; ++i) {
    const std::string id = "s-" + std::to_string(i);
    ASSERT_TRUE(j->started({{"id", id}, {"lease", 1}, {"pid", 10}}).ok());
    ASSERT_TRUE(j->finished(id, 1, {{"exit_code", 0}}).ok());
    ASSERT_TRUE(j->reported(id, 1).ok());
  }
  EXPECT_LE(lineCount(), limits.compact_lines);
  j.reset();
  auto reopened = open(limits);
  EXPECT_NE(reopened->find("open", 1), nullptr);
  EXPECT_EQ(reopened->find("open", 1)->started["pid"], 1);
  ASSERT_NE(reopened->find("done-unreported", 1), nullptr);
  EXPECT_TRUE(reopened->find("done-unreported", 1)->finished());
  EXPECT_EQ(reopened->find("s-0", 1), nullptr);  // old reported keys are forgotten
  ASSERT_NE(reopened->find("s-29", 1), nullptr);
  EXPECT_TRUE(reopened->find("s-29", 1)->reported);
}

}  // namespace
}  // namespace kiln::agent
