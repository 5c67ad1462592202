#pragma once
// Fakes for kilnctl's command tests: a transport that records requests and replays canned
// responses, an in-memory System, and a harness that runs a command line through runCli.

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/groups.h"

namespace kiln::cli::testing {

class FakeTransport : public Transport {
 public:
  void reply(int status, std::string body) { responses_.push_back(ApiResponse{status, std::move(body), "application/json"}); }
  void fail(std::string message) { responses_.push_back(unavailable(std::move(message))); }

  Result<ApiResponse> send(const ApiRequest& request) override {
    requests.push_back(request);
    if (responses_.empty()) return ApiResponse{500, R"({"error":{"code":"internal","message":"no canned response","details":{}}})", ""};
    auto r = std::move(responses_.front());
    responses_.pop_front();
    return r;
  }

  std::vector<ApiRequest> requests;

 private:
  std::deque<Result<ApiResponse>> responses_;
};

// Hands runCli a transport that forwards to a FakeTransport the test keeps.
class ForwardingTransport : public Transport {
 public:
  explicit ForwardingTransport(FakeTransport& to) : to_(to) {}
  Result<ApiResponse> send(const ApiRequest& request) override { return to_.send(request); }

 private:
  FakeTransport& to_;
};

struct FakeSystem {
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;
  std::map<std::string, std::string> written;
  std::string stdin_text;
  // A fake monotonic clock: only sleep_for moves it. Every sleep is recorded.
  std::chrono::steady_clock::time_point clock{};
  std::vector<std::chrono::milliseconds> sleeps;
  bool tty = false;
  std::string host_name;  // what System::host_name answers

  System system() {
    System s;
    s.get_env = [this](const std::string& name) -> std::optional<std::string> {
      auto it = env.find(name);
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    s.read_file = [this](const std::string& path) -> Result<std::string> {
      if (path == "-") return stdin_text;
      auto it = files.find(path);
      if (it == files.end()) return notFound("cannot read " + path + ": No such file or directory");
      return it->second;
    };
    s.write_file = [this](const std::string& path, const std::string& content) -> Status {
      if (path.rfind("/readonly/", 0) == 0) return invalidArgument("cannot write " + path + ": Permission denied");
      written[path] = content;
      return Ok{};
    };
    s.file_exists = [this](const std::string& path) { return files.count(path) > 0; };
    s.now = [this] { return clock; };
    s.sleep_for = [this](std::chrono::milliseconds d) {
      sleeps.push_back(d);
      clock += d;
    };
    s.stdout_is_tty = [this] { return tty; };
    s.host_name = [this] { return host_name; };
    return s;
  }
};

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

class CliHarness {
 public:
  CliHarness() { addBuiltinGroups(registry); }

  CliRun run(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    System sys = fs.system();
    TransportFactory factory = [this](const ConnectionSettings& s) -> Result<std::unique_ptr<Transport>> {
      settings = s;
      ++transports_made;
      return std::unique_ptr<Transport>(std::make_unique<ForwardingTransport>(transport));
    };
    CliRun r;
    r.code = runCli(registry, args, sys, factory, out, err);
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  Registry registry;
  FakeSystem fs;
  FakeTransport transport;
  std::optional<ConnectionSettings> settings;
  int transports_made = 0;
};

inline int lineCount(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace kiln::cli::testing
