#include "agents/agent/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "agents/agent/protocol.h"

namespace kiln::agent {
namespace {

using nlohmann::json;

Error ioError(const std::string& what, const std::filesystem::path& path) {
  return unavailable(what + " " + path.string() + ": " + std::strerror(errno));
}

Status writeAll(int fd, const std::string& data, const std::filesystem::path& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ioError("cannot write", path);
    }
    done += static_cast<std::size_t>(n);
  }
  return okStatus();
}

Status fsyncDir(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ioError("cannot open", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return ioError("cannot fsync", dir);
  return okStatus();
}

}  // namespace

Journal::Journal(std::filesystem::path path, JournalLimits limits)
    : path_(std::move(path)),
      limits_(limits),
      compact_lines_at_(limits.compact_lines),
      compact_bytes_at_(limits.compact_bytes) {}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<Journal>> Journal::open(const std::filesystem::path& dir,
                                               JournalLimits limits) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return unavailable("cannot create state dir " + dir.string() + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);
  std::unique_ptr<Journal> journal(new Journal(dir / "journal.jsonl", limits));
  if (auto st = journal->load(); !st) return st.error();
  if (auto st = journal->openForAppend(); !st) return st.error();
  if (auto st = journal->compactIfNeeded(); !st) return st.error();
  return journal;
}

Status Journal::load() {
  std::ifstream in(path_, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(path_)) return okStatus();
    return ioError("cannot read", path_);
  }
  std::string line;
  while (std::getline(in, line)) {
    ++lines_;
    bytes_ += line.size() + 1;
    if (line.empty()) continue;
    json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object() || !record.contains("id") || !record["id"].is_string() ||
        !record.contains("event") || !record["event"].is_string() ||
        !record.value("lease", json()).is_number_integer()) {
      ++skipped_;
      continue;
    }
    apply(record);
  }
  return okStatus();
}

Status Journal::openForAppend() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) return ioError("cannot open", path_);
  // A torn last line (no newline) must not swallow the next record.
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && st.st_size > 0) {
    char last = '\n';
    int rfd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (rfd >= 0) {
      if (::pread(rfd, &last, 1, st.st_size - 1) != 1) last = '\n';
      ::close(rfd);
    }
    if (last != '\n') return writeAll(fd_, "\n", path_);
  }
  return okStatus();
}

JournalEntry& Journal::entry(const std::string& id, std::int64_t lease) {
  for (JournalEntry& e : entries_) {
    if (e.id == id && e.lease == lease) return e;
  }
  entries_.push_back(JournalEntry{id, lease, nullptr, nullptr, false});
  return entries_.back();
}

const JournalEntry* Journal::find(const std::string& id, std::int64_t lease) const {
  for (const JournalEntry& e : entries_) {
    if (e.id == id && e.lease == lease) return &e;
  }
  return nullptr;
}

void Journal::apply(const json& record) {
  const std::string event = record["event"].get<std::string>();
  JournalEntry& e = entry(record["id"].get<std::string>(), record["lease"].get<std::int64_t>());
  if (event == "started") {
    e.started = record;
  } else if (event == "finished") {
    e.result = record.value("result", json::object());
  } else if (event == "reported") {
    e.reported = true;
    e.result = nullptr;  // acknowledged: the report body is no longer needed
  }
}

Status Journal::append(const json& record) {
  const std::string line = dumpJson(record) + "\n";
  if (auto st = writeAll(fd_, line, path_); !st) return st;
  if (::fdatasync(fd_) != 0) return ioError("cannot fsync", path_);
  ++lines_;
  bytes_ += line.size();
  apply(json::parse(line));
  return compactIfNeeded();
}

Status Journal::started(json record) {
  record["event"] = "started";
  return append(record);
}

Status Journal::finished(const std::string& id, std::int64_t lease, json result) {
  return append(json{{"event", "finished"}, {"id", id}, {"lease", lease}, {"result", std::move(result)}});
}

Status Journal::reported(const std::string& id, std::int64_t lease) {
  return append(json{{"event", "reported"}, {"id", id}, {"lease", lease}});
}

Status Journal::compactIfNeeded() {
  if (lines_ <= compact_lines_at_ && bytes_ <= compact_bytes_at_) return okStatus();
  std::size_t reported_total = 0;
  for (const JournalEntry& e : entries_) reported_total += e.reported ? 1 : 0;
  std::size_t reported_skip =
      reported_total > limits_.keep_reported ? reported_total - limits_.keep_reported : 0;
  std::vector<JournalEntry> kept;
  std::string text;
  for (JournalEntry& e : entries_) {
    if (e.reported) {
      if (reported_skip > 0) {
        --reported_skip;
        continue;
      }
      text += dumpJson(json{{"event", "reported"}, {"id", e.id}, {"lease", e.lease}}) + "\n";
    } else {
      if (!e.started.is_null()) text += dumpJson(e.started) + "\n";
      if (e.finished()) {
        text += dumpJson(json{{"event", "finished"}, {"id", e.id}, {"lease", e.lease},
                              {"result", e.result}}) + "\n";
      }
    }
    kept.push_back(std::move(e));
  }
  const std::filesystem::path tmp = path_.string() + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return ioError("cannot create", tmp);
  Status written = writeAll(fd, text, tmp);
  if (written && ::fsync(fd) != 0) written = ioError("cannot fsync", tmp);
  ::close(fd);
  if (!written) return written;
  if (::rename(tmp.c_str(), path_.c_str()) != 0) return ioError("cannot replace", path_);
  if (auto st = fsyncDir(path_.parent_path()); !st) return st;
  entries_ = std::move(kept);
  lines_ = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  bytes_ = text.size();
  // What survived may itself be big (a large unreported result): do not rewrite it again at
  // every append.
  compact_lines_at_ = std::max(limits_.compact_lines, 2 * lines_);
  compact_bytes_at_ = std::max(limits_.compact_bytes, 2 * bytes_);
  return openForAppend();
}

}  // namespace kiln::agent
