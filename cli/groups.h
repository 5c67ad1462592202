#pragma once
// kilnctl's command groups, one file each. addBuiltinGroups adds them all, in help order;
// a new group (workflow runs, gate, rollout, bundle, reliability) is a new file plus one line
// there.

#include "cli/command.h"

namespace kiln::cli {

CommandGroup fleetGroup();     // fleet generate | import
CommandGroup podsGroup();      // pods list | show
CommandGroup hostsGroup();     // hosts list | show | events | action
CommandGroup capacityGroup();  // capacity plan
CommandGroup tokenGroup();     // token create | list | revoke
CommandGroup workflowGroup();    // workflow list | show | put | versions | history
CommandGroup runGroup();         // run start | show | list | cancel | watch
CommandGroup quarantineGroup();  // quarantine list
CommandGroup gateGroup();        // gate (a single command: kilnctl gate --workflow ...)
CommandGroup bundleGroup();        // bundle create | list | show | compliance
CommandGroup rolloutGroup();       // rollout plan | create | start | ... | show | watch
CommandGroup reliabilityGroup();   // reliability report
CommandGroup interruptionGroup();  // interruption record | list
CommandGroup slurmGroup();         // slurm prolog | health-check

void addBuiltinGroups(Registry& registry);

// Flags every list command shares: --limit, --cursor, --all.
std::vector<FlagSpec> pagingFlags();
// Starts a list request: limit (default 100; 1000 per page with --all unless --limit) and
// cursor from the parsed flags.
ApiRequest listRequest(const ParsedCommand& cmd, const std::string& path);

}  // namespace kiln::cli
