// fleet generate (offline) and fleet import.

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "cli/table.h"
#include "cli/yaml_writer.h"
#include "orchestrator/api/fleet_document.h"
#include "orchestrator/core/fleet_generator.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

// Ten times the fleet Kiln is built for (docs/FACTS.md: ~1,000,000 GPUs); keeps the generated
// document within a few hundred MB.
constexpr double kMaxGeneratedGpus = 10'000'000;

std::string withThousands(std::int64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

int generate(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  core::FleetGenRequest req;
  req.gpus = cmd.integer("gpus", 0);
  req.clemente_share = cmd.number("clemente-share", req.clemente_share);
  const json fleet = core::generateFleet(req);
  // The generator is ours, but what we hand to `fleet import` must be importable.
  auto spec = api::parseFleetSpec(fleet);
  if (!spec.ok()) return ctx.failure("generated fleet is invalid: " + spec.error().message);
  const std::string text = cmd.has("yaml") ? toYaml(fleet) : fleet.dump(2) + "\n";
  if (!cmd.has("output")) {
    ctx.out << text;
    return kExitOk;
  }
  auto written = ctx.system.write_file(cmd.value("output"), text);
  if (!written.ok()) return ctx.usageError(written.error().message);
  ctx.err << "wrote " << cmd.value("output") << ": " << withThousands(static_cast<std::int64_t>(spec->pods.size()))
          << " pods, " << withThousands(static_cast<std::int64_t>(spec->pods.size()) * 72) << " GPUs\n";
  return kExitOk;
}

std::string contentTypeFor(const std::string& path, const std::string& body) {
  auto endsWith = [&](const std::string& suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (endsWith(".json")) return "application/json";
  if (endsWith(".yaml") || endsWith(".yml")) return "application/yaml";
  const auto first = body.find_first_not_of(" \t\r\n");
  return first != std::string::npos && (body[first] == '{' || body[first] == '[') ? "application/json"
                                                                                    : "application/yaml";
}

std::string renderImport(const json& summary) {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const char* key : {"sites_created", "buildings_created", "pods_created", "pods_existing", "racks_created",
                          "hosts_created", "switch_trays_created", "gpus_created", "components_created"})
    if (summary.contains(key)) rows.emplace_back(key, field(summary, key));
  std::string out = renderKeyValues(rows);
  if (field(summary, "pods_created") == "0") out += "nothing new: every pod already exists\n";
  return out;
}

int import(CommandContext& ctx) {
  const std::string& path = ctx.command.args[0];
  auto body = ctx.system.read_file(path);
  if (!body.ok()) return ctx.usageError(body.error().message);
  if (body->find_first_not_of(" \t\r\n") == std::string::npos) return ctx.usageError(path + " is empty");
  ApiRequest req;
  req.method = "POST";
  req.path = std::string(kApiPrefix) + "/fleet/import";
  req.content_type = contentTypeFor(path, *body);
  req.body = std::move(body.value());
  auto summary = callJson(ctx, req);
  if (!summary) return kExitFailed;
  return printResult(ctx, *summary, renderImport);
}

}  // namespace

CommandGroup fleetGroup() {
  return {
      .name = "fleet",
      .summary = "Fleet files: generate a synthetic one, import one into Kiln.",
      .commands = {
          {.name = "generate",
           .summary = "Write a synthetic fleet file (buildings of 288 pods, catalina/clemente mix); works offline",
           .flags = {{.name = "gpus", .type = FlagType::kInt, .value_name = "N",
                      .help = "GPUs to generate, rounded up to pods of 72", .required = true, .min = 1,
                      .max = kMaxGeneratedGpus},
                     {.name = "output", .value_name = "FILE", .help = "write to FILE instead of stdout",
                      .short_name = 'o'},
                     {.name = "clemente-share", .type = FlagType::kNumber, .value_name = "X",
                      .help = "share of clemente (GB300) pods, 0-1 (default 0.5); the rest catalina", .min = 0,
                      .max = 1},
                     {.name = "yaml", .type = FlagType::kBool, .help = "write YAML instead of JSON"}},
           .offline = true,
           .run = generate},
          {.name = "import",
           .summary = "Import a fleet file, YAML or JSON (admin); idempotent, all or nothing",
           .positionals = {{"FILE", "the fleet file; - reads stdin"}},
           .run = import},
      }};
}

}  // namespace kiln::cli
