#pragma once
// The REST API v1 as an http::Handler: route matching, body limits, authentication and roles,
// the JSON error body, one log line per request, request metrics. Handlers run on the
// Executor, never on network threads.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/executor.h"
#include "common/logger.h"
#include "orchestrator/api/metrics.h"
#include "orchestrator/api/router.h"
#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"

namespace kiln::runs {
class RunService;
class WorkflowCatalog;
class AgentWorkService;
class AgentLinkStore;
class AgentGateway;
class LiveOutputStore;
}  // namespace kiln::runs

namespace kiln::rollouts {
class RolloutService;
}
namespace kiln::reliability {
class ReliabilityService;
}
namespace kiln::retention {
class Sweeper;
}
namespace kiln::scheduler {
class Driver;
}
namespace kiln::fleet {
class FleetService;
}

namespace kiln::api {

struct ApiOptions {
  std::size_t default_body_limit = 1 << 20;   // 1 MiB
  std::size_t import_body_limit = 64 << 20;   // fleet files: a 1,000,000-GPU file is ~2 MB
  // How long a token read from the database is trusted. Revocations reach every replica's cache
  // within a second or two through followRevocations(); the TTL bounds a revocation's reach
  // only while that feed fails (the database is down).
  std::chrono::seconds token_cache_ttl{600};
  // Agent tokens expire this long after they are issued (0: never); agents renew theirs after
  // two thirds of it (POST /agents/{host}/token). A renewed token stays good for at most
  // agent_token_grace more, for an agent that dies before it stores the new one.
  std::chrono::seconds agent_token_ttl{30 * 24 * 3600};
  std::chrono::seconds agent_token_grace{3600};
  // The oldest kiln-agent version a registration may have (--min-agent-version; "": any), issue
  // 33: core::acceptAgentVersion.
  std::string min_agent_version;
  // A token's last use is written at most this often (recordTokenUse, from followRevocations).
  std::chrono::seconds token_use_interval{600};
  // Mutual TLS for agents (kilnd --agent-client-ca): agent requests, and registrations, count
  // only over a connection whose verified client certificate names the host (CN or DNS SAN).
  bool agent_client_certs = false;
  std::string web_root;                       // the console's files; empty = not served
};

// The targets kilnd is configured with (reliability_target, pod_p90_target), as GET /targets
// answers them for the console.
struct Targets {
  double per_8k_gpus_per_day = 2.0;  // interruptions per 8,000 GPUs per day
  int pod_p90_s = 7200;              // a rollout's P90 pod upgrade time
};

// What route handlers use. Pointers so the route table can be built without them (tests of
// the OpenAPI document); handlers dereference them only when serving.
struct Services {
  core::Store* store = nullptr;
  fleet::FleetService* fleet = nullptr;  // host moves and what follows them (POST /hosts/{id}/actions)
  core::Clock* clock = nullptr;
  RequestMetrics* metrics = nullptr;
  ControllerMetrics* controller = nullptr;  // null: kiln_leader and the controller series are not exported
  runs::RunService* runs = nullptr;
  runs::WorkflowCatalog* workflows = nullptr;
  runs::AgentWorkService* agent_work = nullptr;  // its step metrics
  runs::AgentLinkStore* agent_link = nullptr;    // agents' enrolment
  runs::AgentGateway* agents = nullptr;
  runs::LiveOutputStore* live_output = nullptr;  // null: the live output routes answer 503
  rollouts::RolloutService* rollouts = nullptr;
  reliability::ReliabilityService* reliability = nullptr;
  scheduler::Driver* scheduler = nullptr;     // null: --scheduler none (GET /scheduler says "none")
  retention::Sweeper* retention = nullptr;    // its kiln_retention_* series; null: not exported
  Targets targets;
  std::function<void(const std::string&)> forget_token;  // drop a revoked token from the cache
  ApiOptions options;
};

// Route registration, one function per area (routes_*.cc).
void addServiceRoutes(Router& router, Services& services);
void addFleetRoutes(Router& router, Services& services);
void addTokenRoutes(Router& router, Services& services);
void addConsoleRoutes(Router& router, Services& services);
void addRunRoutes(Router& router, Services& services);
void addRolloutRoutes(Router& router, Services& services);
void addReliabilityRoutes(Router& router, Services& services);
void addSchedulerRoutes(Router& router, Services& services);
void addAuditRoutes(Router& router, Services& services);

// A create under the request's Idempotency-Key (POST /rollouts, POST /workflow-runs): without
// the header, create(nullopt). With it, a key seen before answers the object it created
// (`replay`, 200, Idempotent-Replayed: true) if the request is the same, 422 if it is not;
// a new key goes to create() as a claim the store records with the object. Two replicas racing
// on one key: the loser's store refuses the claim and it answers as a retry.
Result<http::Response> idempotentCreate(
    const RequestContext& ctx, core::Store& store, const std::string& scope,
    const std::function<Result<http::Response>(const std::optional<core::IdempotencyClaim>&)>& create,
    const std::function<Result<nlohmann::json>(const std::string& object_id)>& replay);

// Whether the request's verified client certificate names `host` (mutual TLS for agents).
bool certificateNames(const http::Request& req, const std::string& host);

// Every route of the API, for the OpenAPI contract test.
Router buildRouter(Services& services);

class Api final : public http::Handler {
 public:
  Api(Services services, Executor& executor, std::shared_ptr<Logger> log);
  ~Api() override;

