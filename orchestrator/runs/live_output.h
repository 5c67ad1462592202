#pragma once
// Live output of running steps (issue 18): what kiln-agent sends while a step runs
// (POST /api/v1/assignments/{id}/output) and what kilnd keeps of it for the console
// (GET /api/v1/assignments/{id}/output?stdout_since=&stderr_since=).
//
// Offsets count bytes of a stream as the agent sends it (valid UTF-8: the agent replaces
// invalid bytes before counting), from the start of the step. kilnd keeps only the last
// kLiveOutputKeep bytes of each stream; a reader asks for what follows the end it has seen and
// learns from the answer's offset when bytes in between were not kept.
//
// Why polling and not Server-Sent Events: kilnd runs as several replicas behind HAProxy on one
// PostgreSQL, and an agent's chunk may land on any replica. A console's read is one short
// request that any replica answers from PostgreSQL; an SSE stream would be pinned to one
// replica for minutes (it would need LISTEN/NOTIFY to learn of chunks posted elsewhere, and
// would be cut by HAProxy's 90 s `timeout server`), would hold a connection and file
// descriptor per open console panel on a server whose connections are capped
// (docs/DEPENDENCIES.md: the cpprestsdk listener had no idle timeout and spun at the fd limit; its
// successor, http/server.h, answers with whole bodies only). A poll a second per open panel
// is one primary-key read.
//
// Pure; thread-compatible.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "orchestrator/core/clock.h"

namespace kiln::runs {

// Bytes of each stream kilnd keeps per assignment (the tail).
inline constexpr std::size_t kLiveOutputKeep = 64 * 1024;

// One stream's kept tail: text holds the bytes [start, end) of the stream.
struct LiveStream {
  std::string text;
  std::int64_t start = 0;
  std::int64_t end = 0;
  bool operator==(const LiveStream&) const = default;
};

// A piece of a stream as an agent sends it: `data` holds the bytes from `offset` on.
struct LiveChunk {
  std::int64_t offset = 0;
  std::string data;
};

// Adds `chunk` to `s` and keeps the last `keep` bytes, cut at a UTF-8 character boundary.
// Bytes `s` already holds (a chunk sent again after a lost answer) are skipped; a chunk that
// starts past `s.end` (the agent dropped output it could not send in time) starts the kept text
// anew at its offset; a chunk that ends at or before `s.end` changes nothing.
void appendLive(LiveStream& s, const LiveChunk& chunk, std::size_t keep = kLiveOutputKeep);

// What a reader that has seen the stream up to `since` is sent: the kept bytes from `since`
// (or from `start`, when bytes after `since` are no longer kept) to `end`, never starting
// inside a UTF-8 character.
struct LiveSlice {
  std::int64_t offset = 0;  // where `data` begins: > since when bytes in between are gone
  std::int64_t end = 0;
  std::string data;
};
LiveSlice sliceLive(const LiveStream& s, std::int64_t since);

// The live output of one assignment, with what the reader needs to know of the step.
struct LiveOutput {
  std::string assignment_id, run_id, host, step_id, state;  // state: assignments.state
  int attempt = 1;
  LiveStream out, err;
  std::optional<core::TimePoint> updated_at;  // nullopt: nothing was sent yet
};

// Where each stream ends after an append.
struct LiveEnds {
  std::int64_t out = 0, err = 0;
};

// Live output kept where every kilnd replica reads it (orchestrator/db/pg_live_output.h).
// Thread-safe.
class LiveOutputStore {
 public:
  virtual ~LiveOutputStore() = default;
  // Adds an agent's chunks to the assignment's live output. Only the agent of the host that
  // holds the assignment, with its current lease, while it is dispatched: kNotFound (no such
  // assignment), kPermissionDenied (another host's), kConflict (a stale lease, or the step is
  // over).
  virtual Result<LiveEnds> append(const std::string& assignment_id, const std::string& host, int lease,
                                  const std::optional<LiveChunk>& out, const std::optional<LiveChunk>& err) = 0;
  // kNotFound when there is no such assignment; empty streams when nothing was sent.
  virtual Result<LiveOutput> read(const std::string& assignment_id) = 0;
};

}  // namespace kiln::runs
