#pragma once
// Says what a caller goes on without: a failed Result that is not the caller's answer (a write a
// controller pass will retry, an audit record after the change it records) is logged, never
// dropped. A conflict (the state moved on under the caller: an operator's verb, another replica's
// last pass) is news at info; anything else is an error. The same line at most once per
// `every`, so that a database outage is not one line per pass.

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/logger.h"
#include "common/result.h"

namespace kiln {

class FailureLog {
 public:
  FailureLog(Logger& log, const Clock& clock, std::chrono::seconds every = std::chrono::seconds(60))
      : log_(log), clock_(clock), every_(every) {}

  // Logs a failed `r` as "<what>: <its message>". Returns r.ok().
  template <typename R>
  bool noted(const R& r, const std::string& what) {
    if (r.ok()) return true;
    note(r.error(), what);
    return false;
  }
  void note(const Error& e, const std::string& what);

 private:
  Logger& log_;
  const Clock& clock_;
  std::chrono::seconds every_;
  std::mutex mu_;
  std::map<std::string, TimePoint> logged_at_;  // line -> when it was last logged
};

}  // namespace kiln