  // Further routes from other subsystems (workflows, rollouts, agents) before serving starts.
  Router& router() { return router_; }
  Services& services() { return services_; }

  std::optional<http::Response> admit(const http::Request& head,
                                      std::optional<std::uint64_t> content_length) override;
  void handle(http::Request request, http::Reply reply) override;

  // Forget a cached token at once (after a revocation through this process).
  void forgetToken(const std::string& id);
  // Forgets the cached tokens revoked since the last call (by any replica, by enrolment), and
  // writes the last use of the tokens this process authenticated (each at most every
  // token_use_interval). Call every second or two from one thread; the first call only sets
  // the starting point.
  void followRevocations();

 private:
  void writeTokenUses();
  struct Principal {
    core::Role role;
    std::string token_id, name, host;
  };
  // The request's principal; only from the token cache when `cached_only` (nullopt on a miss).
  Result<std::optional<Principal>> authenticate(const http::Request& req, bool cached_only);
  // `principal`: already authenticated (the inline path), else serve authenticates.
  void serve(http::Request req, http::Reply reply, std::chrono::steady_clock::time_point start,
             std::optional<Principal> principal);
  // Runs fn under the one top-level catch of a request: a bug answers 500, it does not end kilnd.
  void guarded(const http::Reply& reply, const std::function<void()>& fn);
  // Counts the request, answers it (with X-Request-Id) and writes its log line, whose
  // LogScope fields (request_id, route, status, actor, and each route parameter named after
  // its collection: rollout, host, ...) the JSON log format shows.
  void finish(const http::Request& req, const Route* route, const core::Actor& actor,
              const std::map<std::string, std::string>& params, std::chrono::steady_clock::time_point start,
              http::Response resp, const http::Reply& reply);

  Services services_;
  Router router_;
  Executor& executor_;
  std::shared_ptr<Logger> log_;
  RequestMetrics metrics_;

  struct CachedToken {
    core::TokenRecord record;
    std::chrono::steady_clock::time_point fetched;
  };
  std::mutex cache_mu_;
  std::unordered_map<std::string, CachedToken> token_cache_;
  // Tokens used since the last write (token id -> when), under cache_mu_; and when each token's
  // use was last written (followRevocations()' thread only).
  std::unordered_map<std::string, core::TimePoint> token_uses_;
  std::unordered_map<std::string, core::TimePoint> token_use_written_;
  std::optional<core::TimePoint> revocations_since_;  // followRevocations()' thread only
};

}  // namespace kiln::api
