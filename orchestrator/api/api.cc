#include "orchestrator/api/api.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>

#include "common/crypto.h"
#include "common/log_context.h"
#include "orchestrator/api/compress.h"
#include "orchestrator/api/json_views.h"

namespace kiln::api {
namespace {

const core::Actor kNobody{"-", "-"};

// The client's X-Request-Id when it is a plain token (1-64 of [A-Za-z0-9._-]; a balancer or a
// script may set one to follow a call through the logs), else a new random one.
std::string requestId(const http::Request& req) {
  const std::string given = req.header("x-request-id");
  const bool plain = !given.empty() && given.size() <= 64 && std::all_of(given.begin(), given.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
  return plain ? given : randomHex(8);
}

// The log field for a route parameter: named after the collection it indexes, so that a log
// search for rollout=ro-3 finds every call on it ("/api/v1/rollouts/{id}/pause" -> "rollout",
// "/api/v1/workflow-runs/{id}" -> "workflow_run", "/api/v1/agents/{host}/work" -> "host").
std::string objectKey(const std::string& pattern, const std::string& param) {
  const std::string marker = "/{" + param + "}";
  const auto at = pattern.find(marker);
  if (param != "id" || at == std::string::npos) return param;
  const auto begin = pattern.rfind('/', at - 1);
  std::string key = pattern.substr(begin + 1, at - begin - 1);
  if (!key.empty() && key.back() == 's') key.pop_back();
  std::replace(key.begin(), key.end(), '-', '_');
  return key.empty() ? param : key;
}

// The Allow header for the methods of a path: HEAD wherever GET is, and OPTIONS.
std::string allowHeader(std::vector<std::string> methods) {
  if (std::find(methods.begin(), methods.end(), "GET") != methods.end()) methods.push_back("HEAD");
  methods.push_back("OPTIONS");
  std::string allow;
  for (const auto& m : methods) allow += (allow.empty() ? "" : ", ") + m;
  return allow;
}

}  // namespace

Result<http::Response> idempotentCreate(
    const RequestContext& ctx, core::Store& store, const std::string& scope,
    const std::function<Result<http::Response>(const std::optional<core::IdempotencyClaim>&)>& create,
    const std::function<Result<nlohmann::json>(const std::string& object_id)>& replay) {
  auto key = core::parseIdempotencyKey(ctx.req.header("idempotency-key"));
  if (!key.ok()) return key.error();
  if (!*key) return create(std::nullopt);
  const core::IdempotencyClaim claim{**key, scope, sha256Hex(ctx.req.body)};
  auto answer = [&](const core::IdempotencyRecord& seen) -> Result<http::Response> {
    if (seen.scope != claim.scope || seen.fingerprint != claim.fingerprint) {
      Error e = invalidContent("Idempotency-Key '" + claim.key + "' was already used for another request (" + seen.scope +
                               " " + seen.object_id + "): a new request needs a new key");
      e.fields.push_back({"Idempotency-Key", "already used with a different request"});
      return e.with("object_id", seen.object_id);
    }
    auto view = replay(seen.object_id);
    if (!view.ok()) return view.error();
    http::Response resp = jsonResponse(200, *view);
    resp.headers.emplace_back("Idempotent-Replayed", "true");
    return resp;
  };
  auto seen = store.findIdempotencyKey(claim.key);
  if (!seen.ok()) return seen.error();
  if (*seen) return answer(**seen);
  auto created = create(claim);
  if (!created.ok() && created.error().code == ErrorCode::kConflict) {
    const auto& details = created.error().details;
    if (auto it = details.find("reason"); it != details.end() && it->second == core::kIdempotencyKeyTaken) {
      auto winner = store.findIdempotencyKey(claim.key);
      if (!winner.ok()) return winner.error();
      if (*winner) return answer(**winner);
    }
  }
  return created;
}

Router buildRouter(Services& services) {
  Router router;
  addServiceRoutes(router, services);
  addFleetRoutes(router, services);
  addTokenRoutes(router, services);
  addRunRoutes(router, services);
  addRolloutRoutes(router, services);
  addReliabilityRoutes(router, services);
  addSchedulerRoutes(router, services);
  addAuditRoutes(router, services);
  addConsoleRoutes(router, services);
  return router;
}

Api::Api(Services services, Executor& executor, std::shared_ptr<Logger> log)
    : services_(std::move(services)), executor_(executor), log_(std::move(log)) {
  services_.metrics = &metrics_;
  services_.forget_token = [this](const std::string& id) { forgetToken(id); };
  router_ = buildRouter(services_);
}

Api::~Api() = default;

std::optional<http::Response> Api::admit(const http::Request& head,
                                         std::optional<std::uint64_t> content_length) {
  auto m = router_.match(head.method, head.path);
  const std::size_t limit = m.route ? m.route->body_limit : services_.options.default_body_limit;
  if (content_length && *content_length > limit) {
    Error e(ErrorCode::kTooLarge, "the body is " + std::to_string(*content_length) +
                                      " bytes; this route takes at most " + std::to_string(limit));
    e.with("limit", std::to_string(limit));
    return errorResponse(e);
  }
  return std::nullopt;
}

void Api::handle(http::Request request, http::Reply reply) {
  const auto start = std::chrono::steady_clock::now();
  // The catch must still be able to answer (serve() used to take the only Reply, and an
  // exception then ended kilnd with bad_function_call), and never answers twice.
  auto answered = std::make_shared<std::atomic<bool>>(false);
  http::Reply once = [reply = std::move(reply), answered](http::Response r) {
    if (!answered->exchange(true)) reply(std::move(r));
  };
  // A route that never blocks, with a token in the cache, is served here on the network thread:
  // an agent's idle poll costs no hop to the executor and back.
  bool served = false;
  guarded(once, [&] {
    auto m = router_.match(request.method, request.path);
    if (!m.route || !m.route->inline_ok || !m.route->role) return;
    auto principal = authenticate(request, /*cached_only=*/true);
    if (!principal.ok() || !*principal) return;
    served = true;
    serve(std::move(request), once, start, **principal);
  });
  if (served) return;
  executor_.post([this, req = std::move(request), once, start]() mutable {
    metrics_.recordExecutorWait(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    guarded(once, [&] { serve(std::move(req), once, start, std::nullopt); });
  });
}

void Api::guarded(const http::Reply& reply, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const nlohmann::json::type_error& e) {
    // A body field of the wrong type that a handler read without checking: bad input (422),
    // not a server error. Handlers should check types; this is the safety net.
    log_->warn("wrong JSON type in a request body: {}", e.what());
    reply(errorResponse(invalidContent(std::string("a field of the body has the wrong type: ") + e.what())));
  } catch (const std::exception& e) {
    // One top-level catch per request (docs/STYLE.md): a bug answers 500, it does not kill kilnd.
    log_->error("unhandled exception: {}", e.what());
    reply(errorResponse(internalError("internal error")));
  } catch (...) {
    log_->error("unhandled exception of unknown type");
    reply(errorResponse(internalError("internal error")));
  }
}

void Api::serve(http::Request req, http::Reply reply, std::chrono::steady_clock::time_point start,
                std::optional<Principal> pre) {
  // HEAD is GET without the body (the server drops it and keeps Content-Length).
  auto m = router_.match(req.method == "HEAD" ? "GET" : req.method, req.path);
  if (!m.route && req.method == "OPTIONS" && !m.allowed_methods.empty()) {
    // What the path allows; authenticated like the path's routes (only /healthz is open).
    const Route* any = nullptr;
    for (const auto& method : m.allowed_methods)
      if (auto other = router_.match(method, req.path); other.route && (!any || other.route->role)) any = other.route;
    core::Actor actor = kNobody;
    if (any && any->role) {
      auto found = pre ? Result<std::optional<Principal>>(pre) : authenticate(req, false);
      if (!found.ok()) {
        http::Response resp = errorResponse(found.error());
        resp.headers.emplace_back("WWW-Authenticate", "Bearer");
        finish(req, any, kNobody, {}, start, std::move(resp), reply);
        return;
      }
      actor = {(*found)->token_id, (*found)->name};
    }
    http::Response resp;
    resp.status = 204;
    resp.content_type.clear();
    resp.headers.emplace_back("Allow", allowHeader(m.allowed_methods));
    finish(req, any, actor, {}, start, std::move(resp), reply);
    return;
  }
  if (!m.route) {
    if (m.allowed_methods.empty()) {
      finish(req, nullptr, kNobody, {}, start, errorResponse(notFound("no route for " + req.method + " " + req.path)), reply);
      return;
    }
    const std::string allow = allowHeader(m.allowed_methods);
    Error e(ErrorCode::kMethodNotAllowed, "method " + req.method + " is not allowed on " + req.path);
    http::Response resp = errorResponse(e.with("allow", allow));
    resp.headers.emplace_back("Allow", allow);
    finish(req, nullptr, kNobody, {}, start, std::move(resp), reply);
    return;
  }
  const Route& route = *m.route;
  RequestContext ctx{req, std::move(m.params), {"anonymous", "anonymous"}, core::Role::kViewer, ""};
  if (route.role) {
    Result<std::optional<Principal>> found = pre ? Result<std::optional<Principal>>(pre) : authenticate(req, false);
    if (!found.ok()) {
      http::Response resp = errorResponse(found.error());
      resp.headers.emplace_back("WWW-Authenticate", "Bearer");
      finish(req, &route, kNobody, ctx.params, start, std::move(resp), reply);
      return;
    }
    const Principal& principal = **found;
    if (!core::roleAllows(principal.role, *route.role)) {
      Error e(ErrorCode::kPermissionDenied, "this call needs the " + std::string(core::roleName(*route.role)) +
                                                " role; the token has " +
                                                std::string(core::roleName(principal.role)));
      finish(req, &route, {principal.token_id, principal.name}, ctx.params, start, errorResponse(e), reply);
      return;
    }
    // Mutual TLS for agents (--agent-client-ca): an agent token counts only over a connection
    // whose verified client certificate names its host.
    if (principal.role == core::Role::kAgent && services_.options.agent_client_certs &&
        !certificateNames(req, principal.host)) {
      Error e(ErrorCode::kPermissionDenied, "an agent of host " + principal.host +
                                                " must present a client certificate naming that host (kilnd requires "
                                                "mutual TLS for agents)");
      finish(req, &route, {principal.token_id, principal.name}, ctx.params, start, errorResponse(e), reply);
      return;
    }
    ctx.actor = {principal.token_id, principal.name};
    ctx.role = principal.role;
    ctx.agent_host = principal.host;
  }
  if (route.async_fn) {
    // The handler may answer later from another thread; req stays alive in the closure.
    auto shared_req = std::make_shared<http::Request>(std::move(req));
    RequestContext async_ctx{*shared_req, ctx.params, ctx.actor, ctx.role, ctx.agent_host};
    route.async_fn(async_ctx, [this, shared_req, route_ptr = &route, actor = ctx.actor, params = ctx.params, start,
                               reply](Result<http::Response> r) {
      finish(*shared_req, route_ptr, actor, params, start, r.ok() ? std::move(r.value()) : errorResponse(r.error()), reply);
    });
    return;
  }
  Result<http::Response> result = route.fn(ctx);
  finish(req, &route, ctx.actor, ctx.params, start, result.ok() ? std::move(result.value()) : errorResponse(result.error()),
         reply);
}

void Api::finish(const http::Request& req, const Route* route, const core::Actor& actor,
                 const std::map<std::string, std::string>& params, std::chrono::steady_clock::time_point start,
                 http::Response resp, const http::Reply& reply) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int status = resp.status;
  const std::string pattern = route ? route->pattern : "unmatched";
  // Counted before the reply: a client reading /metrics right after sees its own request.
  metrics_.record(req.method, pattern, status, secs);
  const std::string request_id = requestId(req);
  resp.headers.emplace_back("X-Request-Id", request_id);
  // gzip for large text a client asked for it (the console's hosts pages and heatmap).
  if (resp.status == 200 && worthCompressing(resp.content_type, resp.body.size())) {
    resp.headers.emplace_back("Vary", "Accept-Encoding");
    const bool encoded = std::any_of(resp.headers.begin(), resp.headers.end(), [](const auto& h) {
      return h.first == "Content-Encoding";
    });
    if (!encoded && acceptsGzip(req.header("accept-encoding"))) {
      if (auto packed = gzip(resp.body)) {
        resp.body = std::move(*packed);
        resp.headers.emplace_back("Content-Encoding", "gzip");
      }
    }
  }
  reply(std::move(resp));
  const auto level = route && route->quiet && status < 400 ? LogLevel::kDebug : LogLevel::kInfo;
  if (!log_->enabled(level)) return;
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f", secs * 1000);
  LogFields fields = {{"request_id", request_id}, {"method", req.method},        {"path", req.path},
                      {"route", pattern},         {"status", std::to_string(status)}, {"duration_ms", ms},
                      {"actor", actor.name},      {"token_id", actor.token_id}};
  for (const auto& [name, value] : params) fields.emplace_back(objectKey(pattern, name), value);
  LogScope scope(fields);
  log_->log(level, fmt::format("{} {} {} {}ms token={} req={}", req.method, req.path, status, ms, actor.token_id,
                               request_id));
}

Result<std::optional<Api::Principal>> Api::authenticate(const http::Request& req, bool cached_only) {
  const std::string header = req.header("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (header.empty()) return Error(ErrorCode::kUnauthenticated, "missing Authorization: Bearer token");
  if (header.compare(0, kBearer.size(), kBearer) != 0)
    return Error(ErrorCode::kUnauthenticated, "Authorization must be 'Bearer <token>'");
  auto parsed = core::parseBearerToken(std::string_view(header).substr(kBearer.size()));
  const Error bad(ErrorCode::kUnauthenticated, "invalid or revoked token");
  if (!parsed) return bad;

  std::optional<core::TokenRecord> record;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(cache_mu_);
    auto it = token_cache_.find(parsed->id);
    if (it != token_cache_.end() && now - it->second.fetched < services_.options.token_cache_ttl)
      record = it->second.record;
  }
  if (!record) {
    if (cached_only) return std::optional<Principal>();
    auto found = services_.store->findToken(parsed->id);
    if (!found.ok()) return found.error();
    if (!found->has_value()) return bad;
    record = **found;
    std::lock_guard lock(cache_mu_);
    // Past a million entries (far beyond the fleet's agents), drop the expired ones; clearing
    // it all at 100,000 sent a 100k-host fleet's every poll to the database at once.
    if (token_cache_.size() >= 1000000)
      for (auto e = token_cache_.begin(); e != token_cache_.end();)
        e = now - e->second.fetched >= services_.options.token_cache_ttl ? token_cache_.erase(e) : std::next(e);
    token_cache_[parsed->id] = {*record, now};
  }
  if (!constantTimeEquals(sha256Hex(parsed->secret), record->secret_hash)) return bad;
  if (record->info.revoked_at) return bad;
  // Expiry is checked on every use: a cached token does not outlive its expires_at.
  const auto wall = std::chrono::system_clock::now();
  if (record->info.expires_at && *record->info.expires_at <= wall) return bad;
  {
    std::lock_guard lock(cache_mu_);
    token_uses_[record->info.id] = wall;
  }
  return std::optional<Principal>(Principal{record->info.role, record->info.id, record->info.name, record->info.host});
}

bool certificateNames(const http::Request& req, const std::string& host) {
  return std::find(req.client_names.begin(), req.client_names.end(), host) != req.client_names.end();
}

void Api::forgetToken(const std::string& id) {
  std::lock_guard lock(cache_mu_);
  token_cache_.erase(id);
}

void Api::followRevocations() {
  // The first call asks from the epoch only to learn the database's clock.
  auto r = services_.store->tokensRevokedSince(revocations_since_.value_or(core::TimePoint{}));
  if (!r.ok()) {
    log_->warn("cannot read token revocations: {}", r.error().message);
    return;
  }
  if (revocations_since_) {
    std::lock_guard lock(cache_mu_);
    for (const auto& id : r->ids) token_cache_.erase(id);
  }
  // revoked_at is its transaction's start: a revocation that committed after this read but
  // started before it must still be seen next time, hence the overlap.
  revocations_since_ = r->now - std::chrono::seconds(30);
  writeTokenUses();
}

void Api::writeTokenUses() {
  std::unordered_map<std::string, core::TimePoint> used;
  {
    std::lock_guard lock(cache_mu_);
    used.swap(token_uses_);
  }
  const auto now = std::chrono::system_clock::now();
  std::vector<std::pair<std::string, core::TimePoint>> due;
  for (const auto& [id, at] : used) {
    auto it = token_use_written_.find(id);
    if (it != token_use_written_.end() && at - it->second < services_.options.token_use_interval) continue;
    due.emplace_back(id, at);
  }
  if (due.empty()) return;
  if (auto st = services_.store->recordTokenUse(due); !st.ok()) {
    log_->warn("cannot record when {} tokens were last used: {}", due.size(), st.error().message);
    return;
  }
  for (const auto& [id, at] : due) token_use_written_[id] = at;
  // Forget what is older than the interval: those are written again at their next use anyway.
  if (token_use_written_.size() > 200000)
    for (auto e = token_use_written_.begin(); e != token_use_written_.end();)
      e = now - e->second >= services_.options.token_use_interval ? token_use_written_.erase(e) : std::next(e);
}

}  // namespace kiln::api
