#include "orchestrator/api/list_page.h"

#include <algorithm>

#include "orchestrator/api/codecs.h"

namespace kiln::api {
namespace {

using nlohmann::json;

// A version mark inside the cursor, so a cursor of another list shape fails to decode.
constexpr std::string_view kCursorMark = "k1:";

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string encodeCursor(const json& key) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string raw = std::string(kCursorMark) + key.dump();
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

Result<json> decodeCursor(std::string_view cursor) {
  const Error bad = invalidArgument("cursor is not valid (pass back next_cursor of the previous page unchanged)");
  if (cursor.size() % 2 != 0 || cursor.size() > 4096) return bad;
  std::string raw;
  raw.reserve(cursor.size() / 2);
  for (std::size_t i = 0; i < cursor.size(); i += 2) {
    const int hi = hexValue(cursor[i]), lo = hexValue(cursor[i + 1]);
    if (hi < 0 || lo < 0) return bad;
    raw.push_back(static_cast<char>(hi * 16 + lo));
  }
  if (raw.rfind(kCursorMark, 0) != 0) return bad;
  json key = json::parse(raw.substr(kCursorMark.size()), nullptr, /*allow_exceptions=*/false);
  if (!key.is_array()) return bad;
  return key;
}

Result<json> pageList(json answer, std::string_view limit, std::string_view cursor,
                      const std::function<json(const json& item)>& key, std::optional<int> default_limit) {
  auto page = decodePage(limit, cursor);
  if (!page.ok()) return page.error();
  const std::optional<int> max_items = limit.empty() ? default_limit : std::optional<int>(page->limit);
  std::optional<json> after;
  if (!cursor.empty()) {
    auto k = decodeCursor(cursor);
    if (!k.ok()) return k.error();
    after = std::move(*k);
  }
  std::vector<std::pair<json, json>> keyed;
  for (auto& item : answer["items"]) keyed.emplace_back(key(item), std::move(item));
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  json items = json::array();
  json next = nullptr;
  const json* last = nullptr;
  for (auto& [k, item] : keyed) {
    if (after && !(*after < k)) continue;
    if (max_items && last && static_cast<int>(items.size()) == *max_items) {
      next = encodeCursor(*last);
      break;
    }
    items.push_back(std::move(item));
    last = &k;
  }
  answer["items"] = std::move(items);
  answer["next_cursor"] = std::move(next);
  return answer;
}

}  // namespace kiln::api
