#include "agents/agent/live_output.h"

#include <nlohmann/json.hpp>

#include "agents/agent/protocol.h"

namespace kiln::agent {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool isContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

void Utf8Sanitizer::feed(std::string_view in, std::string& out) {
  for (char c : in) {
    const auto b = static_cast<unsigned char>(c);
    if (need_ > 0) {
      bool ok = (b & 0xC0) == 0x80;
      if (ok && partial_.size() == 1) {
        // Second bytes that would make an overlong form, a surrogate or a code point past U+10FFFF.
        const auto lead = static_cast<unsigned char>(partial_[0]);
        if ((lead == 0xE0 && b < 0xA0) || (lead == 0xED && b > 0x9F) || (lead == 0xF0 && b < 0x90) ||
            (lead == 0xF4 && b > 0x8F))
          ok = false;
      }
      if (ok) {
        partial_ += c;
        if (--need_ == 0) {
          out += partial_;
          partial_.clear();
        }
        continue;
      }
      // The broken character is one replacement; this byte starts afresh.
      out += kReplacement;
      partial_.clear();
      need_ = 0;
    }
    if (b == 0) {
      out += kReplacement;
    } else if (b < 0x80) {
      out += c;
    } else if (b >= 0xC2 && b <= 0xDF) {
      partial_.assign(1, c);
      need_ = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      partial_.assign(1, c);
      need_ = 2;
    } else if (b >= 0xF0 && b <= 0xF4) {
      partial_.assign(1, c);
      need_ = 3;
    } else {
      out += kReplacement;
    }
  }
}

void LiveBuffer::add(std::string_view raw) {
  utf8_.feed(raw, text_);
  // Trimmed in batches: keeping the tail costs O(1) amortised per byte.
  if (text_.size() > 2 * cap_) trim();
}

void LiveBuffer::trim() {
  if (text_.size() <= cap_) return;
  std::size_t cut = text_.size() - cap_;
  while (cut < text_.size() && isContinuation(text_[cut])) ++cut;
  text_.erase(0, cut);
  start_ += static_cast<std::int64_t>(cut);
}

void LiveBuffer::acknowledge(std::int64_t end) {
  if (end <= start_) return;
  const auto drop = std::min<std::size_t>(static_cast<std::size_t>(end - start_), text_.size());
  text_.erase(0, drop);
  start_ += static_cast<std::int64_t>(drop);
}

LiveOutputSender::LiveOutputSender(Transport& transport, Clock& clock, std::shared_ptr<Logger> log,
                                   std::string host, std::string assignment_id, std::int64_t lease,
                                   std::function<std::string()> token, LiveOutputSettings settings)
    : transport_(transport),
      clock_(clock),
      log_(std::move(log)),
      host_(std::move(host)),
      assignment_id_(std::move(assignment_id)),
      lease_(lease),
      token_(std::move(token)),
      settings_(settings),
      out_(settings.cap),
      err_(settings.cap) {}

LiveOutputSender::~LiveOutputSender() { stop(); }

void LiveOutputSender::add(bool is_stderr, const char* data, std::size_t n) {
  if (settings_.cap == 0 || n == 0) return;
  {
    std::lock_guard lock(mu_);
    if (stopping_ || refused_) return;
    (is_stderr ? err_ : out_).add(std::string_view(data, n));
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  cv_.notify_all();
}

void LiveOutputSender::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LiveOutputSender::loop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || out_.pending() || err_.pending(); });
    if (stopping_) return;
    // At most one call per interval: output printed meanwhile goes with it.
    clock_.waitFor(lock, cv_, settings_.interval, [&] { return stopping_; });
    if (stopping_) return;
    lock.unlock();
    const bool go_on = sendOnce();
    lock.lock();
    if (!go_on) {
      refused_ = true;
      return;
    }
  }
}

bool LiveOutputSender::sendOnce() {
  nlohmann::json body = {{"lease", lease_}, {"host", host_}};
  std::int64_t out_end = -1, err_end = -1;
  {
    std::lock_guard lock(mu_);
    auto put = [&](LiveBuffer& b, const char* name, std::int64_t& end) {
      b.trim();
      if (!b.pending()) return;
      body[name] = {{"offset", b.start()}, {"data", b.text()}};
      end = b.start() + static_cast<std::int64_t>(b.text().size());
    };
    put(out_, "stdout", out_end);
    put(err_, "stderr", err_end);
  }
  if (out_end < 0 && err_end < 0) return true;
  auto reply = transport_.send({"POST", outputPath(assignment_id_), dumpJson(body), token_(), false});
  if (!reply) {
    log_->debug("assignment {}: live output: {}", assignment_id_, reply.error().message);
    return true;  // sent again, with what comes meanwhile, after the next interval
  }
  const int status = reply->status;
  if (status == 200) {
    std::lock_guard lock(mu_);
    if (out_end >= 0) out_.acknowledge(out_end);
    if (err_end >= 0) err_.acknowledge(err_end);
    return true;
  }
  // A refused token is the poller's to renew; a busy or failing kilnd may recover.
  if (status == 401 || status == 429 || status >= 500) return true;
  log_->info("assignment {}: kilnd answered {} to its live output: sending no more of it", assignment_id_, status);
  return false;
}

}  // namespace kiln::agent
