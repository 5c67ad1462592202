#pragma once
// The fleet store: what kilnd keeps in PostgreSQL, as an interface of plain types so the API
// and controllers do not see SQL. The implementation (orchestrator/db) commits each mutation
// in one transaction together with its host events and audit record.
//
// Thread-safety: implementations are safe to call from many threads at once.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "orchestrator/core/management.h"
#include "orchestrator/core/clock.h"
#include "orchestrator/core/preconditions.h"
#include "orchestrator/core/fleet_spec.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/core/host_lifecycle.h"
#include "orchestrator/core/roles.h"

namespace kiln::core {

template <typename T>
struct Page {
  std::vector<T> items;
  std::optional<std::string> next_cursor;  // pass back as `cursor` for the next page
};

struct PageRequest {
  std::string cursor;  // empty = from the start
  int limit = 100;     // 1..1000
};

// Who did something and why: written into host events and the audit log.
struct Actor {
  std::string token_id;  // "system" for Kiln's own controllers
  std::string name;
};

struct SiteSummary {
  std::string id;
  std::vector<std::string> buildings;
  std::int64_t pods = 0;
  std::int64_t hosts = 0;
};

struct PodFilter {
  std::string site, building, platform;
  std::optional<PodState> state;
  std::string label;  // "key=value"
};

struct PodSummary {
  std::string id, site, building, platform;
  PodState state = PodState::kInService;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::int64_t> hosts_by_state;
  std::int64_t healthy_gpus = 0;  // GPUs on hosts that can serve jobs
  std::int64_t racks = 0;
  std::int64_t hosts_out = 0;  // hosts out of service (core::outOfService); filled by heatmapPods
};

struct HostSummary {
  std::string id, pod, rack, building, site, platform;
  HostState state = HostState::kIncoming;
  int tray = 0;
  bool spare = false;
  TimePoint state_since;
  std::string state_reason;
  std::optional<TimePoint> last_seen;
  std::string agent_version;  // what its agent said at its last enrolment; "" before any
};

struct ComponentVersion {
  std::string target;  // host or switch tray id
  std::string kind;
  std::string version;
};

struct SwitchTray {
  std::string id, rack;
  int tray = 0;
};

struct PodDetail {
  PodSummary pod;
  std::vector<std::string> racks;
  std::vector<HostSummary> hosts;
  std::vector<SwitchTray> switch_trays;
  std::vector<ComponentVersion> components;
  ManagementSpec management;  // its devices' management endpoints (core/management.h)
};

struct Gpu {
  std::string id;
  int index = 0;
  std::string serial, uuid;
};

struct HostDetail {
  HostSummary host;
  ManagementSpec management;  // its pod's (core/management.h): the tray's BMC is expanded from it
  std::vector<Gpu> gpus;
  std::map<std::string, std::string> components;
  std::vector<std::string> allowed_actions;
};

// The orders a host list can be read in: by one column, then by id (so that keyset pages
// never split or repeat a host), ascending or descending.
enum class HostSortKey { kId, kPod, kState, kStateSince, kReason };
struct HostSort {
  HostSortKey key = HostSortKey::kId;
  bool descending = false;
};

struct HostFilter {
  std::string pod, building, site, state;
  std::string label;      // a label of the host's pod, "key=value"
  std::string reason;     // text contained in the state reason, any case
  std::string id_prefix;  // the start of the host id, any case
  HostSort sort;          // the order of the answer (not a filter, but read with one)
};

struct HostEvent {
  std::int64_t id = 0;
  std::string host;
  TimePoint at;
  std::string action, from_state, to_state, actor, reason;
};

struct ImportSummary {
  std::int64_t sites_created = 0, buildings_created = 0, pods_created = 0, pods_existing = 0;
  std::int64_t racks_created = 0, hosts_created = 0, switch_trays_created = 0, gpus_created = 0;
  std::int64_t components_created = 0;
  // Pods already known whose management endpoints the file changed (issue 32): the one thing a
  // re-import updates on an existing pod.
  std::int64_t pods_management_updated = 0;
};

struct TokenInfo {
  std::string id, name;
  Role role = Role::kViewer;
  std::string host;  // agent tokens: the only host they may act for
  TimePoint created_at;
  std::string created_by;
  std::optional<TimePoint> revoked_at;
  std::optional<TimePoint> expires_at;    // none: it does not expire (agent tokens do)
  std::optional<TimePoint> last_used_at;  // within ~10 minutes (Store::recordTokenUse)
};

struct NewToken {
  TokenInfo info;
  std::string secret;  // the whole bearer token; shown once, stored only as a hash
};

struct TokenRecord {
  TokenInfo info;
  std::string secret_hash;
};

struct HostTransition {
  std::string host;
  HostAction action;
  std::optional<HostState> override_to;
  std::string reason;
};

struct FleetCounts {
  std::map<std::string, std::int64_t> hosts_by_state;
  std::map<std::string, std::int64_t> pods_by_platform;
  std::map<std::string, std::map<std::string, std::int64_t>> hosts_by_building;  // building -> state -> hosts
  std::map<std::string, std::int64_t> gpus_by_state;  // GPUs on the hosts in each state
  // Hosts whose agent has registered (retired ones left out), by building: reachable, unreachable.
  struct Agents {
    std::int64_t reachable = 0, unreachable = 0;
  };
  std::map<std::string, Agents> agents_by_building;
  // Hosts whose agent has registered (retired ones left out), by the version it registered with
  // (issue 33: version skew in a rollout of the agent itself).
  std::map<std::string, std::int64_t> agents_by_version;
};

// GET /api/v1/audit: which audit records (every field optional; all given must match).
struct AuditFilter {
  std::string actor;   // exactly as stored: a token id, or a system actor ("system", "kilnd", "agent:<host>")
  std::string action;  // exact ("rollout.create"), or a prefix when it ends in '.' ("rollout.")
  std::string target;  // exact
  std::optional<TimePoint> since;  // at >= since
  std::optional<TimePoint> until;  // at < until
  std::optional<std::int64_t> before_id;  // keyset: records older than this id (the previous page's last)
  int limit = 100;                        // 1..1000
};

struct AuditRecord {
  std::int64_t id = 0;
  TimePoint at;
  std::string actor;       // as stored
  std::string actor_name;  // the token's name; a system actor's own text when no token has that id
  std::string action, target;
  std::string details_json;  // a JSON object
};

struct AuditPage {
  std::vector<AuditRecord> items;  // newest first (by id)
  bool more = false;               // older records match too
};

// A token's id and name, for showing who acted by name (no role, no secret).
struct ActorName {
  std::string id, name;
};

// Moving hosts through their lifecycle, many at once (the rollout controller, the Slurm driver).
class HostMoves {
 public:
  virtual ~HostMoves() = default;

