// quarantine list.

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "cli/run_view.h"

namespace kiln::cli {
namespace {

int list(CommandContext& ctx) {
  ApiRequest req;
  req.path = std::string(kApiPrefix) + "/quarantine";
  auto page = callJson(ctx, req);
  if (!page) return kExitFailed;
  return printResult(ctx, *page, renderQuarantine);
}

}  // namespace

CommandGroup quarantineGroup() {
  return {.name = "quarantine",
          .summary = "The quarantine queue: repaired hosts waiting to pass validation before they rejoin the pool.",
          .commands = {
              {.name = "list",
               .summary = "Hosts in quarantine, longest first: time in quarantine, repairs, repeat offenders, last "
                          "failure, validation progress",
               .run = list},
          }};
}

}  // namespace kiln::cli
