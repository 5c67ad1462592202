#include "agents/agent/artifacts.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <system_error>
#include <thread>

#include "common/artifact_ref.h"

namespace kiln::agent {
namespace fs = std::filesystem;

namespace {

// A URL as logs and reports may show it: no user:password@, no query (tokens live there).
std::string shownUrl(const std::string& url) {
  std::string out = url.substr(0, url.find_first_of("?#"));
  if (auto scheme = out.find("://"); scheme != std::string::npos) {
    const auto host_start = scheme + 3;
    const auto at = out.find('@', host_start);
    const auto slash = out.find('/', host_start);
    if (at != std::string::npos && (slash == std::string::npos || at < slash))
      out.erase(host_start, at + 1 - host_start);
  }
  return out;
}

bool isUrl(const std::string& s) {
  return s.rfind("https://", 0) == 0 || s.rfind("http://", 0) == 0;
}

std::uint64_t fileSize(const fs::path& p) {
  std::error_code ec;
  auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

void touch(const fs::path& p) {
  std::error_code ec;
  fs::last_write_time(p, fs::file_time_type::clock::now(), ec);
}

class CurlGlobal {
 public:
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

class CurlDownloader : public Downloader {
 public:
  explicit CurlDownloader(ArtifactSettings s) : s_(std::move(s)) {
    static CurlGlobal global;  // thread-safe once
  }

  Status fetch(const std::string& url, const fs::path& part, const exec::CancelToken* cancel) override {
    for (int round = 0; round < 2; ++round) {
      const std::uint64_t offset = fileSize(part);
      std::FILE* out = std::fopen(part.c_str(), "ab");
      if (out == nullptr) return internalError("cannot write " + part.string());
      CURL* curl = curl_easy_init();
      if (curl == nullptr) {
        std::fclose(out);
        return internalError("libcurl: no handle");
      }
      char err[CURL_ERROR_SIZE] = {0};
      curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
      curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
      curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
      curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
      curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
      curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
      curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, err);
      curl_easy_setopt(curl, CURLOPT_WRITEDATA, out);
      curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &writeFile);
      curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, static_cast<long>(s_.connect_timeout.count()));
      curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
      curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(s_.stall_timeout.count()));
      if (s_.rate_limit_bytes_per_s > 0)
        curl_easy_setopt(curl, CURLOPT_MAX_RECV_SPEED_LARGE, static_cast<curl_off_t>(s_.rate_limit_bytes_per_s));
      if (!s_.ca_bundle.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, s_.ca_bundle.c_str());
      if (offset > 0) curl_easy_setopt(curl, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(offset));
      curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(curl, CURLOPT_XFERINFODATA, cancel);
      curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &progress);
      const CURLcode rc = curl_easy_perform(curl);
      long status = 0;
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
      curl_easy_cleanup(curl);
      const bool flushed = std::fclose(out) == 0;
      if (rc == CURLE_OK) {
        if (!flushed) return internalError("cannot write " + part.string());
        return okStatus();
      }
      if (rc == CURLE_RANGE_ERROR && offset > 0 && round == 0) {
        // The server ignored the range: start the file over.
        std::error_code ec;
        fs::remove(part, ec);
        continue;
      }
      if (rc == CURLE_HTTP_RETURNED_ERROR && status == 416 && offset > 0) {
        // The partial file is as long as (or longer than) the body: let the hash decide.
        return okStatus();
      }
      if (rc == CURLE_ABORTED_BY_CALLBACK) return unavailable("cancelled");
      std::string why = err[0] ? err : curl_easy_strerror(rc);
      while (!why.empty() && why.back() == '\n') why.pop_back();
      return unavailable(why + (offset > 0 ? " (resumed at byte " + std::to_string(offset) + ")" : ""));
    }
    return unavailable("the server ignored the range request twice");
  }

 private:
  static std::size_t writeFile(char* data, std::size_t size, std::size_t n, void* file) {
    return std::fwrite(data, size, n, static_cast<std::FILE*>(file));
  }
  static int progress(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    const auto* c = static_cast<const exec::CancelToken*>(cancel);
    return c != nullptr && c->cancelled() ? 1 : 0;
  }
  ArtifactSettings s_;
};

}  // namespace

std::unique_ptr<Downloader> makeCurlDownloader(const ArtifactSettings& settings) {
  return std::make_unique<CurlDownloader>(settings);
}

