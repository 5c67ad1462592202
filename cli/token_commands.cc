// token create | list | revoke (admin).

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "cli/table.h"
#include "orchestrator/http/client.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

std::string renderCreated(const json& t) {
  std::string out = renderKeyValues({{"id", field(t, "id")},
                                     {"name", field(t, "name")},
                                     {"role", field(t, "role")},
                                     {"host", field(t, "host")},
                                     {"created_at", field(t, "created_at")},
                                     {"token", field(t, "token")}});
  return out + "The token is shown only this once: store it now.\n";
}

std::string renderTokens(const json& page) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : page.value("items", json::array()))
    rows.push_back({field(t, "id"), field(t, "name"), field(t, "role"), field(t, "host"), field(t, "created_at"),
                    field(t, "created_by"), field(t, "revoked_at"), field(t, "expires_at"), field(t, "last_used_at")});
  return renderTable(
      {"ID", "NAME", "ROLE", "HOST", "CREATED_AT", "CREATED_BY", "REVOKED_AT", "EXPIRES_AT", "LAST_USED_AT"}, rows);
}

int create(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  json body = {{"role", cmd.value("role")}, {"name", cmd.value("name")}};
  if (cmd.has("host")) body["host"] = cmd.value("host");
  ApiRequest req;
  req.method = "POST";
  req.path = std::string(kApiPrefix) + "/tokens";
  req.body = body.dump();
  auto token = callJson(ctx, req);
  if (!token) return kExitFailed;
  return printResult(ctx, *token, renderCreated);
}

int list(CommandContext& ctx) {
  ApiRequest req;
  req.path = std::string(kApiPrefix) + "/tokens";
  auto page = callJson(ctx, req);
  if (!page) return kExitFailed;
  return printResult(ctx, *page, renderTokens);
}

int revoke(CommandContext& ctx) {
  ApiRequest req;
  req.method = "DELETE";
  req.path = std::string(kApiPrefix) + "/tokens/" + http::urlEncode(ctx.command.args[0]);
  auto result = callJson(ctx, req);
  if (!result) return kExitFailed;
  return printResult(ctx, *result, [&](const json&) { return "revoked token " + ctx.command.args[0] + "\n"; });
}

}  // namespace

CommandGroup tokenGroup() {
  return {.name = "token",
          .summary = "API tokens (admin).",
          .commands = {
              {.name = "create",
               .summary = "Create a token; prints its secret once",
               .flags = {{.name = "role", .value_name = "R", .help = "viewer, operator, admin, agent, enroll (fleet-wide enrolment: only hosts without an agent) or prejob (the Slurm prolog's pre-job check)",
                          .required = true},
                         {.name = "name", .value_name = "N", .help = "what the token is for", .required = true},
                         {.name = "host", .value_name = "H", .help = "the host of an agent token"}},
               .run = create},
              {.name = "list", .summary = "List tokens (secrets are never shown again)", .run = list},
              {.name = "revoke", .summary = "Revoke a token", .positionals = {{"ID", "token id"}}, .run = revoke},
          }};
}

}  // namespace kiln::cli