  // Applies many transitions in ONE transaction: each one as Store::transitionHost would
  // (checked by core::nextState under the host's row lock, with its host event and audit
  // record), in the order given (so one host may take several steps, e.g. drain then drained);
  // the hosts are locked in id order first, so concurrent batches cannot deadlock. A refused
  // transition (kNotFound, kConflict) is reported in its slot and the others still apply; the
  // batch fails as a whole only when the database does. Returns, per transition and in input
  // order, the state it led to or why it was refused.
  virtual Result<std::vector<Result<HostState>>> transitionHosts(const std::vector<HostTransition>& transitions,
                                                                 const Actor& actor) = 0;
};

// What the rollout controller needs of the fleet: a pod with its hosts, and moving them.
class FleetHosts : public HostMoves {
 public:
  virtual Result<PodDetail> getPod(const std::string& id) = 0;
};

// What the fleet service (orchestrator/fleet) needs of the fleet store: the rollout controller's
// part, and one operator's move answered with the host as the move's own transaction left it.
class HostLifecycle : public FleetHosts {
 public:
  // Applies one lifecycle transition (checked by core::nextState under a row lock), writes the
  // host event and audit record, and refreshes the pod's state. kNotFound, kConflict.
  virtual Result<HostSummary> transitionHost(const HostTransition& t, const Actor& actor) = 0;
};

// What the run service reads of the fleet to find a run's targets.
class FleetReads {
 public:
  virtual ~FleetReads() = default;

  // The hosts of many pods in tray order, in one query: pod id -> hosts, for every pod of `ids`
  // that exists (an unknown id is simply absent).
  virtual Result<std::map<std::string, std::vector<HostSummary>>> hostsOfPods(const std::vector<std::string>& ids) = 0;
  // kNotFound for an unknown host.
  virtual Result<HostDetail> getHost(const std::string& id) = 0;
  // Many hosts in one query: id -> host, for every id of `ids` that exists (an unknown id is
  // simply absent). A 8,192-host pre-job check read them one getHost at a time: ~25 s.
  virtual Result<std::map<std::string, HostSummary>> hostsById(const std::vector<std::string>& ids) = 0;
  // The management blocks of many pods in one query (core/management.h): pod id -> block, for
  // every pod of `ids` that exists and names one. A run whose steps reach BMCs reads them.
  virtual Result<std::map<std::string, ManagementSpec>> podManagement(const std::vector<std::string>& ids) = 0;
};

// The host list, page by page (the API's host list, the Slurm driver's view of every host).
class HostListing {
 public:
  virtual ~HostListing() = default;

