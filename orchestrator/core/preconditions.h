#pragma once
// Conditions a REST write carries so a script can retry it safely (issue 19): an
// Idempotency-Key on creates, and If-Match on what operators edit. Checked by the stores in
// the transaction that writes, so two replicas cannot both pass the same condition.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace kiln::core {

// A create's Idempotency-Key, recorded with the object it created (one transaction).
struct IdempotencyClaim {
  std::string key;          // the client's header, 1-200 visible ASCII characters
  std::string scope;        // what it created: "rollout" | "workflow_run"
  std::string fingerprint;  // sha256 of the request, to tell a retry from a reuse
};

// A key already used: by what, and for which object.
struct IdempotencyRecord {
  std::string scope, fingerprint, object_id;
};

// The store's error when a claim's key was taken meanwhile (details: idempotency_key): the
// caller looks the key up again and answers as for a retry.
inline constexpr std::string_view kIdempotencyKeyTaken = "idempotency_key_taken";

// Validates an Idempotency-Key header (empty: none). kInvalidArgument when malformed.
Result<std::optional<std::string>> parseIdempotencyKey(std::string_view header);

// An If-Match header: "*" (any current version) or a list of strong entity tags.
struct IfMatch {
  bool any = false;
  std::vector<std::string> etags;  // with their quotes, as ETag headers carry them
  // Whether a write may replace the current version (nullopt: none exists).
  bool matches(const std::optional<std::string>& current_etag) const;
};

// Parses an If-Match header (empty: no condition). Weak tags (W/"...") never match a strong
// comparison, so they are refused with kInvalidArgument rather than silently failing.
Result<std::optional<IfMatch>> parseIfMatch(std::string_view header);

// The 412 of a failed If-Match, with the current ETag (if any) in details.etag.
Error preconditionFailed(const std::string& what, const std::optional<std::string>& current_etag);

}  // namespace kiln::core