Result<std::string> sha256OfFile(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return notFound("cannot read " + file.string());
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return internalError("sha256: no context");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return internalError("error reading " + file.string());
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

// ---- ArtifactCache ----

ArtifactCache::ArtifactCache(fs::path dir, std::uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

Status ArtifactCache::open() {
  std::error_code ec;
  fs::create_directories(dir_ / ".partial", ec);
  if (ec) return internalError("artifact cache " + dir_.string() + ": " + ec.message());
  fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace, ec);
  return okStatus();
}

fs::path ArtifactCache::partial(const std::string& sha256) const {
  return dir_ / ".partial" / sha256;
}

std::optional<fs::path> ArtifactCache::find(const std::string& sha256, const std::string& name) {
  const fs::path entry = dir_ / sha256;
  const fs::path file = entry / name;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    // The same bits under another name: link it under this one too (tools read names).
    if (fs::is_directory(entry, ec))
      for (const auto& other : fs::directory_iterator(entry, ec))
        if (other.is_regular_file()) {
          fs::create_hard_link(other.path(), file, ec);
          if (ec) fs::copy_file(other.path(), file, ec);
          break;
        }
    if (!fs::is_regular_file(file, ec)) return std::nullopt;
  }
  auto actual = sha256OfFile(file);
  if (!actual.ok() || *actual != sha256) {
    fs::remove_all(entry, ec);  // changed on disk: never used
    return std::nullopt;
  }
  touch(entry);
  return file;
}

Result<fs::path> ArtifactCache::admit(const std::string& sha256, const std::string& name,
                                      const std::set<std::string>& keep) {
  const fs::path from = partial(sha256);
  const std::uint64_t size = fileSize(from);
  std::error_code ec;
  if (size > max_bytes_) {
    fs::remove(from, ec);
    return invalidContent("it is " + std::to_string(size) + " bytes, more than the artifact cache holds (" +
                          std::to_string(max_bytes_) + " bytes, --artifact-cache-max)");
  }
  const fs::path entry = dir_ / sha256;
  fs::create_directories(entry, ec);
  const fs::path file = entry / name;
  fs::rename(from, file, ec);
  if (ec)
    return internalError("artifact cache: cannot move " + from.string() + " to " + file.string() + ": " + ec.message());
  ::chmod(file.c_str(), 0444);
  touch(entry);
  std::set<std::string> kept = keep;
  kept.insert(sha256);
  evict(kept);
  return file;
}

std::uint64_t ArtifactCache::usedBytes() const {
  std::uint64_t total = 0;
  std::set<std::pair<dev_t, ino_t>> seen;  // one file under two names (hard links) counts once
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && seen.insert({st.st_dev, st.st_ino}).second &&
        it->path().parent_path().filename() != ".partial")
      total += static_cast<std::uint64_t>(st.st_size);
  }
  return total;
}

void ArtifactCache::evict(const std::set<std::string>& keep) {
  struct Entry {
    fs::file_time_type used;
    fs::path path;
  };
  std::vector<Entry> entries;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name == ".partial" || keep.count(name)) continue;
    entries.push_back({fs::last_write_time(e.path(), ec), e.path()});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const auto& e : entries) {
    if (usedBytes() <= max_bytes_) return;
    fs::remove_all(e.path, ec);
  }
}

// ---- ArtifactFetcher ----

ArtifactFetcher::ArtifactFetcher(ArtifactSettings settings, Downloader& downloader, SignatureCheck verify,
                                 std::shared_ptr<Logger> log)
    : settings_(std::move(settings)),
      downloader_(downloader),
      verify_(std::move(verify)),
      log_(std::move(log)),
      cache_(settings_.cache_dir, settings_.cache_max_bytes) {}

std::vector<std::string> ArtifactFetcher::sources(const std::string& url) const {
  std::vector<std::string> out;
  for (const auto& [prefix, mirror] : settings_.mirrors)
    if (!prefix.empty() && url.rfind(prefix, 0) == 0) out.push_back(mirror + url.substr(prefix.size()));
  out.push_back(url);
  return out;
}

