#include "cli/command.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <set>
#include <ostream>
#include <sstream>

namespace kiln::cli {
namespace {

const std::vector<FlagSpec>& globalFlags() {
  static const std::vector<FlagSpec> kFlags = {
      {.name = "url", .value_name = "URL", .help = "Kiln server (env KILN_URL; default http://127.0.0.1:8080)"},
      {.name = "token", .value_name = "TOKEN", .help = "bearer token (env KILN_TOKEN)"},
      {.name = "token-file", .value_name = "FILE", .help = "read the bearer token from FILE (env KILN_TOKEN_FILE)"},
      {.name = "ca-file", .value_name = "FILE", .help = "verify an HTTPS server against this CA (env KILN_CA_FILE)"},
      {.name = "config", .value_name = "FILE", .help = "config file (env KILN_CONFIG; default ~/.config/kiln/kilnctl.yaml)"},
      {.name = "timeout", .type = FlagType::kNumber, .value_name = "SECONDS", .help = "give up on a call after this long (default 120)",
       .min = 0.1, .max = 86400},
      {.name = "json", .type = FlagType::kBool, .help = "print the server's JSON instead of tables"},
  };
  return kFlags;
}

std::string mainHint() { return "Run 'kilnctl help' for usage."; }
std::string groupHint(const CommandGroup& g) { return "Run 'kilnctl " + g.name + " --help' for usage."; }
// "pods list", or "gate" for a single-command group.
std::string fullName(const CommandGroup& g, const CommandSpec& c) {
  return c.name.empty() ? g.name : g.name + " " + c.name;
}
std::string commandHint(const CommandGroup& g, const CommandSpec& c) {
  return "Run 'kilnctl " + fullName(g, c) + " --help' for usage.";
}
// The command of a group that is a single command, or nullptr.
const CommandSpec* soleCommand(const CommandGroup& g) {
  return g.commands.size() == 1 && g.commands[0].name.empty() ? &g.commands[0] : nullptr;
}

const FlagSpec* findFlag(const std::vector<FlagSpec>& flags, const std::string& name, char short_name) {
  for (const auto& f : flags)
    if ((!name.empty() && f.name == name) || (short_name != 0 && f.short_name == short_name)) return &f;
  return nullptr;
}

std::string formatBound(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Checks a flag value against its type; returns an error message or "".
std::string checkValue(const FlagSpec& f, const std::string& value) {
  const std::string flag = "--" + f.name;
  const char* begin = value.data();
  const char* end = value.data() + value.size();
  double as_number = 0;
  if (f.type == FlagType::kInt) {
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(begin, end, n);
    if (value.empty() || ec != std::errc() || p != end) return flag + " needs a whole number, not '" + value + "'";
    as_number = static_cast<double>(n);
  } else if (f.type == FlagType::kNumber) {
    double d = 0;
    auto [p, ec] = std::from_chars(begin, end, d);
    if (value.empty() || ec != std::errc() || p != end || !std::isfinite(d))
      return flag + " needs a number, not '" + value + "'";
    as_number = d;
  } else if (f.type == FlagType::kKeyValue) {
    const auto eq = value.find('=');
    if (eq == std::string::npos || eq == 0) return flag + " needs KEY=VALUE, not '" + value + "'";
    return "";
  } else {
    return "";
  }
  if ((f.min && as_number < *f.min) || (f.max && as_number > *f.max)) {
    std::string range = f.min && f.max ? "from " + formatBound(*f.min) + " to " + formatBound(*f.max)
                        : f.min        ? "at least " + formatBound(*f.min)
                                       : "at most " + formatBound(*f.max);
    return flag + " must be " + range + ", not " + value;
  }
  return "";
}

void setGlobal(GlobalOptions& g, const std::string& name, const std::string& value) {
  if (name == "url") g.url = value;
  else if (name == "token") g.token = value;
  else if (name == "token-file") g.token_file = value;
  else if (name == "ca-file") g.ca_file = value;
  else if (name == "config") g.config = value;
  else if (name == "timeout") g.timeout_seconds = std::stod(value);
  else if (name == "json") g.json = true;
}

// "--name VALUE", or "-o VALUE" with `prefer_short` when the flag has a short form.
std::string flagSynopsis(const FlagSpec& f, bool prefer_short = false) {
  std::string s = prefer_short && f.short_name ? std::string("-") + f.short_name : "--" + f.name;
  if (f.type != FlagType::kBool) s += " " + (f.value_name.empty() ? std::string("VALUE") : f.value_name);
  return s;
}

void appendFlagHelp(const std::vector<FlagSpec>& flags, std::string& out) {
  std::size_t width = 0;
  std::vector<std::string> left;
  for (const auto& f : flags) {
    std::string l = (f.short_name ? std::string("-") + f.short_name + ", " : std::string()) + flagSynopsis(f);
    width = std::max(width, l.size());
    left.push_back(std::move(l));
  }
  for (std::size_t i = 0; i < flags.size(); ++i) {
    out += "  " + left[i] + std::string(width - left[i].size() + 2, ' ') + flags[i].help;
    if (flags[i].required) out += " (required)";
    out += "\n";
  }
}

// Global flags a command flag of the same name shadows are listed apart: they work only before the command.
std::string globalFlagHelp(const CommandSpec* spec = nullptr) {
  std::vector<FlagSpec> shown, shadowed;
  for (const auto& g : globalFlags())
    (spec && findFlag(spec->flags, g.name, 0) ? shadowed : shown).push_back(g);
  std::string out = "Global flags (anywhere on the line; flags win over the environment, the environment over\n"
                    "the config file):\n";
  appendFlagHelp(shown, out);
  if (!shadowed.empty()) {
    out += "Global flags this command's flags shadow (give them before the command):\n";
    appendFlagHelp(shadowed, out);
  }
  return out;
}

}  // namespace

void Registry::add(CommandGroup group) {
  KILN_CHECK(this->group(group.name) == nullptr);
  groups_.push_back(std::move(group));
}

const CommandGroup* Registry::group(std::string_view name) const {
  for (const auto& g : groups_)
    if (g.name == name) return &g;
  return nullptr;
}

std::string ParsedCommand::value(const std::string& flag, const std::string& fallback) const {
  auto it = flags.find(flag);
  return it == flags.end() ? fallback : it->second;
}

std::int64_t ParsedCommand::integer(const std::string& flag, std::int64_t fallback) const {
  auto it = flags.find(flag);
  if (it == flags.end()) return fallback;
  std::int64_t n = fallback;
  std::from_chars(it->second.data(), it->second.data() + it->second.size(), n);
  return n;
}

double ParsedCommand::number(const std::string& flag, double fallback) const {
  auto it = flags.find(flag);
  if (it == flags.end()) return fallback;
  double d = fallback;
  std::from_chars(it->second.data(), it->second.data() + it->second.size(), d);
  return d;
}

std::vector<std::string> ParsedCommand::values(const std::string& flag) const {
  auto it = repeated.find(flag);
  return it == repeated.end() ? std::vector<std::string>{} : it->second;
}

std::string ParsedCommand::commandLine() const {
  if (group && spec) return "kilnctl " + fullName(*group, *spec);
  return "kilnctl " + (group ? group->name : std::string());
}

ParseResult parseArgs(const Registry& registry, const std::vector<std::string>& args) {
  const CommandGroup* group = nullptr;
  const CommandSpec* spec = nullptr;
  bool help = false;       // --help / -h / help
  bool help_word = false;  // "help" given as the command
  bool only_positionals = false;
  ParsedCommand cmd;
  std::set<std::string> seen_globals;

  auto hint = [&]() {
    if (spec) return commandHint(*group, *spec);
    if (group) return groupHint(*group);
    return mainHint();
  };
  auto error = [&](std::string message) -> ParseResult { return UsageError{std::move(message), hint()}; };

  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!only_positionals && a == "--") {
      only_positionals = true;
      continue;
    }
    if (!only_positionals && a.size() > 1 && a[0] == '-') {
      std::string name, value, shown;
      char short_name = 0;
      bool inline_value = false;
      if (a.rfind("--", 0) == 0) {
        const auto eq = a.find('=');
        name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
        if (eq != std::string::npos) {
          value = a.substr(eq + 1);
          inline_value = true;
        }
        shown = "--" + name;
      } else if (a.size() == 2) {
        short_name = a[1];
        shown = a;
      } else {
        return error("unknown flag '" + a + "'");
      }
      if (name == "help" || short_name == 'h') {
        if (inline_value) return error("--help takes no value");
        help = true;
        continue;
      }
      const FlagSpec* f = spec ? findFlag(spec->flags, name, short_name) : nullptr;
      const bool is_global = f == nullptr && (f = findFlag(globalFlags(), name, short_name)) != nullptr;
      if (!f) {
        if (!spec && group == nullptr) return error("unknown flag '" + shown + "' (command flags go after the command)");
        return error("unknown flag '" + shown + "'");
      }
      if (f->type == FlagType::kBool) {
        if (inline_value) return error("--" + f->name + " takes no value");
        value = "true";
      } else if (!inline_value) {
        if (i + 1 >= args.size()) return error("--" + f->name + " needs a value");
        value = args[++i];
      }
      if (auto problem = checkValue(*f, value); !problem.empty()) return error(problem);
      if (is_global) {
        if (!seen_globals.insert(f->name).second) return error("--" + f->name + " given twice");
        setGlobal(cmd.global, f->name, value);
      } else if (f->repeated) {
        cmd.flags[f->name] = value;
        cmd.repeated[f->name].push_back(value);
      } else {
        if (cmd.flags.count(f->name)) return error("--" + f->name + " given twice");
        cmd.flags[f->name] = value;
      }
      continue;
    }
    // A word: the group, then the command, then positionals.
    if (!group && !help_word && a == "help") {
      help_word = true;
      help = true;
    } else if (!group) {
      group = registry.group(a);
      if (!group) return error("unknown command '" + a + "'");
      spec = soleCommand(*group);
    } else if (!spec) {
      for (const auto& c : group->commands)
        if (c.name == a) spec = &c;
      if (!spec) return error("unknown command '" + group->name + " " + a + "'");
    } else if (help_word) {
      return error("help takes at most a command, not '" + a + "'");
    } else {
      cmd.args.push_back(a);
    }
  }

