// The audit feed (GET /api/v1/audit) and who the actors are (GET /api/v1/actors).
//
// GET /audit needs operator: the log is the record of who changed what, and operators are the
// ones who act and answer for it. Viewers (dashboards, read-only scripts) keep the per-object
// histories (rollout events, host events, runs); the feed adds records they have no other view
// of: token creations and revocations with the new token's role and name (GET /tokens is admin)
// and agent enrolments. No record holds a secret: tokens are stored only hashed and
// token.create / agent.enroll record the id, name, role and host, never the bearer token.
//
// GET /actors is viewer: the console shows "who" by token name in every view, and a name says
// no more than the id a viewer already sees there (no role, no dates, no secret).

#include <cctype>
#include <chrono>
#include <string>

#include "orchestrator/api/api.h"
#include "orchestrator/api/json_views.h"
#include "orchestrator/api/list_page.h"
#include "orchestrator/reliability/reliability_service.h"

namespace kiln::api {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxFilter = 256;

// An ISO 8601 UTC time, milliseconds kept ("2026-12-02T10:00:00Z", "...:00.250Z", a date).
std::optional<core::TimePoint> parseFilterTime(const std::string& text) {
  std::string whole = text;
  std::chrono::milliseconds ms{0};
  if (auto dot = text.find('.'); dot != std::string::npos) {
    std::size_t end = dot + 1;
    int digits = 0, value = 0;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) {
      if (digits < 3) value = value * 10 + (text[end] - '0');
      ++digits;
      ++end;
    }
    if (digits == 0) return std::nullopt;
    for (int d = digits; d < 3; ++d) value *= 10;
    ms = std::chrono::milliseconds(value);
    whole = text.substr(0, dot) + text.substr(end);
  }
  auto t = reliability::parseTime(whole);
  if (!t) return std::nullopt;
  return *t + ms;
}

// What a stored action looks like ("rollout.pod.retry"); a prefix ends in '.'.
bool plainAction(const std::string& s) {
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return !s.empty() && s.front() != '.';
}

Result<core::AuditFilter> auditFilter(const RequestContext& ctx) {
  core::AuditFilter f;
  auto page = ctx.page();
  if (!page.ok()) return page.error();
  f.limit = page->limit;
  if (!page->cursor.empty()) {
    auto key = decodeCursor(page->cursor);
    if (!key.ok()) return key.error();
    if (key->size() != 1 || !(*key)[0].is_number_integer())
      return invalidArgument("cursor is not valid (pass back next_cursor of the previous page unchanged)");
    f.before_id = (*key)[0].get<std::int64_t>();
  }
  f.actor = ctx.query("actor");
  f.action = ctx.query("action");
  f.target = ctx.query("target");
  for (const std::string name : {"since", "until"}) {
    const std::string text = ctx.query(name);
    if (text.empty()) continue;
    auto t = parseFilterTime(text);
    if (!t) return invalidArgument(name + " must be an ISO 8601 UTC time like 2026-12-02T10:00:00Z");
    (name == "since" ? f.since : f.until) = *t;
  }
  Error bad = invalidContent("");
  for (const auto& [name, value] : {std::pair<std::string, std::string>{"actor", f.actor}, {"action", f.action}, {"target", f.target}})
    if (value.size() > kMaxFilter) bad.fields.push_back({name, "at most " + std::to_string(kMaxFilter) + " characters"});
  if (!f.action.empty() && !plainAction(f.action))
    bad.fields.push_back({"action", "an action like rollout.create, or a prefix ending in '.' like rollout. (letters, digits, . _ -)"});
  if (f.since && f.until && *f.since >= *f.until) bad.fields.push_back({"until", "must be after since"});
  if (!bad.fields.empty()) {
    bad.message = "invalid audit filter: " + bad.fields[0].path + ": " + bad.fields[0].message;
    return bad;
  }
  return f;
}

json auditJson(const core::AuditRecord& a) {
  json details = json::parse(a.details_json, nullptr, /*allow_exceptions=*/false);
  if (!details.is_object()) details = json::object();
  return {{"id", a.id},         {"at", isoTime(a.at)}, {"actor", a.actor},   {"actor_name", a.actor_name},
          {"action", a.action}, {"target", a.target},  {"details", details}};
}

}  // namespace

void addAuditRoutes(Router& router, Services& s) {
  router.add({.method = "GET", .pattern = "/api/v1/audit", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"actor", "action", "target", "since", "until", "limit", "cursor"}); !q.ok())
                  return q.error();
                auto filter = auditFilter(ctx);
                if (!filter.ok()) return filter.error();
                auto page = s.store->listAudit(*filter);
                if (!page.ok()) return page.error();
                json items = json::array();
                for (const auto& a : page->items) items.push_back(auditJson(a));
                json next = page->more && !page->items.empty() ? json(encodeCursor(json::array({page->items.back().id})))
                                                               : json();
                return jsonResponse(200, {{"items", std::move(items)}, {"next_cursor", std::move(next)}});
              }});

  router.add({.method = "GET", .pattern = "/api/v1/actors", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                auto names = s.store->actorNames();
                if (!names.ok()) return names.error();
                json items = json::array();
                for (const auto& n : *names) items.push_back({{"id", n.id}, {"name", n.name}});
                // By id. Without limit: every one (the console reads the list whole).
                return pagedResult(ctx, json{{"items", std::move(items)}, {"next_cursor", nullptr}},
                                   [](const json& i) { return json::array({i["id"]}); });
              }});
}

}  // namespace kiln::api
