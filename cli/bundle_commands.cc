// bundle create | list | show | compliance.

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "cli/rollout_view.h"
#include "cli/table.h"
#include "orchestrator/http/client.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

std::string bundlePath(const std::string& ref) { return std::string(kApiPrefix) + "/bundles/" + http::urlEncode(ref); }

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// By the file's extension; otherwise (standard input, other names) JSON when the document
// starts with '{'.
std::string contentTypeOf(const std::string& file, const std::string& text) {
  if (endsWith(file, ".json")) return "application/json";
  if (endsWith(file, ".yaml") || endsWith(file, ".yml")) return "application/yaml";
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{' ? "application/json" : "application/yaml";
}

int create(CommandContext& ctx) {
  const std::string& file = ctx.command.args[0];
  auto text = ctx.system.read_file(file);
  if (!text.ok()) return ctx.usageError(text.error().message);
  ApiRequest req;
  req.method = "POST";
  req.path = std::string(kApiPrefix) + "/bundles";
  req.body = *text;
  req.content_type = contentTypeOf(file, *text);
  auto response = ctx.transport->send(req);
  if (!response.ok()) return ctx.failure(response.error().message);
  if (response->status >= 400) {
    ctx.err << renderApiError(response->status, response->body);
    return kExitFailed;
  }
  json b = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  if (!b.is_object()) return ctx.failure("the server's answer is not a bundle");
  // The server says what it did: created, updated (an unused bundle corrected in place) or
  // unchanged; a server from before `outcome` only tells created (201) from the rest.
  std::string outcome = field(b, "outcome");
  if (outcome.empty()) outcome = response->status == 201 ? "created" : "stored";
  return printResult(ctx, b, [outcome](const json& doc) {
    return field(doc, "id") + " " + field(doc, "name") + "@" + field(doc, "version") + " " + outcome + "\n";
  });
}

int list(CommandContext& ctx) {
  ApiRequest req;
  req.path = std::string(kApiPrefix) + "/bundles";
  auto page = callJson(ctx, req);
  if (!page) return kExitFailed;
  return printResult(ctx, *page, renderBundleList);
}

int show(CommandContext& ctx) {
  ApiRequest req;
  req.path = bundlePath(ctx.command.args[0]);
  auto b = callJson(ctx, req);
  if (!b) return kExitFailed;
  return printResult(ctx, *b, renderBundle);
}

int compliance(CommandContext& ctx) {
  ApiRequest req;
  req.path = bundlePath(ctx.command.args[0]) + "/compliance";
  for (const char* filter : {"site", "building", "platform", "pod"})
    if (ctx.command.has(filter)) req.setQuery(filter, ctx.command.value(filter));
  auto report = callJson(ctx, req);
  if (!report) return kExitFailed;
  return printResult(ctx, *report, renderCompliance);
}

}  // namespace

CommandGroup bundleGroup() {
  const std::vector<PositionalSpec> ref = {{"REF", "bundle id like b-3, or name@version"}};
  return {.name = "bundle",
          .summary = "Bundles: named sets of firmware and driver target versions with their artifacts.",
          .commands = {
              {.name = "create",
               .summary = "Store a bundle from a YAML or JSON file (operator); the same content again is a no-op",
               .positionals = {{"FILE", "bundle file (.yaml, .yml or .json), or - for standard input"}},
               .run = create},
              {.name = "list", .summary = "List bundles, newest first", .run = list},
              {.name = "show", .summary = "Show a bundle's components and prerequisites", .positionals = ref, .run = show},
              {.name = "compliance",
               .summary = "Which pods are compliant with a bundle, need it, or cannot take it, and why",
               .positionals = ref,
               .flags = {{.name = "site", .value_name = "S", .help = "only pods of this site"},
                         {.name = "building", .value_name = "B", .help = "only pods of this building"},
                         {.name = "platform", .value_name = "P", .help = "only pods of this platform"},
                         {.name = "pod", .value_name = "P", .help = "only this pod"}},
               .run = compliance},
          }};
}

}  // namespace kiln::cli
