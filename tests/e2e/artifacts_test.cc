// Issue 31 end to end: only verified bits reach a flash tool. A real kilnd and a real kiln-agent
// (with kiln-hwsim's tools) fetch firmware through a real nginx acting as the building's mirror;
// keys and signatures are made by the real gpg and checked by the real gpgv. kiln-hwsim counts
// every flash that reaches the (simulated) hardware: a tampered file, a wrong signature, an
// unsigned artifact and a mirror that dies mid-download each leave that count unchanged.

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/crypto.h"
#include "tests/e2e/e2e_support.h"
#include "tests/support/nginx.h"
#include "tests/support/signing_key.h"

namespace kiln::e2e {
namespace {

namespace fs = std::filesystem;
using testing::SigningKey;

// Where bundles say their artifacts are. Nothing listens there: only the mirror serves them.
constexpr const char* kOrigin = "https://127.0.0.1:1/";
constexpr const char* kNicImage = "fw-ConnectX7-rel-28_45_1200-MCX750500B-0D00_Ax-UEFI-14.37.14.bin";

const char* kFlashWorkflow = R"(name: artifact-flash
version: "1"
description: Burn one ConnectX image the agent fetched and verified (tests/e2e/artifacts_test.cc).
scope: host
params:
  image: {type: artifact, description: "The image: LOCATION#sha256=HEX."}
  artifact_checksums: {type: string, default: ""}
  artifact_signature: {type: string, default: ""}
steps:
  - id: flash-nic
    run: [mlxfwmanager, -u, -i, "{{image}}", -y]
    timeout: 2m
)";

class ArtifactsE2eTest : public E2eTest {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kiln-e2e-keys-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    keys_dir_ = tmpl;
    site_ = std::make_unique<SigningKey>(keys_dir_ + "/site", "Kiln Site Release <release@kiln.test>");
    attacker_ = std::make_unique<SigningKey>(keys_dir_ + "/attacker", "Mallory <mallory@evil.test>");
    kilnd_args_ = {"--trusted-keys", site_->keyring()};
    E2eTest::SetUp();
    if (HasFatalFailure()) return;
    importFleet(fleetYaml(1, "available"));
    host_ = podHosts("e2e-b01-p01").at(0);
    mirror_ = std::make_unique<testing::Nginx>(dir_ + "/mirror", testing::freeLoopbackPort(), "512k");
    ASSERT_TRUE(mirror_->start());
    agents_ = makeAgents(0.001);
    agents_->extra_args = {"--artifact-mirror", std::string(kOrigin) + "=" + mirror_->url(), "--trusted-keys",
                           site_->keyring()};
    agents_->start(host_);
    watchAgent(host_);
    auto put = api_->request("PUT", "/api/v1/workflows/artifact-flash", kFlashWorkflow, "application/yaml");
    ASSERT_TRUE(put.ok());
    ASSERT_TRUE(put->status == 200 || put->status == 201) << put->body;
  }
  void TearDown() override {
    if (HasFailure() && mirror_) std::cerr << "---- nginx access log:\n" << mirror_->accessLog() << "\n";
    mirror_.reset();
    E2eTest::TearDown();
    site_.reset();
    attacker_.reset();
    fs::remove_all(keys_dir_);
  }

  // Puts `served` on the mirror at `path` and returns the run's params for an artifact whose
  // real content is `content`, its checksum list signed by `signer` (nullptr: unsigned).
  json publish(const std::string& path, const std::string& content, const SigningKey* signer,
               const std::optional<std::string>& served = std::nullopt) {
    const fs::path file = fs::path(mirror_->www()) / path;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary | std::ios::trunc) << served.value_or(content);
    json params = {{"image", std::string(kOrigin) + path + "#sha256=" + sha256Hex(content)}};
    if (signer != nullptr) {
      const std::string sums = SigningKey::sumsLine(content, file.filename().string());
      params["artifact_checksums"] = sums;
      params["artifact_signature"] = signer->sign(sums);
    }
    return params;
  }
  json flash(const json& params) {
    json run = startRun({{"workflow", "artifact-flash"}, {"hosts", {host_}}, {"params", params}});
    return waitRun(run.value("id", ""), 90s);
  }
  std::uint64_t flashes() { return agents_->simState(host_).value("flashes", std::uint64_t{0}); }
  std::string cached(const std::string& content, const std::string& name) {
    return agents_->agentDir(host_) + "/artifacts/" + sha256Hex(content) + "/" + name;
  }

  std::string keys_dir_, host_;
  std::unique_ptr<SigningKey> site_, attacker_;
  std::unique_ptr<testing::Nginx> mirror_;
};

