#include "orchestrator/core/iso_time.h"

#include <cstdio>
#include <ctime>

namespace kiln::core {

std::string isoTime(TimePoint t) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(t);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - secs).count();
  std::time_t tt = Clock_::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms));
  return out;
}

void putTime(nlohmann::json& j, const std::string& name, const std::optional<TimePoint>& t) {
  j[name] = t ? nlohmann::json(isoTime(*t)) : nlohmann::json();
  j[name + "_ms"] =
      t ? nlohmann::json(std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count()) : nlohmann::json();
}

}  // namespace kiln::core
