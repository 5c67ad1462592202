#pragma once
// Artifacts a step needs (issue 31): how kilnd names one, how the agent finds it in a step's
// argv, and the signed checksum list that vouches for it. Pure; thread-safe.
//
// A workflow parameter of type `artifact` holds `LOCATION#sha256=HEX` (pip's hash-fragment
// form): LOCATION is an https:// or http:// URL or an absolute path on the host, HEX the
// file's sha256 (64 hex digits). Empty means "no artifact" (the step's `when` skips it).
//
// kilnd puts artifactPlaceholder(sha256) in the argv it sends; the agent fetches the artifact,
// checks it, and replaces the placeholder with the verified file's local path. The tool never
// sees a URL.
//
// A signed bundle carries `checksums` (the text of a SHA256SUMS file: "HEX  NAME" lines, as
// sha256sum(1) prints them) and `signature` (an ASCII-armored detached OpenPGP signature of
// exactly that text, checked with gpgv against the site's trusted keys). An artifact is vouched
// for when its sha256 is one of the list's hashes.

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace kiln {

struct ArtifactLocation {
  std::string location;  // URL or absolute path
  std::string sha256;    // 64 lower-case hex digits
  bool operator==(const ArtifactLocation&) const = default;
};

// "https://m/x.fwpkg#sha256=ab..." -> {location, sha256 (lower-cased)}. kInvalidArgument saying
// what was expected for anything else (no fragment, a hash that is not 64 hex digits, a
// location that is neither an http(s) URL with a host nor an absolute path, control
// characters or spaces).
Result<ArtifactLocation> parseArtifactValue(std::string_view text);
// The canonical text of a location (what parseArtifactValue reads).
std::string artifactValue(const ArtifactLocation& a);

// Whether `text` is 64 hex digits.
bool isSha256Hex(std::string_view text);

// The argv text the agent replaces with the artifact's local path.
std::string artifactPlaceholder(const std::string& sha256);
// The prefix every placeholder starts with: an argv element holding it names an artifact.
inline constexpr std::string_view kArtifactPlaceholderPrefix = "kiln-artifact:sha256:";

// `argv` with every placeholder replaced by the path of its artifact (sha256 -> path): what the
// agent runs, and what kiln-vfleet simulates. kInvalidContent when an element names an artifact
// that `paths` does not hold (kilnd sent an argv and a list that disagree).
Result<std::vector<std::string>> replaceArtifactPlaceholders(const std::vector<std::string>& argv,
                                                             const std::map<std::string, std::string>& paths);

// The file name a location ends in ("x.fwpkg"); "artifact" when it has none. Tools may read
// the name (an image's extension, a package's version), so the cache keeps it.
std::string artifactFileName(std::string_view location);

// The hashes of a SHA256SUMS text (lower-cased). kInvalidArgument naming the line for a line
// that is neither blank nor "HEX  NAME" / "HEX *NAME"; an empty list is an error too.
Result<std::set<std::string>> parseChecksums(std::string_view text);

}  // namespace kiln
