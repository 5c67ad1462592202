#pragma once
// The agent's step journal (docs/agent-protocol.md, "The journal"): JSON lines in
// <state dir>/journal.jsonl, each appended and fsync'ed before the agent acts on it:
//   {"event":"started","id","lease","pid","boot_id","started_at_ms","assignment":{...}}
//   {"event":"finished","id","lease","result":{...the report body...}}
//   {"event":"reported","id","lease"}
// A step is known by (id, lease). A second `started` for the same step updates it (the agent
// writes one before spawning, with pid 0, and one with the pid once the process runs).
// A torn or unreadable line (the agent died while writing it) is skipped.
// The file is rewritten (compacted) when it grows: unfinished steps keep all their facts,
// reported ones only their key.
//
// Not thread-safe: one owner (the agent's executor thread) at a time.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace kiln::agent {

struct JournalEntry {
  std::string id;
  std::int64_t lease = 0;
  nlohmann::json started;  // the latest `started` record, or null
  nlohmann::json result;   // the `finished` result, or null
  bool reported = false;

  bool finished() const { return !result.is_null(); }
};

// When the journal is compacted and what survives it.
struct JournalLimits {
  std::size_t compact_lines = 512;
  std::uint64_t compact_bytes = 4u << 20;
  std::size_t keep_reported = 64;  // keys of reported steps kept (duplicate offers)
};

class Journal {
 public:
  // Opens (creating it and the directory, mode 0700) `dir`/journal.jsonl and replays it.
  // Errors: kUnavailable when the directory or file cannot be created, read or opened.
  static Result<std::unique_ptr<Journal>> open(const std::filesystem::path& dir,
                                               JournalLimits limits = {});
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Entries in the order their step was first seen.
  const std::vector<JournalEntry>& entries() const { return entries_; }
  const JournalEntry* find(const std::string& id, std::int64_t lease) const;
  // Lines the replay skipped as unreadable.
  std::size_t skippedLines() const { return skipped_; }

  // Each appends one record and fsyncs it; kUnavailable when the write fails.
  // `started` must hold "id" and "lease"; "event" is set here.
  Status started(nlohmann::json record);
  Status finished(const std::string& id, std::int64_t lease, nlohmann::json result);
  Status reported(const std::string& id, std::int64_t lease);

  const std::filesystem::path& path() const { return path_; }

 private:
  Journal(std::filesystem::path path, JournalLimits limits);
  Status load();
  Status openForAppend();
  Status append(const nlohmann::json& record);
  Status compactIfNeeded();
  void apply(const nlohmann::json& record);
  JournalEntry& entry(const std::string& id, std::int64_t lease);

  std::filesystem::path path_;
  int fd_ = -1;
  std::vector<JournalEntry> entries_;
  std::size_t lines_ = 0;
  std::uint64_t bytes_ = 0;
  std::size_t skipped_ = 0;
  JournalLimits limits_;
  std::size_t compact_lines_at_;
  std::uint64_t compact_bytes_at_;
};

}  // namespace kiln::agent