Result<std::map<std::string, FetchedArtifact>> ArtifactFetcher::prepare(
    const std::vector<protocol::ArtifactRef>& artifacts, const exec::CancelToken* cancel) {
  std::set<std::string> keep;
  for (const auto& a : artifacts) keep.insert(a.sha256);
  auto what = [](const protocol::ArtifactRef& a) {
    return "artifact " + artifactFileName(a.url) + " (sha256 " + a.sha256.substr(0, 12) + "...)";
  };
  // The host's own trust rule, whatever kilnd sent, for every artifact before a byte is
  // fetched. A bundle's artifacts share one signed list: gpgv runs once for it.
  std::set<std::pair<std::string, std::string>> verified;
  SignatureCheck verify_once;
  if (verify_)
    verify_once = [&](const std::string& data, const std::string& sig) -> Status {
      if (verified.count({data, sig})) return okStatus();
      auto st = verify_(data, sig);
      if (st.ok()) verified.insert({data, sig});
      return st;
    };
  for (const auto& a : artifacts)
    if (auto trusted = checkArtifactTrust({a.checksums, a.signature}, {a.sha256}, verify_once, what(a)); !trusted.ok())
      return trusted.error();
  std::map<std::string, FetchedArtifact> out;
  for (const auto& a : artifacts) {
    if (out.count(a.sha256)) continue;
    auto got = fetchOne(a, keep, cancel);
    if (!got.ok()) {
      Error e = got.error();
      e.message = what(a) + ": " + e.message;
      return e;
    }
    out[a.sha256] = std::move(*got);
  }
  return out;
}

Result<FetchedArtifact> ArtifactFetcher::fetchOne(const protocol::ArtifactRef& a, const std::set<std::string>& keep,
                                                  const exec::CancelToken* cancel) {
  const std::string name = artifactFileName(a.url);
  if (auto hit = cache_.find(a.sha256, name)) return FetchedArtifact{*hit, true, shownUrl(a.url), fileSize(*hit)};
  const fs::path part = cache_.partial(a.sha256);
  std::error_code ec;
  if (!isUrl(a.url)) {
    // A path on this host: copied in first, so what is checked is what the tool reads.
    fs::remove(part, ec);
    if (!fs::copy_file(a.url, part, fs::copy_options::overwrite_existing, ec))
      return unavailable("cannot read " + a.url + ": " + ec.message());
    auto sha = sha256OfFile(part);
    if (!sha.ok()) return sha.error();
    if (*sha != a.sha256) {
      fs::remove(part, ec);
      return invalidContent("sha256 mismatch: " + a.url + " has " + *sha);
    }
    auto path = cache_.admit(a.sha256, name, keep);
    if (!path.ok()) return path.error();
    return FetchedArtifact{*path, false, a.url, fileSize(*path)};
  }
  std::vector<std::string> failures;
  for (const std::string& source : sources(a.url)) {
    for (int attempt = 1; attempt <= settings_.tries_per_source; ++attempt) {
      if (cancel != nullptr && cancel->cancelled()) return unavailable("cancelled while fetching");
      const std::uint64_t before = fileSize(part);
      Status st = downloader_.fetch(source, part, cancel);
      if (!st.ok()) {
        log_->warn("artifact {}: {} try {}: {}", a.sha256.substr(0, 12), shownUrl(source), attempt, st.error().message);
        if (cancel != nullptr && cancel->cancelled()) return unavailable("cancelled while fetching");
        if (attempt == settings_.tries_per_source)
          failures.push_back(shownUrl(source) + ": " + st.error().message);
        else
          std::this_thread::sleep_for(settings_.retry_wait);
        continue;
      }
      auto sha = sha256OfFile(part);
      if (!sha.ok()) return sha.error();
      if (*sha != a.sha256) {
        // Wrong bits (a tampered or stale mirror, or a resume over a changed file): never kept.
        fs::remove(part, ec);
        log_->error("artifact {}: sha256 mismatch from {} (got {})", a.sha256.substr(0, 12), shownUrl(source), *sha);
        failures.push_back(shownUrl(source) + ": sha256 mismatch (got " + *sha + ")" +
                           (before > 0 ? " after resuming at byte " + std::to_string(before) : ""));
        break;  // the next source
      }
      auto path = cache_.admit(a.sha256, name, keep);
      if (!path.ok()) return path.error();
      log_->info("artifact {}: fetched {} bytes from {}", a.sha256.substr(0, 12), fileSize(*path), shownUrl(source));
      return FetchedArtifact{*path, false, shownUrl(source), fileSize(*path)};
    }
  }
  std::string why = "not fetched: ";
  for (std::size_t i = 0; i < failures.size(); ++i) why += (i ? "; " : "") + failures[i];
  const bool mismatch = std::any_of(failures.begin(), failures.end(), [](const std::string& f) {
    return f.find("sha256 mismatch") != std::string::npos;
  });
  return mismatch ? Error(invalidContent(why)) : Error(unavailable(why));
}

}  // namespace kiln::agent
