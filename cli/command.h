#pragma once
// kilnctl's command layer: command groups ("pods", "hosts", ...) hold commands described by
// specs (positionals, typed flags, a run function). parseArgs turns argv into a
// ParsedCommand (pure); runCli runs it against an injected Transport and System.
//
// Adding a command group: write a function returning a CommandGroup in its own file and add it
// in addBuiltinGroups (cli/groups.h). The Registry is an ordinary object built by main: no
// static-initialisation registration.

#include <cstdint>
#include <chrono>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cli/settings.h"
#include "cli/system.h"
#include "cli/transport.h"
#include "common/result.h"

namespace kiln::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the call failed: HTTP 4xx/5xx or unreachable
inline constexpr int kExitUsage = 2;   // bad usage or bad input

enum class FlagType {
  kBool,      // no value
  kString,
  kInt,       // a whole number, checked against min/max when given
  kNumber,    // a decimal number, checked against min/max when given
  kKeyValue,  // "key=value" with a non-empty key
};

struct FlagSpec {
  std::string name;  // without dashes: "clemente-share"
  FlagType type = FlagType::kString;
  std::string value_name;  // shown in usage: "N", "FILE"
  std::string help;
  char short_name = 0;  // 'o' for -o
  bool required = false;
  std::optional<double> min, max;
  bool repeated = false;  // may be given more than once: ParsedCommand::values has every value
};

struct PositionalSpec {
  std::string name;  // "ID"
  std::string help;
};

struct CommandContext;
using CommandFn = std::function<int(CommandContext&)>;

struct CommandSpec {
  std::string name;  // "list"; "" for a group that is a single command ("kilnctl gate --flags")
  std::string summary;
  std::vector<PositionalSpec> positionals;  // all required
  std::vector<FlagSpec> flags;
  bool offline = false;  // needs no server (no connection settings, no transport)
  // The most one HTTP call may take, whatever the global --timeout says (a Slurm prolog must
  // finish inside Slurm's limit even when kilnd accepts connections and never answers).
  std::optional<std::chrono::milliseconds> max_call_timeout;
  CommandFn run;
};

struct CommandGroup {
  std::string name;  // "pods"
  std::string summary;
  std::vector<CommandSpec> commands;
};

// Command groups in the order they were added. Not thread-safe while being filled.
class Registry {
 public:
  // Pre-condition: no group of the same name yet (KILN_CHECK).
  void add(CommandGroup group);
  const CommandGroup* group(std::string_view name) const;
  const std::vector<CommandGroup>& groups() const { return groups_; }

 private:
  std::vector<CommandGroup> groups_;
};

// A command line that parsed: every flag known and of its type, every positional present.
struct ParsedCommand {
  const CommandGroup* group = nullptr;
  const CommandSpec* spec = nullptr;
  std::vector<std::string> args;             // positionals in spec order
  std::map<std::string, std::string> flags;  // given command flags; kBool flags hold "true"
  std::map<std::string, std::vector<std::string>> repeated;  // every value of a repeated flag, in order
  GlobalOptions global;

  bool has(const std::string& flag) const { return flags.count(flag) > 0; }
  std::string value(const std::string& flag, const std::string& fallback = "") const;
  // Pre-condition: the flag is kInt / kNumber (its value was checked by parseArgs).
  std::int64_t integer(const std::string& flag, std::int64_t fallback) const;
  double number(const std::string& flag, double fallback) const;
  // Every value of a `repeated` flag in command-line order (empty when not given).
  std::vector<std::string> values(const std::string& flag) const;
  // "kilnctl pods list"
  std::string commandLine() const;
};

struct HelpRequest {
  std::string text;  // for stdout, exit 0
};

struct UsageError {
  std::string message;  // one line, without "kilnctl: "
  std::string hint;     // "Run 'kilnctl pods list --help' for usage."
};

using ParseResult = std::variant<ParsedCommand, HelpRequest, UsageError>;

// Parses argv without argv[0]. Global flags (--url, --token, --token-file, --ca-file,
// --config, --timeout, --json) may stand anywhere; command flags after the command. After the
// command, a command flag of the same name as a global one wins (`gate --timeout 3h`).
// A group whose only command has an empty name is that command: "kilnctl gate --flags".
// "--name value", "--name=value" and short "-o value" forms; "--" ends the flags.
// `help [GROUP [COMMAND]]`, --help and -h give a HelpRequest. Pure; the result points into
// `registry`, which must outlive it.
ParseResult parseArgs(const Registry& registry, const std::vector<std::string>& args);

std::string mainUsage(const Registry& registry);
std::string groupUsage(const CommandGroup& group);
std::string commandUsage(const CommandGroup& group, const CommandSpec& spec);

// What a running command gets. `transport` is null for offline commands.
struct CommandContext {
  const ParsedCommand& command;
  Transport* transport;
  System& system;
  std::ostream& out;
  std::ostream& err;

  bool json() const { return command.global.json; }
  // Prints "kilnctl: MESSAGE" and the command's usage hint to err; returns kExitUsage.
  int usageError(const std::string& message);
  // Prints "kilnctl: MESSAGE" to err; returns kExitFailed.
  int failure(const std::string& message);
};

// Builds the transport for a command that needs the server. Errors print as usage errors.
using TransportFactory = std::function<Result<std::unique_ptr<Transport>>(const ConnectionSettings&)>;

// Parses, resolves connection settings, runs; returns the process exit code. Catches
// exceptions escaping a command (printed, exit 1).
int runCli(const Registry& registry, const std::vector<std::string>& args, System& system,
           const TransportFactory& make_transport, std::ostream& out, std::ostream& err);

}  // namespace kiln::cli
