#include "common/spd_log.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "common/log_context.h"

namespace kiln {
namespace {

class LogFormatTest : public ::testing::Test {
 protected:
  LogFormatTest() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)), log_("kilnd", sink_) {}
  std::vector<nlohmann::json> lines() {
    std::vector<nlohmann::json> out;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));  // throws if not JSON
    return out;
  }
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  spdlog::logger log_;
};

TEST_F(LogFormatTest, JsonLinesCarryTheScopesFieldsAndEscapeWhatTheMessageHolds) {
  ASSERT_TRUE(setLogFormat(log_, "json").ok());
  log_.info("plain line");
  {
    LogScope scope({{"request_id", "7f3a"}, {"actor", "ci \"nightly\""}, {"rollout", "ro-3"}});
    log_.warn("reason: {}", "kiln: ro-3 firmware\n\"quoted\" caf\xc3\xa9 \x01");
  }
  log_.error("bad bytes \xff\xfe end");
  auto got = lines();
  ASSERT_EQ(got.size(), 3u) << out_.str();
  EXPECT_EQ(got[0]["msg"], "plain line");
  EXPECT_EQ(got[0]["level"], "info");
  EXPECT_EQ(got[0]["logger"], "kilnd");
  EXPECT_FALSE(got[0].contains("request_id")) << "a field outlived its scope";
  EXPECT_EQ(got[1]["level"], "warning");
  EXPECT_EQ(got[1]["request_id"], "7f3a");
  EXPECT_EQ(got[1]["actor"], "ci \"nightly\"");
  EXPECT_EQ(got[1]["rollout"], "ro-3");
  EXPECT_EQ(got[1]["msg"], "reason: kiln: ro-3 firmware\n\"quoted\" caf\xc3\xa9 \x01");
  EXPECT_EQ(got[2]["msg"], "bad bytes \xef\xbf\xbd\xef\xbf\xbd end");
  const std::string ts = got[0]["ts"];
  ASSERT_EQ(ts.size(), 24u) << ts;  // 2026-12-04T21:00:00.123Z
  EXPECT_EQ(ts[10], 'T');
  EXPECT_EQ(ts.back(), 'Z');
}

TEST_F(LogFormatTest, TextStaysOneHumanLineAndUnknownFormatsAreRefused) {
  ASSERT_TRUE(setLogFormat(log_, "text").ok());
  log_.info("hello");
  EXPECT_NE(out_.str().find(" info hello\n"), std::string::npos) << out_.str();
  auto bad = setLogFormat(log_, "yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("text or json"), std::string::npos);
}

TEST_F(LogFormatTest, AComponentsLinesCarryItsNameInBothFormats) {
  std::shared_ptr<spdlog::logger> root(&log_, [](spdlog::logger*) {});  // the fixture owns it
  ASSERT_TRUE(setLogFormat(log_, "text").ok());
  auto kiln = makeSpdLogger(root);
  auto slurm = kiln->named("slurm");
  kiln->info("own line");
  slurm->warn("cannot read Slurm's nodes: {}", "timeout");
  EXPECT_NE(out_.str().find(" info own line\n"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find(" warning [slurm] cannot read Slurm's nodes: timeout\n"), std::string::npos) << out_.str();
  // A message is never a format string: braces from tool output are written as they are.
  slurm->info(std::string("{not a field}"));
  EXPECT_NE(out_.str().find("[slurm] {not a field}\n"), std::string::npos) << out_.str();

  out_.str("");
  ASSERT_TRUE(setLogFormat(log_, "json").ok());
  slurm->info("drained node n1");
  auto l = lines();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0]["logger"], "kilnd.slurm");
  EXPECT_EQ(l[0]["msg"], "drained node n1");
}

TEST_F(LogFormatTest, AComponentFollowsTheProcesssLevel) {
  std::shared_ptr<spdlog::logger> root(&log_, [](spdlog::logger*) {});
  log_.set_level(spdlog::level::warn);
  auto api = makeSpdLogger(root)->named("api");
  EXPECT_FALSE(api->enabled(LogLevel::kInfo));
  EXPECT_TRUE(api->enabled(LogLevel::kWarn));
  api->info("dropped");
  api->error("kept");
  EXPECT_EQ(out_.str().find("dropped"), std::string::npos);
  EXPECT_NE(out_.str().find("kept"), std::string::npos);
}

}  // namespace
}  // namespace kiln
