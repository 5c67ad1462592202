#pragma once
// A running step's output sent to kilnd while the step runs (issue 18): POST
// /api/v1/assignments/{id}/output with the lease, at most every `interval` and only when there
// is new output. Each stream keeps at most `cap` bytes not yet acknowledged (the tail: a step
// may print megabytes); what it had to drop shows as a jump in the next chunk's offset.
// Offsets count bytes of the stream as sent: valid UTF-8, each invalid byte and NUL sent as
// U+FFFD (kilnd stores text; PostgreSQL takes no NUL).
//
// A chunk stays until kilnd acknowledges it: after a failed call the next one sends it again
// with what came since (kilnd skips the bytes it has), so a lost answer neither loses nor
// duplicates output. A 409 (stale lease, step over), 403, 404 or 4xx ends the sending for
// the step; the step and its final report do not depend on any of this.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>


#include "common/logger.h"
#include "common/clock.h"
#include "agents/agent/transport.h"

namespace kiln::agent {

// Turns arbitrary bytes into valid UTF-8, piece by piece: a character split across two pieces
// is kept whole; invalid bytes (and NUL) become U+FFFD. Not thread-safe.
class Utf8Sanitizer {
 public:
  void feed(std::string_view in, std::string& out);

 private:
  std::string partial_;  // the bytes of an incomplete character
  int need_ = 0;         // continuation bytes it still needs
};

// One stream's bytes not yet acknowledged by kilnd: text holds [start, start + size).
// Not thread-safe.
class LiveBuffer {
 public:
  explicit LiveBuffer(std::size_t cap) : cap_(cap) {}
  void add(std::string_view raw);
  // Drops all but the last `cap` bytes (at a character boundary): the rest will not be sent.
  void trim();
  bool pending() const { return !text_.empty(); }
  std::int64_t start() const { return start_; }
  const std::string& text() const { return text_; }
  // kilnd has every byte before `end`.
  void acknowledge(std::int64_t end);

 private:
  std::size_t cap_;
  Utf8Sanitizer utf8_;
  std::string text_;
  std::int64_t start_ = 0;
};

struct LiveOutputSettings {
  std::chrono::milliseconds interval{1000};
  std::size_t cap = 64 * 1024;  // per stream; 0 = no live output
};

class LiveOutputSender {
 public:
  // `token` gives the agent's current token at each call. Collaborators must outlive it.
  LiveOutputSender(Transport& transport, Clock& clock, std::shared_ptr<Logger> log, std::string host,
                   std::string assignment_id, std::int64_t lease, std::function<std::string()> token,
                   LiveOutputSettings settings);
  ~LiveOutputSender();  // stop()
  LiveOutputSender(const LiveOutputSender&) = delete;
  LiveOutputSender& operator=(const LiveOutputSender&) = delete;

  // New output of the step (the runner's thread). Cheap: copies into the buffer and wakes the
  // sender, which it starts on the first call. Thread-safe.
  void add(bool is_stderr, const char* data, std::size_t n);
  // Ends the sending (a call in flight is waited for; nothing more is sent). Idempotent.
  void stop();

 private:
  void loop();
  bool sendOnce();  // false: kilnd refused for good

  Transport& transport_;
  Clock& clock_;
  std::shared_ptr<Logger> log_;
  const std::string host_, assignment_id_;
  const std::int64_t lease_;
  std::function<std::string()> token_;
  const LiveOutputSettings settings_;

  std::mutex mu_;
  std::condition_variable cv_;
  LiveBuffer out_, err_;
  bool stopping_ = false;
  bool refused_ = false;
  std::thread thread_;
};

}  // namespace kiln::agent