TEST_F(ArtifactsE2eTest, OnlyVerifiedBitsReachTheFlashTool) {
  // Signed by the site, served intact: fetched through the mirror, checked, flashed.
  const std::string image = "ConnectX-7 image 28.45.1200";
  json good = flash(publish("fw/" + std::string(kNicImage), image, site_.get()));
  EXPECT_EQ(good.value("state", ""), "passed") << good.dump(1);
  EXPECT_EQ(flashes(), 1u);
  EXPECT_EQ(agents_->simState(host_)["pending"].value("nic", ""), "28.45.1200");
  EXPECT_TRUE(fs::exists(cached(image, kNicImage)));
  EXPECT_NE(mirror_->accessLog().find("GET /fw/" + std::string(kNicImage) + " 200"), std::string::npos);

  // The mirror serves other bits than the signed list names.
  const std::string name2 = "fw-ConnectX7-rel-28_46_0100-MCX750500B-0D00_Ax-UEFI-14.37.14.bin";
  json tampered = flash(
      publish("fw/" + name2, "ConnectX-7 image 28.46.0100", site_.get(), "ConnectX-7 image 28.46.0100 + implant"));
  EXPECT_EQ(tampered.value("state", ""), "failed") << tampered.dump(1);
  EXPECT_NE(tampered.dump().find("sha256 mismatch"), std::string::npos) << tampered.dump(1);
  EXPECT_EQ(flashes(), 1u) << "tampered bits never reached mlxfwmanager";
  EXPECT_FALSE(fs::exists(cached("ConnectX-7 image 28.46.0100", name2)));

  // Signed by a key the host does not trust: refused before a byte is fetched.
  const std::string name3 = "fw-ConnectX7-rel-28_47_0001-MCX750500B-0D00_Ax-UEFI-14.37.14.bin";
  json forged = flash(publish("fw/" + name3, "ConnectX-7 image 28.47.0001", attacker_.get()));
  EXPECT_EQ(forged.value("state", ""), "failed") << forged.dump(1);
  EXPECT_NE(forged.dump().find("does not verify against the trusted keys"), std::string::npos) << forged.dump(1);
  EXPECT_EQ(flashes(), 1u);
  EXPECT_EQ(mirror_->accessLog().find(name3), std::string::npos) << "nothing was fetched for it";

  // Not signed at all, on a host that trusts keys.
  json unsigned_ = flash(publish("fw/" + name3, "ConnectX-7 image 28.47.0001", nullptr));
  EXPECT_EQ(unsigned_.value("state", ""), "failed") << unsigned_.dump(1);
  EXPECT_NE(unsigned_.dump().find("not signed"), std::string::npos) << unsigned_.dump(1);
  EXPECT_EQ(flashes(), 1u);
}

TEST_F(ArtifactsE2eTest, AMirrorThatDiesMidDownloadFlashesNothingAndTheNextTryResumes) {
  // 3 MB at nginx's 512 kB/s: the download is still going when the mirror dies.
  std::string image(3 << 20, '\0');
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = static_cast<char>((i * 2654435761u) >> 13);
  json params = publish("slow/fw/" + std::string(kNicImage), image, site_.get());
  json run = startRun({{"workflow", "artifact-flash"}, {"hosts", {host_}}, {"params", params}});
  const std::string partial = agents_->agentDir(host_) + "/artifacts/.partial/" + sha256Hex(image);
  ASSERT_TRUE(waitUntil(
      [&] {
        std::error_code ec;
        return fs::file_size(partial, ec) > 256 * 1024 && !ec;
      },
      30s))
      << "the download never started";
  mirror_->kill();
  json failed = waitRun(run.value("id", ""), 90s);
  EXPECT_EQ(failed.value("state", ""), "failed") << failed.dump(1);
  EXPECT_NE(failed.dump().find("not fetched"), std::string::npos) << failed.dump(1);
  EXPECT_EQ(flashes(), 0u) << "a truncated image never reached mlxfwmanager";
  std::error_code ec;
  const auto kept = fs::file_size(partial, ec);
  ASSERT_FALSE(ec) << "the partial download is kept for the next try";
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, image.size());

  // The mirror is back: the next run resumes where the download broke off.
  ASSERT_TRUE(mirror_->start());
  json again = flash(params);
  EXPECT_EQ(again.value("state", ""), "passed") << again.dump(1);
  EXPECT_EQ(flashes(), 1u);
  EXPECT_NE(mirror_->accessLog().find(" 206 range=bytes="), std::string::npos) << "a Range request resumed it";
  EXPECT_EQ(sha256Hex(readFile(cached(image, kNicImage))), sha256Hex(image));
}

