// Runs the built kiln-hwsim binary through its tool-named symlinks, as an agent would.

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Result {
  int exit_code = -1;
  std::string out;
};

class ExecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hwsim-exec-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    env_ = {"KILN_HWSIM_DIR=" + (dir_ / "state").string(), "KILN_HWSIM_HOST=cat-r07-t04",
            "KILN_HWSIM_TIME_SCALE=0.0001", "PATH=" + (dir_ / "bin").string() + ":/usr/bin:/bin"};
    ASSERT_EQ(run(KILN_HWSIM_BIN, {"install-shims", (dir_ / "bin").string()}).exit_code, 0);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // fork + execve with a fixed argv (no shell); captures stdout, discards stderr.
  Result run(const std::string& path, const std::vector<std::string>& args) {
    int fds[2];
    if (::pipe(fds) != 0) return {};
    pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], 1);
      int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 2);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<std::string> argv_s{path};
      argv_s.insert(argv_s.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : argv_s) argv.push_back(a.data());
      argv.push_back(nullptr);
      std::vector<char*> envp;
      for (auto& e : env_) envp.push_back(e.data());
      envp.push_back(nullptr);
      ::execve(path.c_str(), argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    Result r;
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) r.out.append(buf, static_cast<size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
  }
  Result tool(const std::string& name, const std::vector<std::string>& args) {
    return run((dir_ / "bin" / name).string(), args);
  }

  std::filesystem::path dir_;
  std::vector<std::string> env_;
};

TEST_F(ExecTest, NvidiaSmiThroughSymlinkPrintsXml) {
  Result r = tool("nvidia-smi", {"-q", "-x"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("<?xml version=\"1.0\" ?>", 0), 0u);
  EXPECT_NE(r.out.find("<remapped_row_pending>No</remapped_row_pending>"), std::string::npos);
  EXPECT_NE(r.out.find("</nvidia_smi_log>"), std::string::npos);
}

TEST_F(ExecTest, FlashRebootInventoryEndToEnd) {
  const std::string self = KILN_HWSIM_BIN;
  ASSERT_EQ(run(self, {"fault", "set", "--kind", "flash_failure", "--count", "1"}).exit_code, 0);
  Result failed = run(self, {"flash", "gpu_vbios", "97.00.9A.00.01"});
  EXPECT_EQ(failed.exit_code, 1);
  Result flashed = run(self, {"flash", "gpu_vbios", "97.00.9A.00.01"});
  ASSERT_EQ(flashed.exit_code, 0);
  EXPECT_NE(flashed.out.find("PercentComplete: 100"), std::string::npos);
  auto before = nlohmann::json::parse(tool("kiln-inventory", {}).out);
  EXPECT_NE(before["gpu_vbios"], "97.00.9A.00.01");
  EXPECT_EQ(before["pending"]["gpu_vbios"], "97.00.9A.00.01");
  ASSERT_EQ(tool("kiln-reboot", {}).exit_code, 0);
  auto after = nlohmann::json::parse(tool("kiln-inventory", {}).out);
  EXPECT_EQ(after["gpu_vbios"], "97.00.9A.00.01");
  EXPECT_NE(after["boot_id"], before["boot_id"]);
}

TEST_F(ExecTest, DcgmiDiagAndNvlinkSeeInjectedWeakLink) {
  const std::string self = KILN_HWSIM_BIN;
  ASSERT_EQ(run(self, {"fault", "set", "--kind", "weak_link_persistent", "--gpu", "1", "--link",
                       "5"})
                .exit_code,
            0);
  Result diag = tool("dcgmi", {"diag", "-r", "2", "-j"});
  EXPECT_NE(diag.exit_code, 0);
  auto j = nlohmann::json::parse(diag.out);
  EXPECT_EQ(j["DCGM Diagnostic"]["test_categories"][1]["tests"][0]["name"], "pcie");
  auto n1 = nlohmann::json::parse(tool("dcgmi", {"nvlink", "-e", "-g", "1", "-j"}).out);
  auto n2 = nlohmann::json::parse(tool("dcgmi", {"nvlink", "-e", "-g", "1", "-j"}).out);
  auto flit = [](const nlohmann::json& d) {
    return std::stoull(d["body"]["Link 5"]["children"]["CRC FLIT Error"]["value"].get<std::string>());
  };
  EXPECT_GT(flit(n2), flit(n1));
}

TEST_F(ExecTest, ConcurrentInvocationsDoNotLoseUpdates) {
  const std::string self = KILN_HWSIM_BIN;
  constexpr int kProcs = 8;
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcs; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      Result r = run(self, {"fault", "set", "--kind", "flash_failure", "--count", "1"});
      ::_exit(r.exit_code);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto list = nlohmann::json::parse(run(self, {"fault", "list"}).out);
  EXPECT_EQ(list["faults"].size(), static_cast<size_t>(kProcs));
}

TEST_F(ExecTest, TimeScaleMakesLevelThreeDiagFast) {
  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(tool("dcgmi", {"diag", "-r", "3", "-j"}).exit_code, 0);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);  // 15 min x 0.0001 = 0.09 s plus process start
}

}  // namespace
