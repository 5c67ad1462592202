#include "orchestrator/retention/sweeper.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace kiln::retention {

std::string FileAuditExport::currentFile() const {
  const std::time_t t = WallClock::to_time_t(clock_.now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char name[64];
  std::snprintf(name, sizeof name, "audit-%04d-%02d.jsonl", tm.tm_year + 1900, tm.tm_mon + 1);
  return dir_ + "/" + name;
}

Status FileAuditExport::append(const std::vector<AuditLine>& lines) {
  if (lines.empty()) return okStatus();
  const std::string path = currentFile();
  std::string text;
  for (const auto& l : lines) {
    text += l.json;
    text += '\n';
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) return Error(ErrorCode::kUnavailable, "audit export " + path + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Error(ErrorCode::kUnavailable, "audit export " + path + ": write: " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return Error(ErrorCode::kUnavailable, "audit export " + path + ": fsync: " + why);
  }
  ::close(fd);
  return okStatus();
}

Sweeper::Sweeper(RetentionStore& store, AuditExport* audit_export, Policy policy, Clock& clock, Logger& log,
                 SweeperOptions options)
    : store_(store), export_(audit_export), policy_(std::move(policy)), clock_(clock), log_(log), options_(options) {}

int Sweeper::sweepKind(Kind kind, TimePoint before, SweepResult& r) {
  const int batch = kind == Kind::kRuns || kind == Kind::kPreJobRuns ? options_.run_batch : options_.row_batch;
  int total = 0;
  for (int i = 0; i < options_.max_batches; ++i) {
    auto n = store_.prune(kind, before, batch);
    if (!n.ok()) {
      ++r.errors;
      log_.warn(std::string("retention: ") + kindName(kind) + ": " + n.error().message);
      break;
    }
    total += *n;
    if (*n < batch) break;
  }
  return total;
}

int Sweeper::sweepAudit(TimePoint before, SweepResult& r) {
  int total = 0;
  for (int i = 0; i < options_.max_batches; ++i) {
    auto lines = store_.auditBefore(before, options_.row_batch);
    if (!lines.ok()) {
      ++r.errors;
      log_.warn("retention: audit: " + lines.error().message);
      break;
    }
    if (lines->empty()) break;
    // On disk first; only then may they go.
    if (auto st = export_->append(*lines); !st.ok()) {
      ++r.errors;
      log_.error("retention: audit records not exported, none deleted: " + st.error().message);
      break;
    }
    auto n = store_.deleteAuditThrough(lines->back().id, before);
    if (!n.ok()) {
      ++r.errors;
      log_.warn("retention: audit: " + n.error().message);
      break;
    }
    total += *n;
    if (static_cast<int>(lines->size()) < options_.row_batch) break;
  }
  return total;
}

SweepResult Sweeper::sweep() {
  SweepResult r;
  const TimePoint now = clock_.now();
  for (const auto& [kind, before] : cutoffs(policy_, now, export_ != nullptr)) {
    const int n = kind == Kind::kAudit ? sweepAudit(before, r) : sweepKind(kind, before, r);
    r.deleted[kind] = n;
  }
  std::string said;
  for (const auto& [kind, n] : r.deleted)
    if (n > 0) said += (said.empty() ? "" : ", ") + std::to_string(n) + " " + kindName(kind);
  if (!said.empty()) log_.info("retention: deleted " + said);
  std::lock_guard lock(mu_);
  for (const auto& [kind, n] : r.deleted) deleted_total_[kind] += static_cast<std::uint64_t>(n);
  errors_total_ += static_cast<std::uint64_t>(r.errors);
  last_sweep_ = std::chrono::duration<double>(clock_.now().time_since_epoch()).count();
  return r;
}

std::string Sweeper::metrics() const {
  std::lock_guard lock(mu_);
  std::string out =
      "# HELP kiln_retention_deleted_total Rows deleted by the retention rules (runs count whole runs).\n"
      "# TYPE kiln_retention_deleted_total counter\n";
  for (Kind k : kKinds) {
    const auto it = deleted_total_.find(k);
    out += std::string("kiln_retention_deleted_total{kind=\"") + kindName(k) + "\"} " +
           std::to_string(it == deleted_total_.end() ? 0 : it->second) + "\n";
  }
  out +=
      "# HELP kiln_retention_errors_total Retention batches that failed (database, or the audit export).\n"
      "# TYPE kiln_retention_errors_total counter\n"
      "kiln_retention_errors_total " +
      std::to_string(errors_total_) + "\n";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", last_sweep_);
  out +=
      "# HELP kiln_retention_last_sweep_timestamp_seconds When this replica last swept (0: never).\n"
      "# TYPE kiln_retention_last_sweep_timestamp_seconds gauge\n"
      "kiln_retention_last_sweep_timestamp_seconds " +
      std::string(buf) + "\n";
  return out;
}

}  // namespace kiln::retention
