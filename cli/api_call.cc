#include "cli/api_call.h"

#include <ostream>

#include "cli/table.h"

namespace kiln::cli {

using nlohmann::json;

std::string renderApiError(int status, const std::string& body) {
  const std::string http = "HTTP " + std::to_string(status);
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("error") || !doc["error"].is_object()) {
    std::string shown = body.size() > 300 ? body.substr(0, 300) + "..." : body;
    while (!shown.empty() && (shown.back() == '\n' || shown.back() == '\r')) shown.pop_back();
    return "kilnctl: the server answered " + http + (shown.empty() ? "" : ": " + shown) + "\n";
  }
  const json& e = doc["error"];
  const std::string code = field(e, "code");
  std::string message = field(e, "message");
  if (message.empty()) message = "the call failed";
  std::string out = "kilnctl: " + message + " (" + http + (code.empty() ? "" : " " + code) + ")\n";
  auto details = e.find("details");
  if (details == e.end() || !details->is_object()) return out;
  for (const auto& [key, value] : details->items()) {
    if (key == "fields" && value.is_array()) {
      for (const auto& f : value) {
        const std::string path = field(f, "path");
        out += "  " + (path.empty() ? std::string("(document)") : path) + ": " + field(f, "message") + "\n";
      }
    } else if (key == "allowed_actions" && value.is_array()) {
      std::string list;
      for (const auto& a : value) list += (list.empty() ? "" : ", ") + cellText(a);
      out += "  allowed actions: " + (list.empty() ? std::string("none") : list) + "\n";
    } else {
      out += "  " + key + ": " + cellText(value) + "\n";
    }
  }
  return out;
}

std::optional<json> callJson(CommandContext& ctx, const ApiRequest& request) {
  KILN_CHECK(ctx.transport != nullptr);
  auto response = ctx.transport->send(request);
  if (!response.ok()) {
    ctx.err << "kilnctl: " << response.error().message << "\n";
    return std::nullopt;
  }
  if (response->status >= 400) {
    ctx.err << renderApiError(response->status, response->body);
    return std::nullopt;
  }
  json doc = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    ctx.err << "kilnctl: the server answered HTTP " << response->status << " with a body that is not JSON\n";
    return std::nullopt;
  }
  return doc;
}

std::optional<json> fetchList(CommandContext& ctx, ApiRequest request, bool all) {
  auto page = callJson(ctx, request);
  if (!page || !all) return page;
  json items = json::array();
  std::string previous_cursor;
  while (true) {
    if (!page->is_object() || !(*page)["items"].is_array()) {
      ctx.err << "kilnctl: the server's list has no items array\n";
      return std::nullopt;
    }
    for (auto& item : (*page)["items"]) items.push_back(std::move(item));
    const json& next = (*page)["next_cursor"];
    if (!next.is_string() || next.get<std::string>().empty()) break;
    if (next.get<std::string>() == previous_cursor) {
      ctx.err << "kilnctl: the server returned the same cursor twice; stopping\n";
      return std::nullopt;
    }
    previous_cursor = next.get<std::string>();
    request.setQuery("cursor", previous_cursor);
    page = callJson(ctx, request);
    if (!page) return std::nullopt;
  }
  return json{{"items", std::move(items)}};
}

int printResult(CommandContext& ctx, const json& value, const std::function<std::string(const json&)>& render) {
  if (ctx.json()) ctx.out << value.dump(2) << "\n";
  else ctx.out << render(value);
  return kExitOk;
}

void noteMorePages(CommandContext& ctx, const json& page) {
  if (ctx.json() || !page.is_object()) return;
  auto next = page.find("next_cursor");
  if (next == page.end() || !next->is_string()) return;
  ctx.err << "(more: add --all, or --cursor " << next->get<std::string>() << ")\n";
}

}  // namespace kiln::cli
