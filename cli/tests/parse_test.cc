#include <gtest/gtest.h>

#include "cli/command.h"
#include "cli/groups.h"
#include "cli/tests/test_support.h"

namespace kiln::cli {
namespace {

using testing::CliHarness;
using testing::lineCount;

class ParseArgsTest : public ::testing::Test {
 protected:
  ParseArgsTest() { addBuiltinGroups(registry_); }

  ParsedCommand parsed(const std::vector<std::string>& args) {
    auto r = parseArgs(registry_, args);
    if (auto* u = std::get_if<UsageError>(&r)) ADD_FAILURE() << u->message;
    if (std::holds_alternative<HelpRequest>(r)) ADD_FAILURE() << "unexpected help";
    return std::holds_alternative<ParsedCommand>(r) ? std::get<ParsedCommand>(r) : ParsedCommand{};
  }

  Registry registry_;
};

TEST_F(ParseArgsTest, ReadsCommandPositionalsAndTypedFlags) {
  auto c = parsed({"hosts", "action", "prn-h01", "override", "--reason", "bad fan", "--to=available", "--json"});
  ASSERT_NE(c.spec, nullptr);
  EXPECT_EQ(c.group->name, "hosts");
  EXPECT_EQ(c.spec->name, "action");
  EXPECT_EQ(c.args, (std::vector<std::string>{"prn-h01", "override"}));
  EXPECT_EQ(c.value("reason"), "bad fan");
  EXPECT_EQ(c.value("to"), "available");
  EXPECT_TRUE(c.global.json);
  EXPECT_EQ(c.commandLine(), "kilnctl hosts action");
}

TEST_F(ParseArgsTest, AcceptsGlobalFlagsBeforeAndAfterTheCommand) {
  auto c = parsed({"--url", "https://kiln:8443", "pods", "list", "--token", "t0k", "--limit", "5", "--all"});
  EXPECT_EQ(c.global.url, "https://kiln:8443");
  EXPECT_EQ(c.global.token, "t0k");
  EXPECT_EQ(c.integer("limit", 100), 5);
  EXPECT_TRUE(c.has("all"));
  EXPECT_FALSE(c.has("site"));
}

TEST_F(ParseArgsTest, ReadsShortOutputFlagAndNumbers) {
  auto c = parsed({"fleet", "generate", "--gpus", "1000000", "-o", "fleet.json", "--clemente-share", "0.25",
                   "--timeout", "2.5"});
  EXPECT_EQ(c.integer("gpus", 0), 1000000);
  EXPECT_EQ(c.value("output"), "fleet.json");
  EXPECT_DOUBLE_EQ(c.number("clemente-share", 0.5), 0.25);
  EXPECT_DOUBLE_EQ(*c.global.timeout_seconds, 2.5);
}

TEST_F(ParseArgsTest, DoubleDashMakesTheRestPositional) {
  auto c = parsed({"pods", "show", "--", "-odd-id"});
  EXPECT_EQ(c.args, (std::vector<std::string>{"-odd-id"}));
}

TEST_F(ParseArgsTest, HelpInEveryFormIsAHelpRequest) {
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  } cases[] = {
      {{"help"}, "Usage: kilnctl [global flags]"},
      {{"--help"}, "Usage: kilnctl [global flags]"},
      {{"-h"}, "Usage: kilnctl [global flags]"},
      {{"pods", "--help"}, "Usage: kilnctl pods COMMAND"},
      {{"help", "pods"}, "Usage: kilnctl pods COMMAND"},
      {{"pods", "list", "--help"}, "Usage: kilnctl pods list [--site NAME]"},
      {{"help", "fleet", "generate"}, "Usage: kilnctl fleet generate --gpus N [-o"},
      {{"hosts", "action", "-h"}, "Usage: kilnctl hosts action ID ACTION"},
  };
  for (const auto& c : cases) {
    auto r = parseArgs(registry_, c.args);
    ASSERT_TRUE(std::holds_alternative<HelpRequest>(r)) << c.args[0];
    EXPECT_NE(std::get<HelpRequest>(r).text.find(c.expect), std::string::npos) << std::get<HelpRequest>(r).text;
  }
}

TEST_F(ParseArgsTest, MainUsageListsEveryCommandAndTheExitCodes) {
  const std::string text = mainUsage(registry_);
  for (const char* cmd : {"fleet generate", "fleet import", "pods list", "pods show", "hosts list", "hosts show",
                          "hosts events", "hosts action", "capacity plan", "token create", "token list",
                          "token revoke", "--token-file FILE", "KILN_URL", "Exit codes"})
    EXPECT_NE(text.find(cmd), std::string::npos) << cmd;
}

TEST(KilnctlHelpTest, HelpPrintsToStdoutAndExitsZero) {
  CliHarness h;
  auto r = h.run({"pods", "list", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find("--label K=V"), std::string::npos);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(h.transports_made, 0);
}

struct UsageCase {
  std::vector<std::string> args;
  std::string message;  // expected in the error line
  std::string hint;     // expected in the hint line
};

TEST(KilnctlUsageErrorTest, EveryUsageErrorExitsTwoWithOneLineAndAHint) {
  const UsageCase cases[] = {
      {{}, "missing command", "kilnctl help"},
      {{"bogus"}, "unknown command 'bogus'", "kilnctl help"},
      {{"pods"}, "'pods' needs a command: list, show", "kilnctl pods --help"},
      {{"pods", "bogus"}, "unknown command 'pods bogus'", "kilnctl pods --help"},
      {{"pods", "list", "--bogus"}, "unknown flag '--bogus'", "kilnctl pods list --help"},
      {{"pods", "list", "-x"}, "unknown flag '-x'", "kilnctl pods list --help"},
      {{"--limit", "5", "pods", "list"}, "unknown flag '--limit' (command flags go after the command)", "kilnctl help"},
      {{"pods", "show"}, "missing argument ID", "kilnctl pods show --help"},
      {{"pods", "show", "a", "b"}, "unexpected argument 'b'", "kilnctl pods show --help"},
      {{"hosts", "action", "h1"}, "missing argument ACTION", "kilnctl hosts action --help"},
      {{"fleet", "generate"}, "missing --gpus", "kilnctl fleet generate --help"},
      {{"fleet", "generate", "--gpus", "abc"}, "--gpus needs a whole number, not 'abc'", "fleet generate --help"},
      {{"fleet", "generate", "--gpus", "12x"}, "--gpus needs a whole number, not '12x'", "fleet generate --help"},
      {{"fleet", "generate", "--gpus", "0"}, "--gpus must be from 1 to", "fleet generate --help"},
      {{"fleet", "generate", "--gpus", "-72"}, "--gpus must be from 1 to", "fleet generate --help"},
      {{"fleet", "generate", "--gpus"}, "--gpus needs a value", "fleet generate --help"},
      {{"fleet", "generate", "--gpus", "72", "--clemente-share", "1.5"}, "--clemente-share must be from 0 to 1",
       "fleet generate --help"},
      {{"fleet", "generate", "--gpus", "72", "--clemente-share", "half"}, "--clemente-share needs a number",
       "fleet generate --help"},
      {{"pods", "list", "--limit", "0"}, "--limit must be from 1 to 1000", "pods list --help"},
      {{"pods", "list", "--limit", "1001"}, "--limit must be from 1 to 1000", "pods list --help"},
      {{"pods", "list", "--label", "novalue"}, "--label needs KEY=VALUE", "pods list --help"},
      {{"pods", "list", "--label", "=x"}, "--label needs KEY=VALUE", "pods list --help"},
      {{"pods", "list", "--all=yes"}, "--all takes no value", "pods list --help"},
      {{"pods", "list", "--site", "a", "--site", "b"}, "--site given twice", "pods list --help"},
      {{"--json", "pods", "list", "--json"}, "--json given twice", "pods list --help"},
      {{"capacity", "plan"}, "missing --active-gpus", "capacity plan --help"},
      {{"capacity", "plan", "--active-gpus", "many"}, "--active-gpus needs a whole number", "capacity plan --help"},
      {{"capacity", "plan", "--active-gpus", "64", "--reserve-fraction", "x"}, "--reserve-fraction needs a number",
       "capacity plan --help"},
      {{"token", "create", "--role", "admin"}, "missing --name", "token create --help"},
      {{"token", "revoke"}, "missing argument ID", "token revoke --help"},
      {{"pods", "list", "--timeout", "0"}, "--timeout must be from 0.1 to 86400", "pods list --help"},
      {{"help", "pods", "list", "extra"}, "help takes at most a command", "pods list --help"},
      {{"pods", "list", "--help=1"}, "--help takes no value", "pods list --help"},
      // Bad input found after parsing: files, URL, settings.
      {{"fleet", "import", "missing.yaml"}, "cannot read missing.yaml", "fleet import --help"},
      {{"fleet", "import", "empty.yaml"}, "empty.yaml is empty", "fleet import --help"},
      {{"fleet", "generate", "--gpus", "72", "-o", "/readonly/f.json"}, "cannot write /readonly/f.json",
       "fleet generate --help"},
      {{"--url", "ftp://kiln", "pods", "list"}, "must start with http:// or https://", "pods list --help"},
      {{"--config", "nope.yaml", "pods", "list"}, "config file: cannot read nope.yaml", "pods list --help"},
      {{"--token", "a", "--token-file", "t", "pods", "list"}, "--token or --token-file, not both", "pods list --help"},
      {{"--token-file", "missing.token", "token", "list"}, "token file: cannot read missing.token",
       "token list --help"},
  };
  for (const auto& c : cases) {
    CliHarness h;
    h.fs.files["empty.yaml"] = "\n  \n";
    auto r = h.run(c.args);
    std::string line;
    for (const auto& a : c.args) line += a + " ";
    SCOPED_TRACE("kilnctl " + line);
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(lineCount(r.err), 2) << r.err;
    EXPECT_EQ(r.err.rfind("kilnctl: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    const std::string hint_line = r.err.substr(r.err.find('\n') + 1);
    EXPECT_NE(hint_line.find(c.hint), std::string::npos) << r.err;
    EXPECT_TRUE(h.transport.requests.empty());
  }
}

}  // namespace
}  // namespace kiln::cli
