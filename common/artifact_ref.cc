#include "common/artifact_ref.h"

#include <algorithm>
#include <cctype>

namespace kiln {
namespace {

bool hasControlOrSpace(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return c <= 0x20 || c == 0x7f; });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool isSha256Hex(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isxdigit(c); });
}

Result<ArtifactLocation> parseArtifactValue(std::string_view text) {
  const auto expected = [&](const std::string& why) {
    return invalidArgument("artifact '" + std::string(text.substr(0, 200)) + "': " + why +
                           " (expected LOCATION#sha256=HEX: an https://, http:// URL or an absolute path, and the "
                           "file's sha256 as 64 hex digits)");
  };
  const auto hash = text.rfind("#sha256=");
  if (hash == std::string_view::npos) return expected("no #sha256= fragment");
  const std::string_view location = text.substr(0, hash);
  const std::string_view digest = text.substr(hash + 8);
  if (!isSha256Hex(digest)) return expected("the sha256 is not 64 hex digits");
  if (location.empty()) return expected("no location");
  if (hasControlOrSpace(location)) return expected("the location holds a space or a control character");
  if (startsWith(location, "https://") || startsWith(location, "http://")) {
    const auto rest = location.substr(location.find("://") + 3);
    const auto host_end = rest.find('/');
    if (rest.empty() || host_end == 0) return expected("the URL has no host");
    if (host_end == std::string_view::npos || host_end + 1 >= rest.size()) return expected("the URL names no file");
  } else if (location.front() != '/') {
    return expected("the location is neither an http(s) URL nor an absolute path");
  } else if (location.back() == '/') {
    return expected("the path names a directory");
  }
  if (location.find('#') != std::string_view::npos) return expected("the location holds a '#'");
  return ArtifactLocation{std::string(location), lower(digest)};
}

std::string artifactValue(const ArtifactLocation& a) {
  return a.location + "#sha256=" + a.sha256;
}

std::string artifactPlaceholder(const std::string& sha256) {
  return std::string(kArtifactPlaceholderPrefix) + lower(sha256);
}

Result<std::vector<std::string>> replaceArtifactPlaceholders(const std::vector<std::string>& argv,
                                                             const std::map<std::string, std::string>& paths) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (std::string arg : argv) {
    for (auto pos = arg.find(kArtifactPlaceholderPrefix); pos != std::string::npos;
         pos = arg.find(kArtifactPlaceholderPrefix, pos)) {
      const std::string sha = arg.substr(pos + kArtifactPlaceholderPrefix.size(), 64);
      auto it = paths.find(sha);
      if (sha.size() != 64 || it == paths.end())
        return invalidContent("argv names artifact " + sha.substr(0, 12) + "... that the step does not carry");
      arg.replace(pos, kArtifactPlaceholderPrefix.size() + 64, it->second);
      pos += it->second.size();
    }
    out.push_back(std::move(arg));
  }
  return out;
}

std::string artifactFileName(std::string_view location) {
  auto end = location.find_first_of("?#");
  std::string_view path = location.substr(0, end);
  const auto slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") return "artifact";
  std::string out;
  for (unsigned char c : name) out += (std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == '+') ? char(c) : '_';
  return out;
}

Result<std::set<std::string>> parseChecksums(std::string_view text) {
  std::set<std::string> out;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    // sha256sum(1): HEX, then "  " (text) or " *" (binary), then the name.
    if (line.size() < 67 || !isSha256Hex(line.substr(0, 64)) || line[64] != ' ' || (line[65] != ' ' && line[65] != '*'))
      return invalidArgument(
          "checksums line " + std::to_string(line_no) +
          ": expected 'SHA256  NAME' (64 hex digits, two spaces, a file name) as sha256sum prints it");
    out.insert(lower(line.substr(0, 64)));
  }
  if (out.empty()) return invalidArgument("checksums: no 'SHA256  NAME' line");
  return out;
}

}  // namespace kiln
