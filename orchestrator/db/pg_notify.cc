#include "orchestrator/db/pg_notify.h"

#include <chrono>
#include <pqxx/pqxx>

namespace kiln::db {
namespace {

constexpr const char* kWork = "kiln_work";
constexpr const char* kTokens = "kiln_tokens";
constexpr std::size_t kPayloadBytes = 7000;  // PostgreSQL's limit is 8,000

class Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& c, const std::string& channel, std::function<void(const std::string&, int)> fn)
      : pqxx::notification_receiver(c, channel), fn_(std::move(fn)) {}
  void operator()(const std::string& payload, int backend_pid) override { fn_(payload, backend_pid); }

 private:
  std::function<void(const std::string&, int)> fn_;
};

}  // namespace

PgNotifier::PgNotifier(std::string database_url, OnNotify on_notify, std::function<void()> on_reconnect, Logger& log)
    : url_(std::move(database_url)),
      on_notify_(std::move(on_notify)),
      on_reconnect_(std::move(on_reconnect)),
      log_(log) {}

PgNotifier::~PgNotifier() { stop(); }

void PgNotifier::start() {
  listener_ = std::thread([this] { listen(); });
  publisher_ = std::thread([this] { publish(); });
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::seconds(2), [&] { return listening_ || stopping_; });
}

void PgNotifier::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (listener_.joinable()) listener_.join();
  if (publisher_.joinable()) publisher_.join();
}

void PgNotifier::publishWork(const std::string& host) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    queued_.push_back(host);
  }
  cv_.notify_all();
}

void PgNotifier::listen() {
  std::chrono::milliseconds backoff{100};
  bool first = true;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (stopping_) return;
    }
    try {
      pqxx::connection c(url_);
      auto own = [this](int pid) {
        std::lock_guard lock(mu_);
        return pid == publisher_pid_;
      };
      Receiver work(c, kWork, [&](const std::string& payload, int pid) {
        if (own(pid)) return;
        std::size_t start = 0;
        while (start < payload.size()) {
          auto nl = payload.find('\n', start);
          if (nl == std::string::npos) nl = payload.size();
          if (nl > start) on_notify_(kWork, payload.substr(start, nl - start));
          start = nl + 1;
        }
      });
      Receiver tokens(c, kTokens, [&](const std::string& payload, int) { on_notify_(kTokens, payload); });
      if (!first) {
        log_.info("LISTEN/NOTIFY: listening again");
        if (on_reconnect_) on_reconnect_();  // what was sent meanwhile is lost: callers re-read
      }
      first = false;
      backoff = std::chrono::milliseconds(100);
      {
        std::lock_guard lock(mu_);
        listening_ = true;
      }
      cv_.notify_all();
      for (;;) {
        {
          std::lock_guard lock(mu_);
          if (stopping_) return;
        }
        c.await_notification(0, 200000);  // 200 ms, so stop() is seen soon
      }
    } catch (const std::exception& e) {
      log_.warn(std::string("LISTEN/NOTIFY: the listening connection failed (") + e.what() + "); replicas fall back to polling until it is back");
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, backoff, [&] { return stopping_; });
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

void PgNotifier::publish() {
  std::chrono::milliseconds backoff{100};
  std::unique_ptr<pqxx::connection> c;
  for (;;) {
    std::vector<std::string> hosts;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queued_.empty(); });
      if (stopping_) return;
      hosts.swap(queued_);
    }
    try {
      if (!c) {
        c = std::make_unique<pqxx::connection>(url_);
        std::lock_guard lock(mu_);
        publisher_pid_ = c->backendpid();
      }
      std::string payload;
      auto flush = [&] {
        if (payload.empty()) return;
        pqxx::nontransaction txn(*c);
        txn.exec_params("SELECT pg_notify($1, $2)", kWork, payload);
        payload.clear();
      };
      for (const auto& h : hosts) {
        if (payload.size() + h.size() + 1 > kPayloadBytes) flush();
        payload += (payload.empty() ? "" : "\n") + h;
      }
      flush();
      backoff = std::chrono::milliseconds(100);
    } catch (const std::exception& e) {
      c.reset();
      log_.warn(std::string("LISTEN/NOTIFY: cannot notify other replicas (") + e.what() + "); they find the work at their next refresh");
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, backoff, [&] { return stopping_; });
      backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
    }
  }
}

}  // namespace kiln::db
