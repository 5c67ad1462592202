#include "cli/reliability_view.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/table.h"
#include "cli/time_text.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

// The north star (docs/FACTS.md, "Maintenance and reliability figures"): 2 interruptions per 8K
// GPUs per day, i.e. MTBI = 8,000 x 24 / 2 = 96,000 GPU-hours. The report carries the server's
// figures; these are the fallback for a report without them.
constexpr double kNorthStarRate = 2.0;
constexpr double kNorthStarMtbi = 96000.0;

const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string numberOr(const json& v, int decimals, const std::string& fallback = "") {
  if (!v.is_number()) return fallback;
  return decimals == 0 ? groupedNumber(v.get<double>()) : fixed(v.get<double>(), decimals);
}

std::string day(const json& v) {
  const std::string s = cellText(v);
  return s.size() >= 10 ? s.substr(0, 10) : s;
}

std::string scopeText(const json& scope) {
  std::string out;
  for (const char* key : {"site", "building", "platform"})
    if (!field(scope, key).empty()) out += (out.empty() ? "" : ", ") + std::string(key) + " " + field(scope, key);
  return out.empty() ? "the whole fleet" : out;
}

}  // namespace

std::string groupedNumber(double value) {
  const bool negative = value < 0;
  const std::string digits = fixed(std::fabs(value), 0);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (negative && out != "0" ? "-" : "") + out;
}

std::string renderReliability(const json& r) {
  const json& star = member(r, "north_star");
  const double star_rate = member(star, "per_8k_gpus_per_day").is_number() ? star["per_8k_gpus_per_day"].get<double>() : kNorthStarRate;
  const double star_mtbi = member(star, "mtbi_gpu_hours").is_number() ? star["mtbi_gpu_hours"].get<double>() : kNorthStarMtbi;
  const std::string star_rate_text = star_rate == std::floor(star_rate) ? groupedNumber(star_rate) : fixed(star_rate, 2);

  std::string out = "Reliability of " + scopeText(member(r, "scope")) + " from " + field(r, "from") + " to " + field(r, "to") +
                    (member(r, "days").is_number() ? " (" + fixed(r["days"].get<double>(), 1) + " days)" : "") + "\n\n";

  std::string interruptions = field(r, "interruptions");
  if (const json& c = member(r, "candidates"); c.is_number() && c.get<long long>() > 0)
    interruptions += " (+" + cellText(c) + " candidates recorded by Kiln, not yet confirmed)";

  std::string rate;
  const json& rv = member(r, "per_8k_gpus_per_day");
  if (!rv.is_number()) {
    rate = "- (no GPU-hours in service)";
  } else {
    const double v = rv.get<double>();
    rate = (v >= 1000 ? groupedNumber(v) : fixed(v, 2)) + (v <= star_rate ? "  meets the north star of " + star_rate_text
                                          : "  " + fixed(v / star_rate, 1) + "x the north star of " + star_rate_text);
  }
  std::string mtbi;
  const json& mv = member(r, "mtbi_gpu_hours");
  const std::string star_mtbi_text = groupedNumber(star_mtbi);
  if (!mv.is_number()) {
    mtbi = "- (no interruption in the window)";
  } else {
    const double v = mv.get<double>();
    mtbi = groupedNumber(v) + " GPU-hours" +
           (v >= star_mtbi ? "  meets the north star of " + star_mtbi_text
                           : "  " + (100 * v / star_mtbi < 1 ? std::string("under 1") : fixed(100 * v / star_mtbi, 0)) +
                                 "% of the north star of " + star_mtbi_text);
  }
  out += renderKeyValues({{"GPU-hours in service", numberOr(member(r, "gpu_hours"), 0)},
                          {"Interruptions", interruptions},
                          {"Per 8K GPUs per day", rate},
                          {"MTBI", mtbi}});

  std::vector<std::vector<std::string>> causes;
  for (const auto& c : member(r, "causes").is_array() ? r["causes"] : json::array())
    causes.push_back({field(c, "cause"), field(c, "count"),
                      member(c, "share").is_number() ? fixed(c["share"].get<double>() * 100, 1) + "%" : ""});
  if (!causes.empty()) out += "\nCauses:\n" + renderTable({"CAUSE", "COUNT", "SHARE"}, causes);

  std::vector<std::vector<std::string>> weekly;
  for (const auto& w : member(r, "weekly").is_array() ? r["weekly"] : json::array())
    weekly.push_back({day(member(w, "week")), numberOr(member(w, "gpu_hours"), 0), field(w, "interruptions"),
                      numberOr(member(w, "per_8k_gpus_per_day"), 2), numberOr(member(w, "mtbi_gpu_hours"), 0)});
  if (!weekly.empty())
    out += "\nWeekly (weeks start Monday, UTC):\n" +
           renderTable({"WEEK", "GPU-HOURS", "INTERRUPTIONS", "PER 8K GPUS/DAY", "MTBI (GPU-HOURS)"}, weekly);

  std::vector<std::vector<std::string>> lemons;
  for (const auto& l : member(r, "lemons").is_array() ? r["lemons"] : json::array())
    lemons.push_back({field(l, "host"), field(l, "pod"), field(l, "state"), field(l, "interruptions"), field(l, "repairs")});
  out += "\nLemons (interruptions plus repairs above " + field(r, "lemon_threshold") + "): ";
  if (lemons.empty()) {
    out += "none\n";
  } else {
    out += std::to_string(lemons.size()) + "\n" + renderTable({"HOST", "POD", "STATE", "INTERRUPTIONS", "REPAIRS"}, lemons) +
           "Send one to quarantine: kilnctl hosts action HOST quarantine --reason \"lemon\"\n";
  }
  return out;
}

std::string renderInterruptions(const json& page) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& i : member(page, "items").is_array() ? page["items"] : json::array())
    rows.push_back({field(i, "at"), field(i, "id"), field(i, "cause"), shorten(field(i, "hosts"), 60), field(i, "pod"),
                    field(i, "job"), field(i, "job_gpus"), field(i, "candidate") == "true" ? "yes" : "no", field(i, "owner"),
                    shorten(field(i, "description"), 60)});
  return renderTable({"AT", "ID", "CAUSE", "HOSTS", "POD", "JOB", "JOB_GPUS", "CANDIDATE", "OWNER", "DESCRIPTION"}, rows);
}

}  // namespace kiln::cli
