// The workflow catalogue alone, over its own face of the store (WorkflowStore: four methods),
// here the in-memory fake's, counted.

#include "orchestrator/runs/workflow_catalog.h"

#include <gtest/gtest.h>

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
  Result<std::optional<WorkflowRow>> currentWorkflow(const std::string& name) override {
    return inner_.currentWorkflow(name);
  }
  Result<std::optional<WorkflowRow>> workflowVersion(const std::string& name, const std::string& hash) override {
    ++version_reads;
    return inner_.workflowVersion(name, hash);
  }
  Result<std::vector<WorkflowRow>> listWorkflows() override { return inner_.listWorkflows(); }
  int version_reads = 0;

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

}  // namespace
}  // namespace kiln::runs
