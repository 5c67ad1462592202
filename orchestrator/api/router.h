#pragma once
// Routes of the REST API: method + path pattern ("/api/v1/pods/{id}"), the role a caller
// needs, the body limit, and the handler. Matching is by path segments.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/core/roles.h"
#include "orchestrator/core/store.h"
#include "orchestrator/http/server.h"

namespace kiln::api {

struct RequestContext {
  const http::Request& req;
  std::map<std::string, std::string> params;  // from {name} segments
  core::Actor actor;                          // token id and name; "anonymous" on /healthz
  core::Role role = core::Role::kViewer;
  std::string agent_host;                     // agent tokens: their host

  const std::string& param(const std::string& name) const { return params.at(name); }
  // A query parameter, or "" when absent.
  std::string query(const std::string& name) const;
  // kInvalidArgument naming the first query parameter not in `allowed`.
  Status onlyQuery(std::initializer_list<const char*> allowed) const;
  // The standard `limit` and `cursor` parameters. limit: 1..1000, default 100.
  Result<core::PageRequest> page() const;
  // The body as JSON (YAML accepted when yaml_ok and the content type is not JSON).
  Result<nlohmann::json> jsonBody(bool yaml_ok = false) const;
};

using RouteFn = std::function<Result<http::Response>(RequestContext&)>;
// For handlers that answer later (long polls): call reply exactly once.
using AsyncRouteFn = std::function<void(RequestContext&, std::function<void(Result<http::Response>)>)>;

struct Route {
  std::string method;
  std::string pattern;
  std::optional<core::Role> role;  // nullopt: no authentication (only /healthz and the console)
  std::size_t body_limit = 1 << 20;
  // The handler never blocks (no database work before it returns): with a cached token it runs
  // on the network thread instead of the executor (agent polls: no thread hop per poll).
  bool inline_ok = false;
  // High-volume traffic (agent polls and reports): successful calls log at debug (counted in
  // /metrics); errors still log at info.
  bool quiet = false;
  RouteFn fn;
  AsyncRouteFn async_fn;
  std::vector<std::string> segments;
  bool prefix = false;  // pattern ends in "/*": matches everything below
};

class Router {
 public:
  void add(Route route);
  struct Match {
    const Route* route = nullptr;
    std::map<std::string, std::string> params;
    std::vector<std::string> allowed_methods;  // when the path matched but not the method
  };
  Match match(const std::string& method, const std::string& path) const;
  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

http::Response jsonResponse(int status, const nlohmann::json& body);
http::Response errorResponse(const Error& e);
// A handler's Result<json> as a response: the value with `status`, or the error body.
Result<http::Response> jsonResult(Result<nlohmann::json> r, int status = 200);
// A whole list answer {items, ...} as one page of the request's `limit` and `cursor`, ordered by
// `key` (pageList in list_page.h: without `limit`, `default_limit` items; nullopt = all of them).
Result<http::Response> pagedResult(const RequestContext& ctx, Result<nlohmann::json> whole,
                                   const std::function<nlohmann::json(const nlohmann::json&)>& key,
                                   std::optional<int> default_limit = std::nullopt);

}  // namespace kiln::api
