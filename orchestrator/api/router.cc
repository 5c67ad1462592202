#include "orchestrator/api/router.h"

#include <algorithm>

#include "orchestrator/api/codecs.h"
#include "orchestrator/api/json_views.h"
#include "orchestrator/api/list_page.h"

namespace kiln::api {
namespace {

std::vector<std::string> splitPath(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

std::string RequestContext::query(const std::string& name) const {
  auto it = req.query.find(name);
  return it == req.query.end() ? std::string() : it->second;
}

Status RequestContext::onlyQuery(std::initializer_list<const char*> allowed) const {
  for (const auto& [k, _] : req.query) {
    bool known = false;
    for (const char* a : allowed) known = known || k == a;
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      return invalidArgument("unknown query parameter '" + k + "'" +
                             (list.empty() ? "" : " (expected: " + list + ")"));
    }
  }
  return Ok{};
}

Result<core::PageRequest> RequestContext::page() const { return decodePage(query("limit"), query("cursor")); }

Result<nlohmann::json> RequestContext::jsonBody(bool yaml_ok) const {
  return decodeDocument(req.body, req.header("content-type"), yaml_ok);
}

void Router::add(Route route) {
  std::string pattern = route.pattern;
  if (pattern.size() >= 2 && pattern.compare(pattern.size() - 2, 2, "/*") == 0) {
    route.prefix = true;
    pattern.resize(pattern.size() - 2);
  }
  route.segments = splitPath(pattern);
  routes_.push_back(std::move(route));
}

Router::Match Router::match(const std::string& method, const std::string& path) const {
  Match out;
  const auto segs = splitPath(path);
  const Route* best = nullptr;
  // Methods of the other literal/parameter routes matching the path.
  std::vector<std::string> literal_methods;
  for (const auto& r : routes_) {
    if (r.prefix ? segs.size() < r.segments.size() : segs.size() != r.segments.size()) continue;
    std::map<std::string, std::string> params;
    bool ok = true;
    for (std::size_t i = 0; i < r.segments.size() && ok; ++i) {
      const auto& s = r.segments[i];
      if (s.size() > 2 && s.front() == '{' && s.back() == '}') params[s.substr(1, s.size() - 2)] = segs[i];
      else ok = s == segs[i];
    }
    if (!ok) continue;
    if (r.method != method) {
      if (!r.prefix && std::find(literal_methods.begin(), literal_methods.end(), r.method) == literal_methods.end())
        literal_methods.push_back(r.method);
      continue;
    }
    // Literal routes beat parameter routes and prefix routes (e.g. /pods/x vs /*).
    if (!best || (best->prefix && !r.prefix)) {
      best = &r;
      out.params = std::move(params);
    }
  }
  // A route of the path's own with another method beats a catch-all prefix route:
  // GET /api/v1/fleet/import is 405 (Allow: POST), not the console's 404.
  if (best && best->prefix && !literal_methods.empty()) {
    out.params.clear();
    best = nullptr;
  }
  out.route = best;
  // Only a route of the path's own makes a wrong method a 405: the console's catch-all GET /*
  // would make every unknown path (POST /rollouts/ro-1/abrot) a 405 "Allow: GET".
  if (!best) out.allowed_methods = literal_methods;
  return out;
}

http::Response jsonResponse(int status, const nlohmann::json& body) {
  http::Response r;
  r.status = status;
  // Replace invalid UTF-8 (echoed from YAML input or in an error message) instead of throwing.
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

Result<http::Response> jsonResult(Result<nlohmann::json> r, int status) {
  if (!r.ok()) return r.error();
  return jsonResponse(status, *r);
}

Result<http::Response> pagedResult(const RequestContext& ctx, Result<nlohmann::json> whole,
                                   const std::function<nlohmann::json(const nlohmann::json&)>& key,
                                   std::optional<int> default_limit) {
  if (!whole.ok()) return whole.error();
  return jsonResult(pageList(std::move(*whole), ctx.query("limit"), ctx.query("cursor"), key, default_limit));
}

http::Response errorResponse(const Error& e) { return jsonResponse(httpStatus(e.code), toJson(e)); }

}  // namespace kiln::api
