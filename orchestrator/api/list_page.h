#pragma once
// Paging for the small lists that a store reads whole (sites, tokens, workflows, the quarantine
// queue, bundles, a rollout's pods and events): the standard `limit` and `cursor` over the full
// answer, in one place. Pure and thread-safe.
//
// The order is by a unique key per item (`key`, a JSON array compared element by element:
// numbers as numbers, strings byte-wise), so a page boundary never splits or repeats an item,
// also when items come and go between pages. The cursor is an opaque encoding of the last key
// of the page; a client passes it back unchanged.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace kiln::api {

// A key as a cursor, and back (kInvalidArgument "cursor is not valid" for anything that
// encodeCursor did not make).
std::string encodeCursor(const nlohmann::json& key);
Result<nlohmann::json> decodeCursor(std::string_view cursor);

// `answer` is {"items": [...], other fields...}: its items sorted by `key` (stable), those after
// `cursor` (the start when ""), at most `limit` of them; next_cursor set when more follow, null
// on the last page. Other top-level fields are kept. `limit` "" = `default_limit`, and no
// default (nullopt) = every item after the cursor: the lists the console and kilnctl read whole.
// Errors (kInvalidArgument): limit outside 1..1000, a bad cursor.
Result<nlohmann::json> pageList(nlohmann::json answer, std::string_view limit, std::string_view cursor,
                                const std::function<nlohmann::json(const nlohmann::json& item)>& key,
                                std::optional<int> default_limit = std::nullopt);

}  // namespace kiln::api
