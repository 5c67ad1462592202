#pragma once
// What `rollout plan` and `rollout create` send: the pod selector and the rollout policy built
// from flags (and an optional policy file), as the POST /api/v1/rollouts body. Pure apart from
// reading the policy file through the injected System.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "common/result.h"

namespace kiln::cli {

// --site, --building, --platform, --pod (each repeatable and/or a comma list), --label K=V
// (repeatable).
std::vector<FlagSpec> selectorFlags();

// --canary, --waves, --soak, --max-concurrent, --max-down | --max-percent-down, --allocated,
// --failure-budget | --failure-budget-percent, --max-rebooting, --order, --policy-file.
std::vector<FlagSpec> policyFlags();

// {"sites": [...], "buildings": [...], "platforms": [...], "pods": [...], "labels": {...}} with
// only the keys whose flags were given (an empty object selects every pod). Names keep their
// command-line order; a name given twice is kept once. Errors (kInvalidArgument, a usage-error
// message): an empty name in a comma list, a label key given twice with different values.
Result<nlohmann::json> selectorFromFlags(const ParsedCommand& cmd);

// The policy object: the --policy-file document (YAML or JSON; an object, or an object with a
// `policy` key) when given, then each policy flag overrides its field (--max-down and
// --max-percent-down replace capacity_floor whole, --failure-budget and
// --failure-budget-percent replace failure_budget whole). Fields left out take the server's
// defaults. Errors (kInvalidArgument): an unreadable or malformed file, a bad --waves or
// --soak value, or both flags of an either-or pair.
Result<nlohmann::json> policyFromFlags(const ParsedCommand& cmd, const System& system);

// POST /api/v1/rollouts with {bundle: --bundle, selector, policy} plus `dry_run: true` when
// `dry_run`, else `start: true` when --start was given.
Result<ApiRequest> rolloutRequest(const ParsedCommand& cmd, const System& system, bool dry_run);

}  // namespace kiln::cli