  // Hosts matching every filter, in the filter's sort order. With the default sort (id
  // ascending) the cursor is the last host id, as it always was; with another sort it is
  // opaque. kInvalidArgument for a label that is not key=value, or a cursor the sort did not make.
  virtual Result<Page<HostSummary>> listHosts(const HostFilter& filter, const PageRequest& page) = 0;
};

// The audit log, as services that record what an operator did write to it.
class AuditLog {
 public:
  virtual ~AuditLog() = default;

  // `details_json`: a JSON object.
  virtual Status audit(const Actor& actor, const std::string& action, const std::string& target,
                       const std::string& details_json) = 0;
};

// Everything else of the fleet store, and the narrow parts above (the interface most of kilnd holds).
class Store : public HostLifecycle, public FleetReads, public HostListing, public AuditLog {
 public:
  virtual Status ping() = 0;

  // The create an Idempotency-Key was used for, if any (issue 19).
  virtual Result<std::optional<IdempotencyRecord>> findIdempotencyKey(const std::string& key) = 0;

  // Idempotent: pods that exist already are left as they are (kConflict if a file moves an
  // existing pod to another building or platform). All or nothing.
  virtual Result<ImportSummary> importFleet(const FleetSpec& fleet, const Actor& actor) = 0;

  virtual Result<std::vector<SiteSummary>> listSites() = 0;
  virtual Result<Page<PodSummary>> listPods(const PodFilter& filter, const PageRequest& page) = 0;
  // Every pod in id order, in one query, for the console's heatmap: id, site, building,
  // platform, state, labels, healthy_gpus and hosts_out (hosts_by_state and racks are left empty).
  virtual Result<std::vector<PodSummary>> heatmapPods() = 0;
  virtual Result<Page<HostEvent>> hostEvents(const std::string& host_id,
                                             const PageRequest& page) = 0;

  // Pods of a platform that can run a full 64-GPU slice now.
  virtual Result<std::int64_t> countHealthyPods(const std::string& platform) = 0;
  virtual Result<FleetCounts> fleetCounts() = 0;
  // Hosts by state (only the states some host is in). The default reads fleetCounts; a store
  // with a cheaper query (one GROUP BY over the hosts) overrides it.
  virtual Result<std::map<std::string, std::int64_t>> hostsByState() {
    auto c = fleetCounts();
    if (!c.ok()) return c.error();
    return c->hosts_by_state;
  }

  virtual Result<NewToken> createToken(Role role, const std::string& name,
                                       const std::string& host, const Actor& actor) = 0;
  virtual Result<std::vector<TokenInfo>> listTokens() = 0;
  virtual Status revokeToken(const std::string& id, const Actor& actor) = 0;
  virtual Result<std::optional<TokenRecord>> findToken(const std::string& id) = 0;
  // Tokens revoked at or after `since` (the database's clock), and the database's clock now:
  // how replicas learn of each other's revocations.
  struct Revocations {
    std::vector<std::string> ids;
    TimePoint now;
  };
  virtual Result<Revocations> tokensRevokedSince(TimePoint since) = 0;
  // True if any unrevoked admin token exists.
  virtual Result<bool> hasAdminToken() = 0;
  // When tokens were last used, in one statement (a later time than the stored one wins). Not
  // pure: a store that keeps no use times ignores them.
  virtual Status recordTokenUse(const std::vector<std::pair<std::string, TimePoint>>& /*uses*/) { return Ok{}; }

  // Audit records matching `filter`, newest first, at most filter.limit of them. Not pure so
  // stores without an audit log (test fakes) need not implement it: they answer kUnavailable.
  virtual Result<AuditPage> listAudit(const AuditFilter& /*filter*/) {
    return unavailable("this store keeps no audit log");
  }
  // Every token's id and name but agent tokens' (agents act as "agent:<host>", and a large
  // fleet has one per host), revoked ones included (their actions stay in the records).
  // Not pure, as listAudit.
  virtual Result<std::vector<ActorName>> actorNames() { return unavailable("this store keeps no tokens"); }
};

// Bearer tokens look like "kiln_<id>_<secret>"; this splits one. Pure.
struct ParsedToken {
  std::string id, secret;
};
std::optional<ParsedToken> parseBearerToken(std::string_view token);

}  // namespace kiln::core