  if (help) {
    if (spec) return HelpRequest{commandUsage(*group, *spec)};
    if (group) return HelpRequest{groupUsage(*group)};
    return HelpRequest{mainUsage(registry)};
  }
  if (!group) return error("missing command");
  if (!spec) {
    std::string names;
    for (const auto& c : group->commands) names += (names.empty() ? "" : ", ") + c.name;
    return error("'" + group->name + "' needs a command: " + names);
  }
  if (cmd.args.size() < spec->positionals.size())
    return error("missing argument " + spec->positionals[cmd.args.size()].name);
  if (cmd.args.size() > spec->positionals.size())
    return error("unexpected argument '" + cmd.args[spec->positionals.size()] + "'");
  for (const auto& f : spec->flags)
    if (f.required && !cmd.flags.count(f.name)) return error("missing --" + f.name);
  cmd.group = group;
  cmd.spec = spec;
  return cmd;
}

std::string mainUsage(const Registry& registry) {
  std::string out =
      "kilnctl: the command-line client of Kiln, the firmware rollout and fleet maintenance\n"
      "orchestrator.\n\n"
      "Usage: kilnctl [global flags] COMMAND [flags] [arguments]\n\nCommands:\n";
  std::size_t width = 0;
  for (const auto& g : registry.groups())
    for (const auto& c : g.commands) width = std::max(width, fullName(g, c).size());
  for (const auto& g : registry.groups())
    for (const auto& c : g.commands) {
      const std::string left = fullName(g, c);
      out += "  " + left + std::string(width - left.size() + 2, ' ') + c.summary + "\n";
    }
  out += "\n" + globalFlagHelp();
  out += "\nRun 'kilnctl COMMAND --help' for a command's flags.\n"
         "Exit codes: 0 ok; 1 the call failed (error on stderr); 2 bad usage or bad input.\n";
  return out;
}

