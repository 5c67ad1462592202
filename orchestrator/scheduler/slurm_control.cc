#include "orchestrator/scheduler/slurm_control.h"

#include <algorithm>
#include <cctype>

#include "common/exec/process_runner.h"

namespace kiln::scheduler {
namespace {

Status safeName(const std::string& what, const std::string& name) {
  const bool bad = name.empty() || name[0] == '-' || std::any_of(name.begin(), name.end(), [](char c) {
                     return c == '=' || std::isspace(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) < 0x20;
                   });
  if (bad) return invalidArgument(what + " '" + name + "' cannot be passed to scontrol");
  return Ok{};
}

class Scontrol final : public SlurmControl {
 public:
  Scontrol(ScontrolOptions o, std::shared_ptr<exec::ProcessRunner> runner) : o_(std::move(o)), runner_(std::move(runner)) {}

  Result<std::vector<SlurmNode>> nodes() override {
    auto out = run({o_.sinfo, "--json"}, 64 << 20);
    if (!out.ok()) return out.error();
    return parseNodesJson(*out);
  }

  Result<std::vector<SlurmJob>> jobs() override {
    auto out = run({o_.squeue, "--json"}, 256 << 20);
    if (!out.ok()) return out.error();
    return parseJobsJson(*out);
  }

  Status drain(const std::string& node, const std::string& reason) override {
    if (auto st = safeName("node", node); !st.ok()) return st;
    auto out = run(drainArgv(o_, node, reason), 4096);
    if (!out.ok()) return out.error();
    return Ok{};
  }

  Status resume(const std::string& node) override {
    if (auto st = safeName("node", node); !st.ok()) return st;
    auto out = run(resumeArgv(o_, node), 4096);
    if (!out.ok()) return out.error();
    return Ok{};
  }

  Status requeue(const std::string& job) override {
    if (auto st = safeName("job", job); !st.ok()) return st;
    auto out = run({o_.scontrol, "requeue", job}, 4096);
    if (!out.ok()) return out.error();
    return Ok{};
  }

 private:
  Result<std::string> run(std::vector<std::string> argv, std::size_t cap) {
    exec::ProcessSpec spec;
    spec.argv = std::move(argv);
    spec.env = o_.env;
    spec.timeout = o_.timeout;
    spec.kill_grace = std::chrono::milliseconds(1000);
    spec.output_cap = 4096;
    spec.parse_capture_cap = cap;
    const exec::ProcessResult r = runner_->run(spec);
    if (r.succeeded()) {
      if (r.stdout_bytes > cap) return unavailable(spec.argv[0] + ": output larger than " + std::to_string(cap) + " bytes");
      return r.stdout_full;
    }
    std::string what = spec.argv[0];
    for (std::size_t i = 1; i < spec.argv.size() && i < 3; ++i) what += " " + spec.argv[i];
    return unavailable(what + " " + exec::describeFailure(r, o_.timeout));
  }

  ScontrolOptions o_;
  std::shared_ptr<exec::ProcessRunner> runner_;
};

}  // namespace

std::vector<std::string> drainArgv(const ScontrolOptions& o, const std::string& node, const std::string& reason) {
  return {o.scontrol, "update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason};
}

std::vector<std::string> resumeArgv(const ScontrolOptions& o, const std::string& node) {
  return {o.scontrol, "update", "NodeName=" + node, "State=RESUME"};
}

std::unique_ptr<SlurmControl> makeScontrol(ScontrolOptions options, std::shared_ptr<exec::ProcessRunner> runner) {
  return std::make_unique<Scontrol>(std::move(options), std::move(runner));
}

}  // namespace kiln::scheduler
