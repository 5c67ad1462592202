// workflow list | show | put | versions | history.

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "cli/table.h"
#include "cli/time_text.h"
#include "orchestrator/http/client.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

std::string workflowPath(const std::string& name) {
  return std::string(kApiPrefix) + "/workflows/" + http::urlEncode(name);
}

std::string renderWorkflowList(const json& page) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& w : page.value("items", json::array()))
    rows.push_back({field(w, "name"), field(w, "version"), field(w, "scope"), field(w, "steps"),
                    field(w, "hash").substr(0, 12), field(w, "source"), field(w, "description")});
  return renderTable({"NAME", "VERSION", "SCOPE", "STEPS", "HASH", "SOURCE", "DESCRIPTION"}, rows);
}

std::string renderWorkflow(const json& w) {
  std::vector<std::pair<std::string, std::string>> pairs = {
      {"name", field(w, "name")},     {"version", field(w, "version")}, {"description", field(w, "description")},
      {"scope", field(w, "scope")},   {"repeat", field(w, "repeat")},   {"soak_between", field(w, "soak_between")},
      {"hash", field(w, "hash")},     {"source", field(w, "source")}};
  if (w.contains("timeout")) pairs.emplace_back("timeout", field(w, "timeout"));
  std::string out = renderKeyValues(pairs);
  std::vector<std::vector<std::string>> params;
  if (w.contains("params") && w["params"].is_object())
    for (const auto& [name, p] : w["params"].items())
      params.push_back({name, field(p, "type"), field(p, "default"), field(p, "description")});
  if (!params.empty()) out += "\nParameters:\n" + renderTable({"NAME", "TYPE", "DEFAULT", "DESCRIPTION"}, params);
  std::vector<std::vector<std::string>> steps;
  for (const auto& s : w.value("steps", json::array())) {
    std::string run;
    for (const auto& a : s.value("run", json::array())) run += (run.empty() ? "" : " ") + cellText(a);
    std::string checks = std::to_string(s.value("checks", json::array()).size());
    steps.push_back({field(s, "id"), field(s, "type"), field(s, "timeout"), field(s, "on_failure"),
                     field(s, "run_on") == "leader" ? "leader" : "", checks, shorten(run, 70)});
  }
  out += "\nSteps:\n" + renderTable({"ID", "TYPE", "TIMEOUT", "ON_FAILURE", "RUN_ON", "CHECKS", "RUN"}, steps);
  return out;
}

int list(CommandContext& ctx) {
  ApiRequest req;
  req.path = std::string(kApiPrefix) + "/workflows";
  auto page = callJson(ctx, req);
  if (!page) return kExitFailed;
  return printResult(ctx, *page, renderWorkflowList);
}

int show(CommandContext& ctx) {
  ApiRequest req;
  req.path = workflowPath(ctx.command.args[0]);
  auto w = callJson(ctx, req);
  if (!w) return kExitFailed;
  if (ctx.command.has("yaml") && !ctx.json()) {
    const std::string yaml = field(*w, "yaml");
    ctx.out << yaml << (yaml.empty() || yaml.back() == '\n' ? "" : "\n");
    return kExitOk;
  }
  return printResult(ctx, *w, renderWorkflow);
}

// The server's 422 for an invalid workflow: one line per problem, "FILE:LINE:COL: PATH: MESSAGE"
// like a compiler, so editors and CI logs link to the place.
std::string renderInvalidWorkflow(const std::string& file, const json& error) {
  const json& e = error["error"];
  const json details = e.value("details", json::object());
  const json fields = details.is_object() ? details.value("fields", json::array()) : json::array();
  std::string out = "kilnctl: " + file + " is not a valid workflow (" + std::to_string(fields.size()) +
                    (fields.size() == 1 ? " problem):\n" : " problems):\n");
  for (const auto& f : fields) {
    std::string message = field(f, "message");
    std::string where = file;
    // The server's message starts with "LINE:COL: " when it knows the place.
    const auto first = message.find(':');
    const auto second = first == std::string::npos ? std::string::npos : message.find(':', first + 1);
    const auto digits = [](const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; };
    if (second != std::string::npos && digits(message.substr(0, first)) &&
        digits(message.substr(first + 1, second - first - 1))) {
      where += ":" + message.substr(0, second);
      message = message.substr(second + 1);
      if (!message.empty() && message[0] == ' ') message.erase(0, 1);
    }
    const std::string path = field(f, "path");
    out += where + ": " + (path.empty() ? "" : path + ": ") + message + "\n";
  }
  if (fields.empty()) out += file + ": " + field(e, "message") + "\n";
  return out;
}

