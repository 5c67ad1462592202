#include "agents/sim/tools.h"

#include <filesystem>
#include <regex>

#include "agents/sim/faults.h"

namespace kiln::sim {
namespace {

ToolRun usage(const std::string& text, int code = 2) {
  ToolRun run;
  run.err(text);
  run.exit_code = code;
  return run;
}

// Value following `flag` (or its long spelling) in args; "" when present without value.
std::optional<std::string> option(const std::vector<std::string>& args, std::initializer_list<const char*> names) {
  for (size_t i = 0; i < args.size(); ++i) {
    for (const char* n : names) {
      const std::string name = n;
      if (args[i] == name) return i + 1 < args.size() ? args[i + 1] : std::string();
      if (args[i].rfind(name + "=", 0) == 0) return args[i].substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

bool has(const std::vector<std::string>& args, std::initializer_list<const char*> names) {
  for (const auto& a : args) {
    for (const char* n : names) {
      if (a == n) return true;
    }
  }
  return false;
}

std::optional<int> toInt(const std::optional<std::string>& s) {
  if (!s || s->empty()) return std::nullopt;
  try {
    size_t used = 0;
    int v = std::stoi(*s, &used);
    if (used != s->size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

ToolRun runNvidiaSmi(HostSim& sim, const std::vector<std::string>& args, const ToolContext& ctx) {
  if (has(args, {"-L", "--list-gpus"})) return sim.nvidiaSmiList();
  if (has(args, {"-r", "--gpu-reset"})) {
    auto id = toInt(option(args, {"-i", "--id"}));
    if (!id) return usage("-i/--id is required with -r/--gpu-reset\n");
    return sim.nvidiaSmiReset(*id);
  }
  if (has(args, {"-q", "--query"}) && has(args, {"-x", "--xml-format"})) {
    return sim.nvidiaSmiQueryXml(ctx.timestamp);
  }
  // Also accept the combined short form "-qx".
  if (has(args, {"-qx", "-xq"})) return sim.nvidiaSmiQueryXml(ctx.timestamp);
  return usage(
      "kiln-hwsim nvidia-smi supports: -q -x, -L, -r -i N\n"
      "Please run 'nvidia-smi -h' for help.\n");
}

ToolRun runDcgmi(HostSim& sim, const std::vector<std::string>& args) {
  if (args.empty()) return usage("Usage: dcgmi <subsystem>\n");
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  const bool json = has(rest, {"-j", "--json"});
  if (args[0] == "diag") {
    auto level = toInt(option(rest, {"-r", "--run"}));
    if (!level || *level < 1 || *level > 4) {
      return usage("Error: -r/--run must be a diagnostic level 1-4 (simulated dcgmi).\n");
    }
    return sim.dcgmiDiag(*level, json);
  }
  if (args[0] == "nvlink") {
    if (has(rest, {"-s", "--link-status"})) return sim.dcgmiNvlinkStatus();
    if (has(rest, {"-e", "--errors"})) {
      auto g = option(rest, {"-g", "--gpuid"});
      std::optional<int> id;
      if (g) {
        id = toInt(g);
        if (!id) return usage("Error: -g/--gpuid needs a GPU id.\n");
      }
      return sim.dcgmiNvlinkErrors(id, json);
    }
    return usage("Usage: dcgmi nvlink -e [-g GPU] [-j] | -s\n");
  }
  if (args[0] == "mndiag") {
    auto list = option(rest, {"--hostList", "--hostlist"});
    auto test = option(rest, {"--run", "-r"});
    if (!list || list->empty() || !test || (*test != "nvloom" && *test != "mnubergemm")) {
      return usage("Usage: dcgmi mndiag --hostList H1,H2,... --run nvloom|mnubergemm\n");
    }
    std::vector<std::string> hosts;
    size_t start = 0;
    while (start <= list->size()) {
      size_t comma = list->find(',', start);
      if (comma == std::string::npos) comma = list->size();
      if (comma > start) hosts.push_back(list->substr(start, comma - start));
      start = comma + 1;
    }
    if (hosts.empty()) return usage("Error: --hostList names no host.\n");
    return sim.dcgmiMndiag(hosts, *test);
  }
  if (args[0] == "discovery" && has(rest, {"-l", "--list"})) {
    ToolRun run;
    run.out(std::to_string(4) + " GPUs found.\n");
    return run;
  }
  return usage("Error: unsupported dcgmi subsystem '" + args[0] + "' (simulated dcgmi).\n");
}

ToolRun runNvfwupd(HostSim& sim, const std::vector<std::string>& args, const ToolContext& ctx) {
  // Real form: nvfwupd -t ip=BMC user=U password=P servertype=GB200 update_fw -p PKG [-y]
  //            nvfwupd -t ... show_version [-p PKG]
  auto cmd = std::find_if(args.begin(), args.end(), [](const std::string& a) {
    return a == "update_fw" || a == "show_version" || a == "force_update" || a == "show_update_progress";
  });
  if (cmd == args.end()) {
    return usage("usage: nvfwupd [-t TARGET ...] {show_version,update_fw,...}\n");
  }
  const std::vector<std::string> rest(cmd + 1, args.end());
  if (*cmd == "show_version") return sim.nvfwupdShowVersion();
  if (*cmd == "show_update_progress") {
    ToolRun run;
    run.out("TaskState: Completed\nPercentComplete: 100\nTaskStatus: OK\n");
    return run;
  }
  auto package = option(rest, {"-p", "--package"});
  if (!package || package->empty()) return usage("Error: update_fw needs -p PACKAGE\n");
  // A package file that holds a JSON object {"component": "version", ...} flashes exactly
  // those; otherwise the package name is the HMC bundle version
  // ("nvfw_GB200-P4975_0004_250301.1.0_custom_prod-signed.fwpkg" -> hmc_bundle
  // "GB200-P4975_0004_250301.1.0").
  std::map<std::string, std::string> components;
  if (ctx.read_file) {
    if (auto content = ctx.read_file(*package)) {
      auto j = nlohmann::json::parse(*content, nullptr, false);
      if (j.is_object()) {
        for (const auto& [k, v] : j.items()) {
          if (v.is_string()) components[k] = v.get<std::string>();
        }
      }
    }
  }
  if (components.empty()) {
    std::string name = std::filesystem::path(*package).filename().string();
    for (const char* suffix : {".fwpkg", "_prod-signed", "_custom"}) {
      const std::string s = suffix;
      if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
        name.resize(name.size() - s.size());
      }
    }
    if (name.rfind("nvfw_", 0) == 0) name = name.substr(5);
    components["hmc_bundle"] = name;
  }
  return sim.nvfwupdUpdate(std::filesystem::path(*package).filename().string(), components);
}

ToolRun runMlxfwmanager(HostSim& sim, const std::vector<std::string>& args) {
  auto image = option(args, {"-i", "--image"});
  std::optional<std::string> version;
  if (image) {
    version = versionFromImageName(*image);
    if (!version) return usage("-E- Failed to open image file " + *image + "\n", 1);
  }
  if (has(args, {"-u", "--update"})) {
    if (!version) return usage("-E- No image file specified (use -i IMAGE)\n", 1);
    return sim.mlxUpdate(*version);
  }
  if (has(args, {"--query", "-q"}) || args.empty()) return sim.mlxQuery(version);
  return usage("Usage: mlxfwmanager [--query] [-u] [-i IMAGE] [-y]\n");
}

ToolRun runFault(HostState& state, HostSim& sim, const std::vector<std::string>& args) {
  if (args.empty()) return usage("usage: kiln-hwsim fault set|clear|list|seed [options]\n");
  const std::string& verb = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  ToolRun run;
  if (verb == "list") {
    run.out(sim.listFaults().dump(2) + "\n");
    return run;
  }
  std::optional<FaultKind> kind;
  if (auto k = option(rest, {"--kind"})) {
    kind = parseFaultKind(*k);
    if (!kind) return usage("kiln-hwsim fault: unknown kind '" + *k + "'\n");
  }
  if (verb == "clear") {
    int n = sim.clearFaults(kind);
    run.out("cleared " + std::to_string(n) + " fault(s) on " + state.host + "\n");
    return run;
  }
  if (verb != "set" && verb != "seed") return usage("kiln-hwsim fault: unknown verb " + verb + "\n");
  if (!kind) return usage("kiln-hwsim fault " + verb + ": --kind is required\n");
  Fault f;
  f.kind = *kind;
  f.gpu = toInt(option(rest, {"--gpu"})).value_or(-1);
  f.link = toInt(option(rest, {"--link"})).value_or(-1);
  f.remaining = toInt(option(rest, {"--count"})).value_or(-1);
  f.tool = option(rest, {"--tool"}).value_or("");
  f.xid = toInt(option(rest, {"--xid"})).value_or(0);
  if (auto factor = option(rest, {"--factor"})) {
    try {
      f.factor = std::stod(*factor);
    } catch (const std::exception&) {
      return usage("kiln-hwsim fault: bad --factor\n");
    }
  }
  if (verb == "seed") {
    auto seed = option(rest, {"--seed"});
    auto rate = option(rest, {"--rate"});
    if (!seed || !rate) return usage("kiln-hwsim fault seed: --seed S and --rate R are required\n");
    uint64_t s = 0;
    double r = 0;
    try {
      s = std::stoull(*seed);
      r = std::stod(*rate);
    } catch (const std::exception&) {
      return usage("kiln-hwsim fault seed: bad --seed or --rate\n");
    }
    const PlatformSpec& spec = platformSpec(state.platform);
    auto chosen = seededFault(s, state.host, r, f, spec.gpus, spec.links_per_gpu);
    if (!chosen) {
      run.out("no fault: " + state.host + " not selected for " + faultKindName(f.kind) + "\n");
      return run;
    }
    f = *chosen;
  }
  if (auto st = sim.setFault(f); !st) return usage("kiln-hwsim fault: " + st.error().message + "\n");
  run.out("fault set on " + state.host + ": " + toJson(f).dump() + "\n");
  return run;
}

ToolRun runHwsim(HostState& state, HostSim& sim, const std::vector<std::string>& args) {
  if (args.empty()) return usage("usage: kiln-hwsim flash|fault|xids|state ...\n");
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "flash") {
    if (rest.size() != 2) return usage("usage: kiln-hwsim flash COMPONENT VERSION\n");
    return sim.flash(rest[0], rest[1]);
  }
  if (args[0] == "fault") return runFault(state, sim, rest);
  if (args[0] == "xids") return sim.xidLog();
  if (args[0] == "state") {
    ToolRun run;
    run.out(toJson(state).dump(2) + "\n");
    return run;
  }
  return usage("kiln-hwsim: unknown command '" + args[0] + "'\n");
}

}  // namespace

bool isToolName(const std::string& name) {
  for (const char* t : kToolNames) {
    if (name == t) return true;
  }
  return false;
}

std::optional<std::string> versionFromImageName(const std::string& path) {
  static const std::regex kVersion(R"((\d+)[._](\d+)[._](\d{3,5}))");
  const std::string name = std::filesystem::path(path).filename().string();
  std::smatch m;
  if (!std::regex_search(name, m, kVersion)) return std::nullopt;
  return m[1].str() + "." + m[2].str() + "." + m[3].str();
}

ToolRun runTool(HostState& state, const std::string& tool, const std::vector<std::string>& args,
                const ToolContext& ctx) {
  HostSim sim(state);
  const bool admin = tool == "kiln-hwsim" && !args.empty() && args[0] != "flash";
  // Hang faults name the tool as invoked; `kiln-hwsim flash` is the tool "flash".
  const std::string hang_name = tool == "kiln-hwsim" ? "flash" : tool;
  if (!admin && sim.takeHang(hang_name)) {
    ToolRun run;
    run.chunks.push_back({kHangSeconds, "", false, /*scaled=*/false});
    run.exit_code = 124;
    return run;
  }
  ToolRun run;
  if (tool == "nvidia-smi") {
    run = runNvidiaSmi(sim, args, ctx);
  } else if (tool == "dcgmi") {
    run = runDcgmi(sim, args);
  } else if (tool == "nvfwupd") {
    run = runNvfwupd(sim, args, ctx);
  } else if (tool == "mlxfwmanager") {
    run = runMlxfwmanager(sim, args);
  } else if (tool == "kiln-reboot") {
    run = sim.reboot();
  } else if (tool == "kiln-inventory") {
    run = sim.inventory();
  } else if (tool == "kiln-driver-install") {
    if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
      return usage("usage: kiln-driver-install VERSION\n");
    }
    run = sim.installDriver(args[0]);
  } else if (tool == "kiln-hwsim") {
    run = runHwsim(state, sim, args);
  } else {
    return usage("kiln-hwsim: unknown tool '" + tool + "'\n", 127);
  }
  if (!admin) {
    const double factor = sim.slowFactor(hang_name);
    for (auto& c : run.chunks) {
      if (c.scaled) c.delay_s *= factor;
    }
  }
  return run;
}

}  // namespace kiln::sim
