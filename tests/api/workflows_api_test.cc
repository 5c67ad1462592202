// Issue 31, workflows against a real kilnd: changing one needs admin (an operator's PUT is 403
// and changes nothing); each change is audited with both hashes and the YAML's diff; a version
// put through the API survives a restart over the same workflows directory until the file
// changes, and GET /workflows/{name}/versions lists them all.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

const std::string kFileV1 =
    "name: one-step\nversion: \"1\"\nscope: host\nsteps:\n  - id: only\n    run: [nvidia-smi, -q, -x]\n"
    "    timeout: 10m\n";

class WorkflowsApiTest : public ApiTest {
 protected:
  WorkflowsApiTest() {
    dir_ = std::filesystem::temp_directory_path() / ("kiln-api-workflows-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    writeFile(kFileV1);
  }
  ~WorkflowsApiTest() override { std::filesystem::remove_all(dir_); }
  std::vector<std::string> extraKilndArgs() const override { return {"--workflows-dir", dir_.string()}; }

  void writeFile(const std::string& yaml) { std::ofstream(dir_ / "one-step.yaml") << yaml; }
  std::string currentHash() {
    Reply r = call(*admin_, "GET", "/api/v1/workflows/one-step");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.doc()["hash"].get<std::string>() : "";
  }
  std::string log() const {
    std::ifstream in(kilnd_->logPath());
    std::stringstream buf;
    buf << in.rdbuf();
    return buf.str();
  }

  std::filesystem::path dir_;
};

TEST_F(WorkflowsApiTest, AnOperatorCannotChangeAWorkflowAndAViewerSeesItsVersions) {
  const std::string before = currentHash();
  const std::string versions_before = db_->query("SELECT count(*) FROM workflow_versions");
  auto op = client(createToken("operator", "sre"));
  const std::string edited = kFileV1 + "description: escalate\n";
  EXPECT_TRUE(
      isError(call(*op, "PUT", "/api/v1/workflows/one-step", edited, "application/yaml"), 403, "permission_denied"));
  EXPECT_TRUE(isError(call(*op, "PUT", "/api/v1/workflows/brand-new", "name: brand-new\n", "application/yaml"), 403,
                      "permission_denied"));
  EXPECT_EQ(currentHash(), before);
  EXPECT_EQ(db_->query("SELECT count(*) FROM workflow_versions"), versions_before);
  EXPECT_EQ(db_->query("SELECT count(*) FROM audit_log WHERE action = 'workflow.put' AND actor <> 'kilnd'"), "0");
  EXPECT_EQ(call(*admin_, "PUT", "/api/v1/workflows/one-step", edited, "application/yaml").status, 200);
  EXPECT_NE(currentHash(), before);

  auto viewer = client(createToken("viewer", "wallboard"));
  Reply versions = call(*viewer, "GET", "/api/v1/workflows/one-step/versions");
  ASSERT_EQ(versions.status, 200) << versions.body;
  EXPECT_EQ(versions.doc()["items"].size(), 2u);
  EXPECT_TRUE(isError(call(*viewer, "GET", "/api/v1/workflows/nope/versions"), 404, "not_found"));
  EXPECT_TRUE(isError(call(*viewer, "GET", "/api/v1/workflows/one-step/versions?limit=0"), 400, "invalid_argument"));
}

TEST_F(WorkflowsApiTest, AnApiVersionSurvivesRestartsUntilTheFileChangesAndThenTheFileWins) {
  const std::string file_v1 = currentHash();
  const std::string api_yaml = kFileV1 + "description: tuned through the API\n";
  Reply put = call(*admin_, "PUT", "/api/v1/workflows/one-step", api_yaml, "application/yaml");
  ASSERT_EQ(put.status, 200) << put.body;
  const std::string api = put.doc()["hash"];

  ASSERT_TRUE(kilnd_->restart().ok()) << kilnd_->logTail();
  EXPECT_EQ(currentHash(), api) << "an unchanged file does not replace the API's version";
  EXPECT_NE(log().find("the version put through the API (" + api + ") stays current"), std::string::npos)
      << kilnd_->logTail();

  writeFile(kFileV1 + "description: deployed\n");
  ASSERT_TRUE(kilnd_->restart().ok()) << kilnd_->logTail();
  const std::string file_v2 = currentHash();
  EXPECT_NE(file_v2, api);
  EXPECT_NE(file_v2, file_v1);
  EXPECT_NE(log().find("now " + file_v2 + "): its version replaces the current one " + api), std::string::npos)
      << kilnd_->logTail();

  Reply versions = call(*admin_, "GET", "/api/v1/workflows/one-step/versions");
  ASSERT_EQ(versions.status, 200) << versions.body;
  const json items = versions.doc()["items"];
  ASSERT_EQ(items.size(), 3u) << versions.body;
  EXPECT_EQ(items[0]["hash"], file_v2);
  EXPECT_EQ(items[0]["current"], true);
  EXPECT_EQ(items[0]["file_loaded"], true);
  EXPECT_EQ(items[0]["created_by"], "kilnd");
  EXPECT_EQ(items[1]["hash"], api);
  EXPECT_EQ(items[1]["source"], "api");
  EXPECT_EQ(items[1]["current"], false);
  EXPECT_EQ(items[2]["hash"], file_v1);
  EXPECT_EQ(items[2]["file_loaded"], false);
  Reply first = call(*admin_, "GET", "/api/v1/workflows/one-step/versions?limit=1");
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_TRUE(first.doc()["next_cursor"].is_string()) << first.body;
  Reply rest =
      call(*admin_, "GET",
           "/api/v1/workflows/one-step/versions?limit=5&cursor=" + first.doc()["next_cursor"].get<std::string>());
  ASSERT_EQ(rest.status, 200) << rest.body;
  ASSERT_EQ(rest.doc()["items"].size(), 2u);
  EXPECT_EQ(rest.doc()["items"][0]["hash"], api) << "pages keep the newest-first order";

  // The deploy is audited as kilnd's change over the API's version, with the diff.
  Reply audit = call(*admin_, "GET", "/api/v1/audit?action=workflow.put&target=one-step");
  ASSERT_EQ(audit.status, 200) << audit.body;
  const json records = audit.doc()["items"];
  ASSERT_EQ(records.size(), 3u) << audit.body;
  EXPECT_EQ(records[0]["actor"], "kilnd");
  EXPECT_EQ(records[0]["details"]["previous_hash"], api);
  EXPECT_EQ(records[0]["details"]["previous_source"], "api");
  EXPECT_NE(records[0]["details"]["diff"].get<std::string>().find(
                "-description: tuned through the API\n+description: deployed\n"),
            std::string::npos)
      << audit.body;
  EXPECT_EQ(records[1]["details"]["hash"], api);
  EXPECT_EQ(records[1]["details"]["previous_hash"], file_v1);
  EXPECT_TRUE(records[2]["details"]["previous_hash"].is_null());
}

}  // namespace
}  // namespace kiln::apitest