int put(CommandContext& ctx) {
  const std::string& name = ctx.command.args[0];
  const std::string& file = ctx.command.args[1];
  auto yaml = ctx.system.read_file(file);
  if (!yaml.ok()) return ctx.usageError(yaml.error().message);
  ApiRequest req;
  req.method = "PUT";
  req.path = workflowPath(name);
  req.body = *yaml;
  req.content_type = "application/yaml";
  auto response = ctx.transport->send(req);
  if (!response.ok()) return ctx.failure(response.error().message);
  if (response->status == 422) {
    json doc = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
    if (doc.is_object() && doc.contains("error") && doc["error"].is_object()) {
      ctx.err << renderInvalidWorkflow(file == "-" ? "<stdin>" : file, doc);
      return kExitFailed;
    }
  }
  if (response->status >= 400) {
    ctx.err << renderApiError(response->status, response->body);
    return kExitFailed;
  }
  json doc = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return ctx.failure("the server's answer is not a JSON object");
  return printResult(ctx, doc, [](const json& r) {
    const bool changed = r.is_object() && r.contains("changed") && r["changed"] == true;
    return "workflow " + field(r, "name") + ": " + (changed ? "stored new version " : "unchanged, version ") +
           field(r, "hash") + "\n";
  });
}

// GET /workflows/{name}/versions as a table, newest first: CURRENT marks the version new runs
// use, FILE the one last loaded from the workflow's file.
std::string renderWorkflowVersions(const json& page) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& v : page.value("items", json::array()))
    rows.push_back({field(v, "hash"), v.contains("current") && v["current"] == true ? "yes" : "",
                    v.contains("file_loaded") && v["file_loaded"] == true ? "yes" : "", field(v, "created_at"),
                    field(v, "created_by"), field(v, "source")});
  return renderTable({"HASH", "CURRENT", "FILE", "CREATED", "BY", "SOURCE"}, rows);
}

// The workflow's `workflow.put` audit records, newest first: who, when, old -> new hash and
// the YAML's unified diff.
std::string renderWorkflowHistory(const json& page) {
  std::string out;
  for (const auto& a : page.value("items", json::array())) {
    const json d = a.contains("details") && a["details"].is_object() ? a["details"] : json::object();
    const std::string who = field(a, "actor_name") == field(a, "actor")
                                ? field(a, "actor")
                                : field(a, "actor_name") + " (" + field(a, "actor") + ")";
    const std::string from =
        d.contains("previous_hash") && d["previous_hash"].is_string() ? d["previous_hash"].get<std::string>() : "(new)";
    out +=
        field(a, "at") + "  " + who + "  " + from + " -> " + field(d, "hash") + "  from " + field(d, "source") + "\n";
    // Records written before issue 31 carry no diff.
    const std::string diff = d.contains("diff") && d["diff"].is_string() ? d["diff"].get<std::string>() : "";
    out += diff;
    if (!diff.empty() && diff.back() != '\n') out += "\n";
    if (d.contains("diff_truncated") && d["diff_truncated"] == true) out += "... (diff truncated)\n";
    out += "\n";
  }
  if (out.empty()) out = "no recorded change\n";
  return out;
}

int versions(CommandContext& ctx) {
  auto page =
      fetchList(ctx, listRequest(ctx.command, workflowPath(ctx.command.args[0]) + "/versions"), ctx.command.has("all"));
  if (!page) return kExitFailed;
  printResult(ctx, *page, renderWorkflowVersions);
  noteMorePages(ctx, *page);
  return kExitOk;
}

int history(CommandContext& ctx) {
  ApiRequest req = listRequest(ctx.command, std::string(kApiPrefix) + "/audit");
  req.setQuery("action", "workflow.put");
  req.setQuery("target", ctx.command.args[0]);
  auto page = fetchList(ctx, req, ctx.command.has("all"));
  if (!page) return kExitFailed;
  printResult(ctx, *page, renderWorkflowHistory);
  noteMorePages(ctx, *page);
  return kExitOk;
}

}  // namespace

CommandGroup workflowGroup() {
  return {.name = "workflow",
          .summary = "Workflows: the YAML step lists that burn-in, validation, upgrades and health checks run.",
          .commands = {
              {.name = "list", .summary = "List workflows and their current versions", .run = list},
              {.name = "show",
               .summary = "Show a workflow's parameters and steps (--yaml: the stored YAML as is)",
               .positionals = {{"NAME", "workflow name, e.g. l11-burn-in"}},
               .flags = {{.name = "yaml", .type = FlagType::kBool, .help = "print the stored YAML document"}},
               .run = show},
              {.name = "put",
               .summary = "Store a new version of a workflow from a YAML file (admin); problems print as FILE:LINE:COL",
               .positionals = {{"NAME", "workflow name (must match the document's name)"},
                               {"FILE", "YAML file, or - for standard input"}},
               .run = put},
              {.name = "versions",
               .summary = "List a workflow's stored versions, newest first: the current one, the one last loaded "
                          "from its file",
               .positionals = {{"NAME", "workflow name"}},
               .flags = pagingFlags(),
               .run = versions},
              {.name = "history",
               .summary = "Show who changed a workflow and when, with each change's diff (operator: the audit log)",
               .positionals = {{"NAME", "workflow name"}},
               .flags = pagingFlags(),
               .run = history},
          }};
}

}  // namespace kiln::cli