std::string groupUsage(const CommandGroup& group) {
  std::string out = "Usage: kilnctl " + group.name + " COMMAND [flags]\n\n" + group.summary + "\n\nCommands:\n";
  std::size_t width = 0;
  for (const auto& c : group.commands) width = std::max(width, c.name.size());
  for (const auto& c : group.commands)
    out += "  " + c.name + std::string(width - c.name.size() + 2, ' ') + c.summary + "\n";
  out += "\nRun 'kilnctl " + group.name + " COMMAND --help' for a command's flags.\n";
  return out;
}

std::string commandUsage(const CommandGroup& group, const CommandSpec& spec) {
  std::string out = "Usage: kilnctl " + fullName(group, spec);
  for (const auto& p : spec.positionals) out += " " + p.name;
  for (const auto& f : spec.flags) out += f.required ? " " + flagSynopsis(f, true) : " [" + flagSynopsis(f, true) + "]";
  out += "\n\n" + spec.summary + "\n";
  if (!spec.positionals.empty()) {
    out += "\nArguments:\n";
    for (const auto& p : spec.positionals) out += "  " + p.name + "  " + p.help + "\n";
  }
  if (!spec.flags.empty()) {
    out += "\nFlags:\n";
    appendFlagHelp(spec.flags, out);
  }
  out += "\n" + globalFlagHelp(&spec);
  return out;
}

int CommandContext::usageError(const std::string& message) {
  err << "kilnctl: " << message << "\n";
  if (command.group && command.spec) err << commandHint(*command.group, *command.spec) << "\n";
  return kExitUsage;
}

int CommandContext::failure(const std::string& message) {
  err << "kilnctl: " << message << "\n";
  return kExitFailed;
}

int runCli(const Registry& registry, const std::vector<std::string>& args, System& system,
           const TransportFactory& make_transport, std::ostream& out, std::ostream& err) {
  ParseResult parsed = parseArgs(registry, args);
  if (auto* h = std::get_if<HelpRequest>(&parsed)) {
    out << h->text;
    return kExitOk;
  }
  if (auto* u = std::get_if<UsageError>(&parsed)) {
    err << "kilnctl: " << u->message << "\n" << u->hint << "\n";
    return kExitUsage;
  }
  const ParsedCommand& cmd = std::get<ParsedCommand>(parsed);
  std::unique_ptr<Transport> transport;
  CommandContext ctx{cmd, nullptr, system, out, err};
  if (!cmd.spec->offline) {
    auto settings = resolveConnection(cmd.global, system);
    if (!settings.ok()) return ctx.usageError(settings.error().message);
    if (cmd.spec->max_call_timeout && settings->timeout > *cmd.spec->max_call_timeout)
      settings->timeout = *cmd.spec->max_call_timeout;
    auto t = make_transport(*settings);
    if (!t.ok()) return ctx.usageError(t.error().message);
    transport = std::move(t.value());
    ctx.transport = transport.get();
  }
  try {
    return cmd.spec->run(ctx);
  } catch (const std::exception& e) {
    return ctx.failure(std::string("internal error: ") + e.what());
  }
}

}  // namespace kiln::cli
