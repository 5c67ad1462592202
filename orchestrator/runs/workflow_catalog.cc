#include "orchestrator/runs/workflow_catalog.h"

#include <fstream>
#include <sstream>

#include "orchestrator/workflow/loader.h"

namespace kiln::runs {

FileLoad decideFileLoad(const std::optional<WorkflowRow>& current, const std::string& file_hash) {
  if (!current) return FileLoad::kNew;
  const bool same_as_loaded = current->file_hash == file_hash;
  if (current->hash == file_hash) return same_as_loaded ? FileLoad::kCurrent : FileLoad::kMarkLoaded;
  if (same_as_loaded) return FileLoad::kApiStays;
  return current->hash == current->file_hash ? FileLoad::kFileUpdate : FileLoad::kFileOverridesApi;
}

Result<std::vector<std::string>> WorkflowCatalog::loadWorkflowDir(const std::string& dir, const core::Actor& actor,
                                                                  Logger& log) {
  auto specs = workflow::loadWorkflowDir(dir);
  if (!specs.ok()) return specs.error();
  std::vector<std::string> names;
  for (const auto& s : *specs)
    if (auto ok = allowed(s); !ok.ok()) {
      Error e = ok.error();
      e.message = s.source_name + ": " + e.message;
      return e;
    }
  for (const auto& s : *specs) {
    std::ifstream in(s.source_name);
    std::stringstream buf;
    buf << in.rdbuf();
    if (auto st = loadWorkflowFile({s.name, s.content_hash, s.source_name, buf.str(), {}}, actor, log); !st.ok())
      return st.error();
    names.push_back(s.name);
  }
  return names;
}

Status WorkflowCatalog::loadWorkflowFile(const WorkflowRow& file, const core::Actor& actor, Logger& log) {
  // A second try covers one concurrent change (a replica starting beside this one); a third
  // conflict in a row is an error, and kilnd's start says so.
  for (int attempt = 0;; ++attempt) {
    auto current = store_.currentWorkflow(file.name);
    if (!current.ok()) return current.error();
    const FileLoad decision = decideFileLoad(*current, file.hash);
    if (decision == FileLoad::kCurrent) return Ok{};
    if (decision == FileLoad::kApiStays) {
      log.info("workflow {}: {} is as last loaded ({}); the version put through the API ({}) stays current", file.name,
               file.source, file.hash, (*current)->hash);
      return Ok{};
    }
    std::optional<core::IfMatch> if_match;
    if (*current) if_match = core::IfMatch{false, {workflowEtag((*current)->hash)}};
    auto st = store_.putWorkflowFile(file, actor, if_match);
    if (st.ok() && decision == FileLoad::kFileOverridesApi)
      log.warn("workflow {}: {} changed (last loaded {}, now {}): its version replaces the current one {} from {}",
               file.name, file.source, (*current)->file_hash.empty() ? "never" : (*current)->file_hash, file.hash,
               (*current)->hash, (*current)->source);
    if (st.ok() || st.error().code != ErrorCode::kPreconditionFailed || attempt == 2) return st;
  }
}

Result<WorkflowPut> WorkflowCatalog::putWorkflow(const std::string& name, const std::string& yaml,
                                                 const core::Actor& actor,
                                                 const std::optional<core::IfMatch>& if_match) {
  auto spec = workflow::loadWorkflow(yaml, "request body");
  if (!spec.ok()) return spec.error();
  if (auto ok = allowed(*spec); !ok.ok()) return ok.error();
  if (spec->name != name)
    return invalidContent("the document names workflow '" + spec->name + "' but the URL says '" + name + "'");
  auto before = store_.currentWorkflow(name);
  if (!before.ok()) return before.error();
  if (auto st = store_.putWorkflow({name, spec->content_hash, "api", yaml, {}}, actor, if_match); !st.ok())
    return st.error();
  const bool changed = !*before || (*before)->hash != spec->content_hash;
  return WorkflowPut{name, spec->content_hash, changed};
}

Status WorkflowCatalog::allowed(const workflow::WorkflowSpec& spec) const {
  if (!allow_) return Ok{};
  Error bad = invalidContent("workflow '" + spec.name + "' runs executables that are not allowed");
  for (std::size_t i = 0; i < spec.steps.size(); ++i) {
    const auto& step = spec.steps[i];
    if (step.type == workflow::StepType::kBarrier || step.type == workflow::StepType::kStage) continue;  // run nothing
    if (auto why = executableRefusal(*allow_, step.run))
      bad.fields.push_back({"steps[" + std::to_string(i) + "].run[0]", "step '" + step.id + "': " + *why});
  }
  if (bad.fields.empty()) return Ok{};
  bad.message += ": " + bad.fields.front().message;
  return bad;
}

Result<std::vector<WorkflowInfo>> WorkflowCatalog::listWorkflows() {
  auto rows = store_.listWorkflows();
  if (!rows.ok()) return rows.error();
  std::vector<WorkflowInfo> out;
  out.reserve(rows->size());
  for (auto& w : *rows) {
    auto s = spec(w.name, w.hash);
    // A version that no longer loads is still listed, by name and hash.
    out.push_back({std::move(w), s.ok() ? *s : nullptr});
  }
  return out;
}

Result<WorkflowInfo> WorkflowCatalog::getWorkflow(const std::string& name) {
  auto w = current(name);
  if (!w.ok()) return w.error();
  if (!*w) return notFound("no workflow '" + name + "'");
  return std::move(**w);
}

Result<std::optional<WorkflowInfo>> WorkflowCatalog::current(const std::string& name) {
  auto row = store_.currentWorkflow(name);
  if (!row.ok()) return row.error();
  if (!*row) return std::optional<WorkflowInfo>();
  auto s = spec(name, (*row)->hash);
  if (!s.ok()) return s.error();
  return std::optional<WorkflowInfo>(WorkflowInfo{std::move(**row), std::move(*s)});
}

Result<std::vector<WorkflowVersionInfo>> WorkflowCatalog::versions(const std::string& name) {
  auto rows = store_.workflowVersions(name);
  if (!rows.ok()) return rows.error();
  if (rows->empty()) return notFound("no workflow '" + name + "'");
  return rows;
}

Result<std::vector<std::string>> WorkflowCatalog::workflowParams(const std::string& name) {
  auto w = getWorkflow(name);
  if (!w.ok()) return w.error();
  std::vector<std::string> out;
  for (const auto& p : w->spec->params) out.push_back(p.name);
  return out;
}

Result<std::shared_ptr<const workflow::WorkflowSpec>> WorkflowCatalog::spec(const std::string& name,
                                                                            const std::string& hash) {
  const std::string key = name + "@" + hash;
  {
    std::lock_guard lock(mu_);
    if (auto it = specs_.find(key); it != specs_.end()) return it->second;
  }
  auto row = store_.workflowVersion(name, hash);
  if (!row.ok()) return row.error();
  if (!*row) return notFound("no version " + hash + " of workflow '" + name + "'");
  auto loaded = workflow::loadWorkflow((*row)->yaml, (*row)->source);
  if (!loaded.ok()) return loaded.error();
  auto ptr = std::make_shared<const workflow::WorkflowSpec>(std::move(*loaded));
  std::lock_guard lock(mu_);
  specs_[key] = ptr;
  return ptr;
}

}  // namespace kiln::runs
