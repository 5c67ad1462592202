#include "orchestrator/workflow/link_classification.h"

#include "common/result.h"

namespace kiln::workflow {

const char* linkClassName(LinkClass c) {
  switch (c) {
    case LinkClass::kHealthy: return "healthy";
    case LinkClass::kTransient: return "transient";
    case LinkClass::kPersistent: return "persistent";
    case LinkClass::kUndecided: return "undecided";
  }
  return "undecided";
}

LinkClass classifyLink(const std::vector<bool>& results, int required_retest_passes) {
  KILN_CHECK(!results.empty());
  KILN_CHECK(required_retest_passes >= 1);
  if (results[0]) return LinkClass::kHealthy;
  int passes = 0;
  for (std::size_t i = 1; i < results.size(); ++i) {
    if (!results[i]) return LinkClass::kPersistent;
    if (++passes == required_retest_passes) return LinkClass::kTransient;
  }
  return LinkClass::kUndecided;
}

int retestsNeeded(const std::vector<bool>& results, int required_retest_passes) {
  if (classifyLink(results, required_retest_passes) != LinkClass::kUndecided) return 0;
  return required_retest_passes - static_cast<int>(results.size() - 1);
}

namespace {
std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}
}  // namespace

HostLinkVerdict classifyHostLinks(const std::vector<LinkHistory>& links,
                                  int required_retest_passes) {
  HostLinkVerdict v;
  for (const auto& l : links) {
    switch (classifyLink(l.results, required_retest_passes)) {
      case LinkClass::kHealthy: break;
      case LinkClass::kTransient: v.transient.push_back(l.label); break;
      case LinkClass::kPersistent: v.persistent.push_back(l.label); break;
      case LinkClass::kUndecided: v.undecided.push_back(l.label); break;
    }
  }
  v.decided = v.undecided.empty();
  v.passed = v.decided && v.persistent.empty();
  std::vector<std::string> parts;
  if (!v.persistent.empty()) parts.push_back("persistent NVLink faults: " + joined(v.persistent));
  if (!v.undecided.empty()) parts.push_back("awaiting retest: " + joined(v.undecided));
  if (!v.transient.empty()) parts.push_back("transient NVLink faults (recorded): " + joined(v.transient));
  if (parts.empty()) parts.push_back("all NVLink links healthy");
  for (std::size_t i = 0; i < parts.size(); ++i) v.message += (i == 0 ? "" : "; ") + parts[i];
  return v;
}

}  // namespace kiln::workflow
