#pragma once
// What the current thread works on, as key/value pairs (a request: its id, actor, route and the
// objects it names), for structured logs: kilnd's JSON log format adds them to every line the
// thread logs while the scope lives. Scopes nest (an inner key shadows an outer one in the
// output order they were added); the state is thread-local, so a scope must end on the thread
// that opened it.

#include <string>
#include <utility>
#include <vector>

namespace kiln {

using LogFields = std::vector<std::pair<std::string, std::string>>;

class LogScope {
 public:
  explicit LogScope(const LogFields& fields);
  ~LogScope();
  LogScope(const LogScope&) = delete;
  LogScope& operator=(const LogScope&) = delete;

  // The fields of every scope open on this thread, outermost first.
  static const LogFields& current();

 private:
  std::size_t restore_to_;
};

}  // namespace kiln