// A signed bundle through a whole rollout on a pod of 18 real agents: staged from the mirror before
// the drain (one fetch per host and file, all before the upgrade started), then flashed from the
// agents' caches by the shipped firmware-upgrade, validated, done.
TEST_F(ArtifactsE2eTest, ASignedBundleIsStagedBeforeTheDrainAndFlashedFromTheCache) {
  const std::vector<std::string> hosts = podHosts("e2e-b01-p01");
  agents_->startAll(hosts);
  const std::string hmc = "GB200-P4975_0004_250601.1.0";
  const std::string tray_name = "nvfw_" + hmc + "_prod-signed.fwpkg", tray = "GB200 tray package " + hmc;
  const std::string nic = "ConnectX-7 image 28.45.1200";
  for (const auto& [name, content] : {std::pair{tray_name, tray}, std::pair{std::string(kNicImage), nic}}) {
    fs::create_directories(mirror_->www() + "/fw");
    std::ofstream(mirror_->www() + "/fw/" + name, std::ios::binary | std::ios::trunc) << content;
  }
  const std::string sums = SigningKey::sumsLine(tray, tray_name) + SigningKey::sumsLine(nic, kNicImage);
  json bundle = {{"name", "gb200-fw-signed"},
                 {"version", "1.0"},
                 {"platforms", {"catalina"}},
                 {"components",
                  {{{"kind", "hmc_bundle"},
                    {"version", hmc},
                    {"artifact", std::string(kOrigin) + "fw/" + tray_name},
                    {"sha256", sha256Hex(tray)}},
                   {{"kind", "nic"},
                    {"version", "28.45.1200"},
                    {"artifact", std::string(kOrigin) + "fw/" + kNicImage},
                    {"sha256", sha256Hex(nic)}}}},
                 {"checksums", sums},
                 {"signature", site_->sign(sums)}};
  json b = call("POST", "/api/v1/bundles", bundle, 201);
  json policy = {{"canary_pods", 1},
                 {"waves", {"100%"}},
                 {"soak", "0s"},
                 {"max_concurrent_pods", 1},
                 {"capacity_floor", {{"max_percent_down", 100}}},
                 {"failure_budget", {{"pods", 1}}}};
  json r = call(
      "POST", "/api/v1/rollouts",
      {{"bundle", b.value("id", "")}, {"selector", {{"pods", {"e2e-b01-p01"}}}}, {"policy", policy}, {"start", true}},
      201);
  const std::string id = r.value("id", "");
  json done = waitRollout(id, {"completed", "halted", "aborted"}, 200s);
  ASSERT_EQ(done.value("state", ""), "completed") << done.dump(1);
  json pod = call("GET", "/api/v1/rollouts/" + id + "/pods")["items"].at(0);
  EXPECT_EQ(pod.value("phase", ""), "succeeded") << pod.dump(1);

  // The stage run ended before the upgrade run began.
  json stages = call("GET", "/api/v1/workflow-runs?workflow=artifact-stage&limit=10")["items"];
  ASSERT_EQ(stages.size(), 1u) << stages.dump(1);
  json stage = call("GET", "/api/v1/workflow-runs/" + stages[0].value("id", ""));
  json upgrade = call("GET", "/api/v1/workflow-runs/" + pod.value("run_id", ""));
  EXPECT_EQ(stage.value("state", ""), "passed") << stage.dump(1);
  // RFC 3339 UTC times of one format: their text orders as the times do.
  EXPECT_LE(stage.value("finished_at", ""), upgrade.value("created_at", "")) << stage.dump(1) << upgrade.dump(1);
  EXPECT_EQ(stage["rollout"].value("phase", ""), "stage") << stage.dump(1);

  // Every host flashed both files once, from its own cache, each fetched once per host.
  for (const auto& h : hosts) {
    json st = agents_->simState(h);
    EXPECT_EQ(st.value("flashes", 0), 2) << h << " " << st.dump();
    EXPECT_EQ(st["versions"].value("hmc_bundle", ""), hmc) << h;
    EXPECT_EQ(st["versions"].value("nic", ""), "28.45.1200") << h;
    EXPECT_TRUE(fs::exists(agents_->agentDir(h) + "/artifacts/" + sha256Hex(tray) + "/" + tray_name)) << h;
  }
  const std::string log = mirror_->accessLog();
  auto count = [&](const std::string& what) {
    int n = 0;
    for (auto pos = log.find(what); pos != std::string::npos; pos = log.find(what, pos + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("GET /fw/" + tray_name + " 200"), static_cast<int>(hosts.size())) << log;
  EXPECT_EQ(count("GET /fw/" + std::string(kNicImage) + " 200"), static_cast<int>(hosts.size())) << log;
}

}  // namespace
}  // namespace kiln::e2e
