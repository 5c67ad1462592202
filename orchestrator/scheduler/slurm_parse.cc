// Slurm 22.05's JSON (openapi/v0.0.38 as sinfo --json and squeue --json print it) to SlurmNode and
// SlurmJob. 22.05's scontrol has no --json (tests/testdata/slurm-22.05/README.md).

#include <nlohmann/json.hpp>

#include "common/hostlist.h"
#include "orchestrator/scheduler/slurm.h"

namespace kiln::scheduler {
namespace {

using nlohmann::json;

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

Result<json> document(std::string_view text, const char* list, const char* what) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return invalidArgument(std::string(what) + ": not a JSON object");
  if (auto e = doc.find("errors"); e != doc.end() && e->is_array() && !e->empty()) {
    const json& first = e->front();
    std::string msg = first.is_object() && first.contains("error") && first["error"].is_string()
                          ? first["error"].get<std::string>()
                          : first.dump();
    return invalidArgument(std::string(what) + ": Slurm reports: " + msg);
  }
  auto items = doc.find(list);
  if (items == doc.end() || !items->is_array())
    return invalidArgument(std::string(what) + ": no '" + list + "' array");
  return std::move(*items);
}

std::string str(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

std::optional<TimePoint> when(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number()) return std::nullopt;
  const auto v = it->get<std::int64_t>();
  if (v <= 0) return std::nullopt;
  return TimePoint(std::chrono::seconds(v));
}

// "cpu=8,node=2,gres/gpu=8" -> 8; "gres/gpu:h100=8" (typed only) -> 8; no GPUs -> nullopt.
std::optional<int> gpusOf(const std::string& tres) {
  std::optional<int> untyped, typed;
  std::size_t begin = 0;
  while (begin < tres.size()) {
    auto end = tres.find(',', begin);
    if (end == std::string::npos) end = tres.size();
    const std::string item = tres.substr(begin, end - begin);
    const auto eq = item.find('=');
    if (eq != std::string::npos) {
      const std::string key = item.substr(0, eq);
      int v = 0;
      try {
        v = std::stoi(item.substr(eq + 1));
      } catch (...) {
        v = -1;
      }
      if (v >= 0 && key == "gres/gpu") untyped = v;
      else if (v >= 0 && key.rfind("gres/gpu:", 0) == 0) typed = typed.value_or(0) + v;
    }
    begin = end + 1;
  }
  return untyped ? untyped : typed;
}

}  // namespace

Result<std::vector<SlurmNode>> parseNodesJson(std::string_view text) {
  auto items = document(text, "nodes", "sinfo --json");
  if (!items.ok()) return items.error();
  std::vector<SlurmNode> out;
  std::set<std::string> seen;
  for (const auto& n : *items) {
    if (!n.is_object()) return invalidArgument("sinfo --json: a node is not an object");
    SlurmNode node;
    node.name = str(n, "name");
    if (node.name.empty()) return invalidArgument("sinfo --json: a node has no name");
    if (!seen.insert(node.name).second) continue;  // one line per partition
    node.state = upper(str(n, "state"));
    if (auto f = n.find("state_flags"); f != n.end() && f->is_array())
      for (const auto& flag : *f)
        if (flag.is_string()) node.flags.insert(upper(flag.get<std::string>()));
    node.reason = str(n, "reason");
    node.reason_user = str(n, "reason_set_by_user");
    node.reason_time = when(n, "reason_changed_at");
    out.push_back(std::move(node));
  }
  return out;
}

Result<std::vector<SlurmJob>> parseJobsJson(std::string_view text) {
  auto items = document(text, "jobs", "squeue --json");
  if (!items.ok()) return items.error();
  std::vector<SlurmJob> out;
  for (const auto& j : *items) {
    if (!j.is_object()) return invalidArgument("squeue --json: a job is not an object");
    SlurmJob job;
    auto id = j.find("job_id");
    if (id == j.end() || !id->is_number_integer()) return invalidArgument("squeue --json: a job has no job_id");
    job.id = std::to_string(id->get<std::int64_t>());
    job.state = upper(str(j, "job_state"));
    const std::string nodes = str(j, "nodes");
    if (!nodes.empty()) {
      auto expanded = expandHostlist(nodes);
      if (!expanded.ok()) return invalidArgument("squeue --json: job " + job.id + ": " + expanded.error().message);
      job.nodes = std::move(*expanded);
    }
    job.start = when(j, "start_time");
    job.end = when(j, "end_time");
    job.reason = str(j, "state_reason");
    job.gpus = gpusOf(str(j, "tres_alloc_str"));
    if (auto r = j.find("restart_cnt"); r != j.end() && r->is_number_integer()) job.requeued = r->get<int>() > 0;
    out.push_back(std::move(job));
  }
  return out;
}

}  // namespace kiln::scheduler
