#pragma once
// Small text rules of HTTP header values (RFC 9110), shared by the header parsers
// (Accept-Encoding in orchestrator/api/compress.cc, If-Match and Idempotency-Key in
// orchestrator/core/preconditions.cc).

#include <string_view>

namespace kiln {

// `s` without the optional whitespace (spaces and tabs) around a header value or list item.
inline std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace kiln
