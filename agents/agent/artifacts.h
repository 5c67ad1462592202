#pragma once
// The artifacts a step needs (issue 31), on the host: fetched (from a per-building mirror
// first, then the origin), resumed when a download breaks, rate-limited, checked against the
// sha256 kilnd sent (and the bundle's signature, when this host trusts keys) BEFORE anything
// uses them, kept in a content-addressed cache with a size cap, and handed to the tool as a
// local path. A mismatch, a truncated or unreachable download, a bad signature: the step is
// reported not started, with the reason, and nothing ran.
//
// Threads: one ArtifactFetcher per agent, used by the executor thread only.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/agent_protocol.h"
#include "common/artifact_trust.h"
#include "common/exec/process_runner.h"
#include "common/logger.h"
#include "common/result.h"

namespace kiln::agent {

struct ArtifactSettings {
  std::filesystem::path cache_dir;              // --artifact-cache (default STATE_DIR/artifacts)
  std::uint64_t cache_max_bytes = 64ull << 30;  // --artifact-cache-max
  std::uint64_t rate_limit_bytes_per_s = 0;     // --artifact-rate-limit (0: none)
  std::string ca_bundle;                        // --artifact-ca-bundle (https; empty: the system's)
  // --artifact-mirror PREFIX=MIRROR: a URL starting with PREFIX is fetched from MIRROR + the
  // rest first (the building's mirror), then from the URL itself.
  std::vector<std::pair<std::string, std::string>> mirrors;
  // Tries per source; each try resumes where the last one broke off.
  int tries_per_source = 3;
  std::chrono::milliseconds retry_wait{1000};
  std::chrono::seconds connect_timeout{20};
  std::chrono::seconds stall_timeout{60};  // a transfer below 1 byte/s this long is broken
};

// Moves a URL's bytes into a file. The real one is libcurl's (makeCurlDownloader).
class Downloader {
 public:
  virtual ~Downloader() = default;
  // Appends `url`'s bytes to the file at `part`, starting at the file's current size (a Range
  // request; a server that does not honour it makes the download start over). ok when the
  // server sent the whole body; otherwise an error saying why (what was received stays in
  // `part` for the next try).
  virtual Status fetch(const std::string& url, const std::filesystem::path& part, const exec::CancelToken* cancel) = 0;
};
std::unique_ptr<Downloader> makeCurlDownloader(const ArtifactSettings& settings);

// sha256 of a file's content, lower-case hex.
Result<std::string> sha256OfFile(const std::filesystem::path& file);

// Content-addressed: DIR/<sha256>/<file name>, partial downloads in DIR/.partial/<sha256>. The
// directory's modification time is the artifact's last use (eviction is least recently used).
class ArtifactCache {
 public:
  ArtifactCache(std::filesystem::path dir, std::uint64_t max_bytes);
  Status open();  // creates the directories (mode 0700)

  // The cached file, when present and its content still hashes to `sha256` (a changed file is
  // removed); marks it used.
  std::optional<std::filesystem::path> find(const std::string& sha256, const std::string& name);
  std::filesystem::path partial(const std::string& sha256) const;
  // Moves the checked partial file into place and evicts the least recently used artifacts
  // (none in `keep`) until the cache fits its cap. An artifact bigger than the cap is refused.
  Result<std::filesystem::path> admit(const std::string& sha256, const std::string& name,
                                      const std::set<std::string>& keep);
  std::uint64_t usedBytes() const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  void evict(const std::set<std::string>& keep);
  std::filesystem::path dir_;
  std::uint64_t max_bytes_;
};

struct FetchedArtifact {
  std::filesystem::path path;
  bool from_cache = false;
  std::string source;  // the URL or path it came from
  std::uint64_t bytes = 0;
};

class ArtifactFetcher {
 public:
  // `verify`: the trusted keys' check (common/exec/gpgv.h); empty when the host trusts no keys.
  ArtifactFetcher(ArtifactSettings settings, Downloader& downloader, SignatureCheck verify,
                  std::shared_ptr<Logger> log);
  Status open() { return cache_.open(); }

  // Every artifact checked and in the cache, by sha256. The error says which artifact and why.
  Result<std::map<std::string, FetchedArtifact>> prepare(const std::vector<protocol::ArtifactRef>& artifacts,
                                                         const exec::CancelToken* cancel);

  // Where a URL is fetched from, in order: the mirrors' rewrites, then the URL.
  std::vector<std::string> sources(const std::string& url) const;
  ArtifactCache& cache() { return cache_; }

 private:
  Result<FetchedArtifact> fetchOne(const protocol::ArtifactRef& a, const std::set<std::string>& keep,
                                   const exec::CancelToken* cancel);
  ArtifactSettings settings_;
  Downloader& downloader_;
  SignatureCheck verify_;
  std::shared_ptr<Logger> log_;
  ArtifactCache cache_;
};

}  // namespace kiln::agent
