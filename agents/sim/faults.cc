#include "agents/sim/faults.h"

#include <array>
#include <utility>

#include "agents/sim/ids.h"

namespace kiln::sim {
namespace {

constexpr std::array<std::pair<FaultKind, const char*>, 8> kKindNames{{
    {FaultKind::kFlashFailure, "flash_failure"},
    {FaultKind::kHang, "hang"},
    {FaultKind::kSlow, "slow"},
    {FaultKind::kWeakLinkTransient, "weak_link_transient"},
    {FaultKind::kWeakLinkPersistent, "weak_link_persistent"},
    {FaultKind::kRowRemapPending, "row_remap_pending"},
    {FaultKind::kXid, "xid"},
    {FaultKind::kFabricSplit, "fabric_split"},
}};

bool needsGpu(FaultKind k) {
  return k == FaultKind::kWeakLinkTransient || k == FaultKind::kWeakLinkPersistent ||
         k == FaultKind::kRowRemapPending || k == FaultKind::kXid;
}

bool needsLink(FaultKind k) {
  return k == FaultKind::kWeakLinkTransient || k == FaultKind::kWeakLinkPersistent;
}

}  // namespace

const char* faultKindName(FaultKind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "unknown";
}

std::optional<FaultKind> parseFaultKind(std::string_view name) {
  for (const auto& [k, n] : kKindNames) {
    if (name == n) return k;
  }
  return std::nullopt;
}

nlohmann::json toJson(const Fault& f) {
  nlohmann::json j{{"kind", faultKindName(f.kind)}, {"remaining", f.remaining}};
  if (f.gpu >= 0) j["gpu"] = f.gpu;
  if (f.link >= 0) j["link"] = f.link;
  if (!f.tool.empty()) j["tool"] = f.tool;
  if (f.kind == FaultKind::kSlow) j["factor"] = f.factor;
  if (f.kind == FaultKind::kXid) j["xid"] = f.xid;
  return j;
}

Result<Fault> faultFromJson(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string()) {
    return invalidContent("fault needs a string 'kind'");
  }
  auto kind = parseFaultKind(j["kind"].get<std::string>());
  if (!kind) return invalidContent("unknown fault kind '" + j["kind"].get<std::string>() + "'");
  Fault f;
  f.kind = *kind;
  try {
    f.gpu = j.value("gpu", -1);
    f.link = j.value("link", -1);
    f.remaining = j.value("remaining", -1);
    f.tool = j.value("tool", std::string());
    f.factor = j.value("factor", 1.0);
    f.xid = j.value("xid", 0);
  } catch (const nlohmann::json::exception& e) {
    return invalidContent(std::string("bad fault field: ") + e.what());
  }
  return f;
}

std::optional<Fault> seededFault(uint64_t seed, std::string_view host, double rate, const Fault& templ,
                                 int gpus_per_host, int links_per_gpu) {
  KILN_CHECK(gpus_per_host > 0 && links_per_gpu > 0);
  const std::string base = std::to_string(seed) + "/" + faultKindName(templ.kind) + "/" + std::string(host);
  if (unitInterval(fnv1a64(base)) >= rate) return std::nullopt;
  Fault f = templ;
  if (f.gpu < 0 && needsGpu(f.kind)) {
    f.gpu = static_cast<int>(fnv1a64(base + "/gpu") % static_cast<uint64_t>(gpus_per_host));
  }
  if (f.link < 0 && needsLink(f.kind)) {
    f.link = static_cast<int>(fnv1a64(base + "/link") % static_cast<uint64_t>(links_per_gpu));
  }
  return f;
}

}  // namespace kiln::sim
