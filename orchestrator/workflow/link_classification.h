#pragma once
// L11 burn-in: telling transient NVLink faults from persistent ones (docs/FACTS.md: "transient vs
// persistent link faults must be told apart"). A link that fails the initial test is retested;
// if it passes `required_retest_passes` retests in a row (default 2) the fault was transient:
// it is recorded and the host passes. If it fails any retest the fault is persistent: the host
// fails and the link is named. Pure functions, thread-safe.

#include <string>
#include <vector>

namespace kiln::workflow {

enum class LinkClass {
  kHealthy,     // the initial test passed
  kTransient,   // failed, then passed every required retest
  kPersistent,  // failed, then failed a retest
  kUndecided,   // failed, and fewer retests than required have run (all passed so far)
};

const char* linkClassName(LinkClass c);

// `results[0]` is the initial test, the rest are retests in order (true = passed).
// Pre-condition: results is not empty; required_retest_passes >= 1. Results after the decision
// (a retest beyond the required ones) are ignored.
LinkClass classifyLink(const std::vector<bool>& results, int required_retest_passes = 2);

// How many more retests the link needs before it is decided (0 once decided).
int retestsNeeded(const std::vector<bool>& results, int required_retest_passes = 2);

// One link's history: `label` like "gpu 2 link 7" (CheckOutcome::failed_at uses the same words).
struct LinkHistory {
  std::string label;
  std::vector<bool> results;
};

struct HostLinkVerdict {
  bool passed = false;      // no persistent and no undecided link
  bool decided = false;     // no undecided link
  std::vector<std::string> transient;   // recorded, do not fail the host
  std::vector<std::string> persistent;  // fail the host
  std::vector<std::string> undecided;   // need more retests
  std::string message;  // "persistent NVLink faults: gpu 2 link 7; transient (recorded): ..."
};

HostLinkVerdict classifyHostLinks(const std::vector<LinkHistory>& links,
                                  int required_retest_passes = 2);

}  // namespace kiln::workflow
