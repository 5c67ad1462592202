#pragma once
// Calling the REST API from a command: send, turn failures into stderr text and exit code 1,
// follow list cursors, print JSON or a table.

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"

namespace kiln::cli {

inline constexpr const char* kApiPrefix = "/api/v1";

// The stderr text for an HTTP error response: "kilnctl: MESSAGE (HTTP 422 invalid_content)"
// then one indented line per details.fields entry, details.state, details.allowed_actions and
// any other detail. A body that is not Kiln's error JSON is shown (shortened) as is. Pure.
std::string renderApiError(int status, const std::string& body);

// Sends `request` and parses the JSON answer. On a transport failure, an HTTP status >= 400 or
// a body that is not JSON, prints the error to ctx.err and returns nullopt (exit 1).
// Pre-condition: ctx.transport is set (the command is not offline).
std::optional<nlohmann::json> callJson(CommandContext& ctx, const ApiRequest& request);

// A list call. With `all`, follows next_cursor to the end and returns {"items": [...]} with
// every page's items; otherwise returns the one page as the server sent it.
std::optional<nlohmann::json> fetchList(CommandContext& ctx, ApiRequest request, bool all);

// Prints `value` as indented JSON with --json, else render(value); returns kExitOk.
int printResult(CommandContext& ctx, const nlohmann::json& value,
                const std::function<std::string(const nlohmann::json&)>& render);

// For a list printed as a table: tells stderr how to get the next page when there is one.
void noteMorePages(CommandContext& ctx, const nlohmann::json& page);

}  // namespace kiln::cli
