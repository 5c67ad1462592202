#include "orchestrator/core/preconditions.h"

#include <algorithm>

#include "common/http_text.h"

namespace kiln::core {

Result<std::optional<std::string>> parseIdempotencyKey(std::string_view header) {
  header = trimOws(header);
  if (header.empty()) return std::optional<std::string>();
  const bool visible = std::all_of(header.begin(), header.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  if (header.size() > 200 || !visible)
    return invalidArgument("Idempotency-Key must be 1-200 visible ASCII characters (a UUID is a good one)");
  return std::optional<std::string>(std::string(header));
}

bool IfMatch::matches(const std::optional<std::string>& current) const {
  if (!current) return false;
  if (any) return true;
  return std::find(etags.begin(), etags.end(), *current) != etags.end();
}

Result<std::optional<IfMatch>> parseIfMatch(std::string_view header) {
  header = trimOws(header);
  if (header.empty()) return std::optional<IfMatch>();
  IfMatch out;
  if (header == "*") {
    out.any = true;
    return std::optional<IfMatch>(out);
  }
  const auto bad = [] {
    return invalidArgument("If-Match must be * or a list of quoted entity tags from an ETag header, e.g. \"3f2a...\"");
  };
  while (!header.empty()) {
    const auto comma = header.find(',');
    const std::string_view tag = trimOws(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    if (tag.size() < 2 || tag.front() != '"' || tag.back() != '"' ||
        tag.substr(1, tag.size() - 2).find('"') != std::string_view::npos)
      return bad();
    out.etags.emplace_back(tag);
  }
  if (out.etags.empty()) return bad();
  return std::optional<IfMatch>(out);
}

Error preconditionFailed(const std::string& what, const std::optional<std::string>& current) {
  Error e(ErrorCode::kPreconditionFailed,
          current ? what + " changed since that ETag was read: read it again, then retry with the new ETag"
                  : what + " does not exist, so no If-Match can match");
  if (current) e.with("etag", *current);
  return e;
}

}  // namespace kiln::core
