#include "common/log_context.h"

namespace kiln {
namespace {

LogFields& fields() {
  thread_local LogFields f;
  return f;
}

}  // namespace

LogScope::LogScope(const LogFields& add) : restore_to_(fields().size()) {
  fields().insert(fields().end(), add.begin(), add.end());
}

LogScope::~LogScope() { fields().resize(restore_to_); }

const LogFields& LogScope::current() { return fields(); }

}  // namespace kiln
