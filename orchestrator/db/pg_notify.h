#pragma once
// Replicas told at once through PostgreSQL's LISTEN/NOTIFY (issue 14): a step queued by one
// kilnd wakes the host's long poll parked on another within milliseconds (not at the next
// 5 s refresh), and a token revoked through one replica leaves every replica's cache at once.
//
//   kiln_work    payload: host ids, one per line; sent by publish() after the commit that
//                gave them work
//   kiln_tokens  payload: a token id; sent by the database itself (a trigger on tokens,
//                migration 0012) when a token is revoked
//
// Two threads, each with its own connection: the listener (LISTEN, then waits for
// notifications) and the publisher (batches what publish() queued into one pg_notify per
// 7,000 bytes). Notifications this kilnd sent itself are not handed back. A lost connection is
// reopened (backoff up to 2 s) and `on_reconnect` is called, since notifications sent meanwhile
// are gone: the callers keep their polling as the fallback. Thread-safe.

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/logger.h"

namespace kiln::db {

class PgNotifier {
 public:
  using OnNotify = std::function<void(const std::string& channel, const std::string& payload)>;
  // `log` must outlive the notifier.
  PgNotifier(std::string database_url, OnNotify on_notify, std::function<void()> on_reconnect, Logger& log);
  ~PgNotifier();  // stop()

  // Starts both threads and waits (at most 2 s) until the listener is listening, so a replica
  // that answers /healthz hears what others announce from then on.
  void start();
  void stop();
  // Queues `host` for the next kiln_work notification (returns at once).
  void publishWork(const std::string& host);

 private:
  void listen();
  void publish();

  std::string url_;
  OnNotify on_notify_;
  std::function<void()> on_reconnect_;
  Logger& log_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool listening_ = false;
  std::vector<std::string> queued_;
  int publisher_pid_ = 0;  // the backend pid of our publishing connection (its echoes are dropped)
  std::thread listener_, publisher_;
};

}  // namespace kiln::db
