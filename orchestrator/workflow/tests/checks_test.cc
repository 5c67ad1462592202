#include "orchestrator/workflow/checks.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "orchestrator/workflow/loader.h"

namespace kiln::workflow {
namespace {

using nlohmann::json;

Check mk(std::string path, CheckOp op, json expected) {
  Check c;
  c.name = "c";
  c.path = std::move(path);
  c.op = op;
  c.expected = std::move(expected);
  return c;
}

// The shape of a parsed `nvidia-smi -q -x` (see README.md), trimmed.
json smi() {
  return json::parse(R"({
    "driver_version": "570.124.06",
    "gpu_count": 4,
    "gpus": [
      {"index": 0, "pcie": {"gen_max": 5, "width_current": 16},
       "remapped_rows": {"pending": false}, "ecc": {"volatile": {"uncorrectable": 0}},
       "fabric": {"state": "Completed"}},
      {"index": 1, "pcie": {"gen_max": 5, "width_current": 16},
       "remapped_rows": {"pending": true}, "ecc": {"volatile": {"uncorrectable": 0}},
       "fabric": {"state": "Completed"}},
      {"index": 2, "pcie": {"gen_max": 4, "width_current": 8},
       "remapped_rows": {"pending": false}, "ecc": {"volatile": {"uncorrectable": 3}},
       "fabric": {"state": "In Progress"}},
      {"index": 3, "pcie": {"gen_max": 5, "width_current": 16},
       "remapped_rows": {}, "ecc": {"volatile": {"uncorrectable": 0}},
       "fabric": {"state": "Completed"}}
    ]})");
}

CheckOutcome eval(const Check& c, const json& parsed, const ParamValues& params = {},
                  const std::map<std::string, json>& earlier = {}) {
  return evaluateCheck(c, parsed, earlier, params);
}

TEST(CheckPathTest, ParsesKeysIndexesWildcardsFiltersAndQuotedKeys) {
  auto r = parsePath(R"(gpus[*].links[3].x["DCGM Diagnostic"][status=Fail].name)");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 8u);
  EXPECT_EQ((*r)[1].kind, PathSegment::Kind::kAll);
  EXPECT_EQ((*r)[3].index, 3u);
  EXPECT_EQ((*r)[5].key, "DCGM Diagnostic");
  EXPECT_EQ((*r)[6].kind, PathSegment::Kind::kFilter);
  EXPECT_EQ((*r)[6].filter_value, "Fail");
}

TEST(CheckPathTest, RejectsMalformedPaths) {
  for (const char* bad : {"", "a.", ".a", "a..b", "a[", "a[x]", "a[*]b", "a b", "a[*"}) {
    EXPECT_FALSE(parsePath(bad).ok()) << bad;
  }
}

TEST(CheckEvalTest, EqPassesAndFailsWithExpectedAndFound) {
  EXPECT_TRUE(eval(mk("gpu_count", CheckOp::kEq, 4), smi()).passed);
  auto o = eval(mk("gpu_count", CheckOp::kEq, 8), smi());
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.message, "expected gpu_count eq 8, found: gpu_count = 4");
}

TEST(CheckEvalTest, WildcardRequiresEveryElementAndNamesTheBadOnes) {
  auto o = eval(mk("gpus[*].remapped_rows.pending", CheckOp::kEq, false), smi());
  EXPECT_FALSE(o.passed);
  EXPECT_NE(o.message.find("gpu 1: remapped_rows.pending = true"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("gpu 3: remapped_rows.pending missing"), std::string::npos) << o.message;
  EXPECT_EQ(o.message.find("gpu 0"), std::string::npos) << o.message;
  EXPECT_EQ(o.failed_at, (std::vector<std::string>{"gpu 1", "gpu 3"}));
}

TEST(CheckEvalTest, WildcardPassesWhenAllElementsSatisfy) {
  json j = {{"gpus", {{{"fabric", {{"state", "Completed"}}}}, {{"fabric", {{"state", "Completed"}}}}}}};
  auto o = eval(mk("gpus[*].fabric.state", CheckOp::kEq, "Completed"), j);
  EXPECT_TRUE(o.passed) << o.message;
  EXPECT_NE(o.message.find("2 values"), std::string::npos);
}

TEST(CheckEvalTest, EmptyListOrMissingPathFails) {
  EXPECT_FALSE(eval(mk("gpus[*].x", CheckOp::kEq, 0), json{{"gpus", json::array()}}).passed);
  auto o = eval(mk("nothing.here", CheckOp::kEq, 0), smi());
  EXPECT_FALSE(o.passed);
  EXPECT_NE(o.message.find("nothing missing"), std::string::npos) << o.message;
}

TEST(CheckEvalTest, NeLtLeGtGe) {
  json j = {{"n", 5}, {"s", "5"}};
  EXPECT_TRUE(eval(mk("n", CheckOp::kNe, 4), j).passed);
  EXPECT_FALSE(eval(mk("n", CheckOp::kNe, 5), j).passed);
  EXPECT_TRUE(eval(mk("n", CheckOp::kLt, 6), j).passed);
  EXPECT_FALSE(eval(mk("n", CheckOp::kLt, 5), j).passed);
  EXPECT_TRUE(eval(mk("n", CheckOp::kLe, 5), j).passed);
  EXPECT_FALSE(eval(mk("n", CheckOp::kLe, 4), j).passed);
  EXPECT_TRUE(eval(mk("n", CheckOp::kGt, 4), j).passed);
  EXPECT_FALSE(eval(mk("n", CheckOp::kGt, 5), j).passed);
  EXPECT_TRUE(eval(mk("s", CheckOp::kGe, 5), j).passed);  // numeric text compares as a number
  EXPECT_FALSE(eval(mk("s", CheckOp::kGe, 6), j).passed);
}

TEST(CheckEvalTest, OrderingOnNonNumbersFails) {
  auto o = eval(mk("driver_version", CheckOp::kGe, 5), smi());
  EXPECT_FALSE(o.passed);
}

TEST(CheckEvalTest, InMatchesAndExists) {
  json j = {{"tests", {{{"name", "software"}, {"status", "Pass"}},
                       {{"name", "memory"}, {"status", "Fail"}},
                       {{"name", "pcie"}, {"status", "Skip"}}}},
            {"driver_version", "570.124.06"}};
  auto in = eval(mk("tests[*].status", CheckOp::kIn, json::array({"Pass", "Skip"})), j);
  EXPECT_FALSE(in.passed);
  EXPECT_NE(in.message.find("test memory: status = \"Fail\""), std::string::npos) << in.message;
  EXPECT_TRUE(eval(mk("tests[*].status", CheckOp::kIn, json::array({"Pass", "Skip", "Fail"})), j).passed);

  EXPECT_TRUE(eval(mk("driver_version", CheckOp::kMatches, "^570\\."), j).passed);
  EXPECT_FALSE(eval(mk("driver_version", CheckOp::kMatches, "^535\\."), j).passed);
  auto bad_re = eval(mk("driver_version", CheckOp::kMatches, "("), j);
  EXPECT_FALSE(bad_re.passed);
  EXPECT_NE(bad_re.message.find("regular expression"), std::string::npos);

  EXPECT_TRUE(eval(mk("driver_version", CheckOp::kExists, true), j).passed);
  EXPECT_FALSE(eval(mk("cuda_version", CheckOp::kExists, true), j).passed);
  EXPECT_TRUE(eval(mk("cuda_version", CheckOp::kExists, false), j).passed);
  EXPECT_FALSE(eval(mk("driver_version", CheckOp::kExists, false), j).passed);
  // A filter that selects nothing: "no failing test" holds only when none failed.
  EXPECT_FALSE(eval(mk("tests[status=Fail]", CheckOp::kExists, false), j).passed);
  EXPECT_TRUE(eval(mk("tests[status=Warn]", CheckOp::kExists, false), j).passed);
}

TEST(CheckEvalTest, InAndNotInOnListValuesTestEveryElement) {
  json j = {{"gpus", {{{"index", 0}, {"active", json::array({"sw_power_cap"})}},
                      {{"index", 1}, {"active", json::array()}},
                      {{"index", 2}, {"active", json::array({"gpu_idle", "hw_slowdown"})}}}}};
  json bad = json::array({"hw_slowdown", "hw_thermal_slowdown"});
  auto o = eval(mk("gpus[*].active", CheckOp::kNotIn, bad), j);
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.failed_at, std::vector<std::string>{"gpu 2"});
  EXPECT_NE(o.message.find("gpu 2: active = [\"gpu_idle\",\"hw_slowdown\"]"), std::string::npos)
      << o.message;
  EXPECT_TRUE(eval(mk("gpus[*].active", CheckOp::kIn,
                      json::array({"sw_power_cap", "gpu_idle", "hw_slowdown"})), j).passed);
  EXPECT_FALSE(eval(mk("gpus[*].active", CheckOp::kIn, json::array({"sw_power_cap"})), j).passed);
  EXPECT_TRUE(eval(mk("gpus[0].index", CheckOp::kNotIn, json::array({1, 2})), j).passed);
  EXPECT_FALSE(eval(mk("gpus[1].index", CheckOp::kNotIn, json::array({1, 2})), j).passed);
}

TEST(CheckEvalTest, OperandsReferenceParamsWithTheirTypes) {
  ParamValues p = {{"min_gen", "5"}, {"driver", "570.124.06"}, {"other", "535.1"}};
  auto gen = eval(mk("gpus[*].pcie.gen_max", CheckOp::kGe, "{{min_gen}}"), smi(), p);
  EXPECT_FALSE(gen.passed);
  EXPECT_EQ(gen.failed_at, std::vector<std::string>{"gpu 2"});
  EXPECT_NE(gen.message.find("ge 5"), std::string::npos) << gen.message;
  EXPECT_TRUE(eval(mk("driver_version", CheckOp::kEq, "{{driver}}"), smi(), p).passed);
  EXPECT_FALSE(eval(mk("driver_version", CheckOp::kEq, "{{other}}"), smi(), p).passed);
}

TEST(CheckEvalTest, WhenEmptyParamSkipsTheCheck) {
  Check c = mk("driver_version", CheckOp::kEq, "{{driver}}");
  c.when = "{{driver}}";
  auto o = eval(c, smi(), {{"driver", ""}});
  EXPECT_TRUE(o.passed);
  EXPECT_TRUE(o.skipped);
  auto checked = eval(c, smi(), {{"driver", "535.1"}});
  EXPECT_FALSE(checked.passed);
  EXPECT_FALSE(checked.skipped);
}

TEST(CheckEvalTest, ExplainNamesFailingDiagTests) {
  json diag = {{"overall", "Fail"},
               {"tests", {{{"name", "software"}, {"status", "Pass"}},
                          {{"name", "memory"}, {"status", "Fail"}},
                          {{"name", "pcie"}, {"status", "Fail"}}}}};
  Check c = mk("overall", CheckOp::kEq, "Pass");
  c.explain = "tests[status=Fail].name";
  auto o = eval(c, diag);
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.message,
            "expected overall eq \"Pass\", found: overall = \"Fail\" "
            "(tests[status=Fail].name: memory, pcie)");
}

json nvlink(int gpu, int link, int crc_flit, int replay) {
  return {{"gpus",
           {{{"gpu", gpu},
             {"links", {{{"link", 0}, {"crc_flit", 0}, {"replay", 0}},
                        {{"link", link}, {"crc_flit", crc_flit}, {"replay", replay}}}}}}}};
}

Check deltaCheck() {
  Check c = mk("gpus[*].links[*]", CheckOp::kMaxIncrease, 0);
  c.delta_from = "nvlink-before";
  c.fields = {"crc_flit", "replay"};
  return c;
}

TEST(CheckDeltaTest, NamesGpuAndLinkThatGrew) {
  std::map<std::string, json> earlier = {{"nvlink-before", nvlink(2, 7, 10, 1)}};
  auto o = eval(deltaCheck(), nvlink(2, 7, 24, 1), {}, earlier);
  EXPECT_FALSE(o.passed);
  EXPECT_NE(o.message.find("gpu 2 link 7: crc_flit +14"), std::string::npos) << o.message;
  EXPECT_EQ(o.message.find("replay"), std::string::npos) << o.message;
  EXPECT_EQ(o.failed_at, std::vector<std::string>{"gpu 2 link 7"});
}

TEST(CheckDeltaTest, PassesWhenNothingGrewBeyondThreshold) {
  std::map<std::string, json> earlier = {{"nvlink-before", nvlink(2, 7, 10, 1)}};
  EXPECT_TRUE(eval(deltaCheck(), nvlink(2, 7, 10, 1), {}, earlier).passed);
  Check tolerant = deltaCheck();
  tolerant.expected = "{{max}}";
  EXPECT_TRUE(eval(tolerant, nvlink(2, 7, 12, 3), {{"max", "2"}}, earlier).passed);
  EXPECT_FALSE(eval(tolerant, nvlink(2, 7, 13, 3), {{"max", "2"}}, earlier).passed);
}

TEST(CheckDeltaTest, MatchesElementsByLabelNotPosition) {
  json before = {{"gpus", {{{"gpu", 1}, {"links", {{{"link", 7}, {"crc_flit", 5}}}}},
                           {{"gpu", 2}, {"links", {{{"link", 7}, {"crc_flit", 0}}}}}}}};
  json after = {{"gpus", {{{"gpu", 2}, {"links", {{{"link", 7}, {"crc_flit", 0}}}}},
                          {{"gpu", 1}, {"links", {{{"link", 7}, {"crc_flit", 5}}}}}}}};
  Check c = deltaCheck();
  c.fields = {"crc_flit"};
  EXPECT_TRUE(eval(c, after, {}, {{"nvlink-before", before}}).passed);
}

TEST(CheckDeltaTest, MissingBaselineFails) {
  auto o = eval(deltaCheck(), nvlink(2, 7, 0, 0));
  EXPECT_FALSE(o.passed);
  EXPECT_NE(o.message.find("nvlink-before"), std::string::npos);
  auto partial = eval(deltaCheck(), nvlink(2, 9, 0, 0), {}, {{"nvlink-before", nvlink(2, 7, 0, 0)}});
  EXPECT_FALSE(partial.passed);
  EXPECT_NE(partial.message.find("gpu 2 link 9: crc_flit not in baseline"), std::string::npos)
      << partial.message;
}

TEST(CheckDeltaTest, CounterUnreadableOnBothSidesIsSkippedButLosingItFails) {
  json before = nvlink(1, 7, 0, 0);
  json after = nvlink(1, 7, 0, 0);
  before["gpus"][0]["links"][1]["replay"] = nullptr;
  after["gpus"][0]["links"][1]["replay"] = nullptr;
  EXPECT_TRUE(eval(deltaCheck(), after, {}, {{"nvlink-before", before}}).passed);
  auto o = eval(deltaCheck(), after, {}, {{"nvlink-before", nvlink(1, 7, 0, 0)}});
  EXPECT_FALSE(o.passed);
  EXPECT_NE(o.message.find("gpu 1 link 7: replay is not a number"), std::string::npos) << o.message;
}

TEST(CheckDeltaTest, CounterResetIsNotGrowth) {
  std::map<std::string, json> earlier = {{"nvlink-before", nvlink(0, 3, 100, 0)}};
  EXPECT_TRUE(eval(deltaCheck(), nvlink(0, 3, 0, 0), {}, earlier).passed);
}

// A null value (the tool printed N/A) passes only where the check names null.
TEST(CheckNullTest, NullFailsEveryOperatorUnlessTheCheckNamesNull) {
  json doc = json::parse(R"({"gpus": [{"index": 0, "fabric": {"state": null}}]})");
  const std::string path = "gpus[*].fabric.state";
  struct Case {
    CheckOp op;
    json operand;
    bool passes;
  };
  const Case cases[] = {
      {CheckOp::kEq, "Completed", false},
      {CheckOp::kEq, nullptr, true},
      {CheckOp::kEq, "null", false},
      {CheckOp::kNe, "Completed", false},
      {CheckOp::kNe, nullptr, false},
      {CheckOp::kLt, 5, false},
      {CheckOp::kLe, 5, false},
      {CheckOp::kGt, 5, false},
      {CheckOp::kGe, 5, false},
      {CheckOp::kIn, json::array({"Completed"}), false},
      {CheckOp::kIn, json::array({"Completed", nullptr}), true},
      {CheckOp::kNotIn, json::array({"In Progress"}), false},
      {CheckOp::kNotIn, json::array({"In Progress", nullptr}), false},
      {CheckOp::kMatches, "null", false},
      {CheckOp::kMatches, ".*", false},
      {CheckOp::kExists, true, true},
      {CheckOp::kExists, false, false},
  };
  for (const Case& c : cases) {
    CheckOutcome o = eval(mk(path, c.op, c.operand), doc);
    EXPECT_EQ(o.passed, c.passes) << checkOpName(c.op) << " " << c.operand.dump() << ": " << o.message;
  }
  // A value passes `ne: null`: the way to require that the tool reported something.
  json reported = json::parse(R"({"gpus": [{"index": 0, "fabric": {"state": "Completed"}}]})");
  EXPECT_TRUE(eval(mk(path, CheckOp::kNe, nullptr), reported).passed);
}

TEST(CheckNullTest, FailureMessageSaysTheValueWasNotReported) {
  json doc = json::parse(R"({"gpus": [{"index": 0, "ecc": {"volatile_uncorrectable": 0}},
                                      {"index": 1, "ecc": {"volatile_uncorrectable": null}}]})");
  CheckOutcome o = eval(mk("gpus[*].ecc.volatile_uncorrectable", CheckOp::kEq, 0), doc);
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.message, "expected gpus[*].ecc.volatile_uncorrectable eq 0, found: gpu 1: "
                       "ecc.volatile_uncorrectable = null (not reported)");
  EXPECT_EQ(o.failed_at, std::vector<std::string>{"gpu 1"});
}

TEST(CheckNullTest, NullElementsOfAListValueAreComparedLikeAnyElement) {
  json doc = json::parse(R"({"gpus": [{"index": 0, "reasons": ["gpu_idle", null]}]})");
  EXPECT_TRUE(eval(mk("gpus[*].reasons", CheckOp::kNotIn, json::array({"hw_slowdown"})), doc).passed);
  EXPECT_FALSE(eval(mk("gpus[*].reasons", CheckOp::kIn, json::array({"gpu_idle"})), doc).passed);
}

TEST(CheckNullTest, DeltaWithEveryCounterNullOnBothSidesComparesNothingAndFails) {
  json before = json::parse(R"({"gpus": [{"gpu_id": 0, "links": [{"link": 0, "crc_flit": null}]}]})");
  Check c = mk("gpus[*].links[*]", CheckOp::kMaxIncrease, 0);
  c.delta_from = "nvlink-before";
  c.fields = {"crc_flit"};
  CheckOutcome o = eval(c, before, {}, {{"nvlink-before", before}});
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.message, "expected counters at gpus[*].links[*], found none");
}

// A document whose only value at `segs` is null (with `fields` null under it, for delta
// checks): what a check sees when the tool printed N/A there.
json nullDocument(const std::vector<PathSegment>& segs, std::size_t i, const Check& check) {
  if (i == segs.size()) {
    if (check.fields.empty()) return nullptr;
    json leaf = json::object();
    for (const auto& f : check.fields) leaf[f] = nullptr;
    return leaf;
  }
  const PathSegment& seg = segs[i];
  if (seg.kind == PathSegment::Kind::kKey) return json{{seg.key, nullDocument(segs, i + 1, check)}};
  json element = nullDocument(segs, i + 1, check);
  if (element.is_object()) {
    if (!element.contains("index")) element["index"] = 0;
    if (seg.kind == PathSegment::Kind::kFilter) element[seg.key] = seg.filter_value;
  }
  json list = json::array();
  std::size_t copies = seg.kind == PathSegment::Kind::kIndex ? seg.index + 1 : 1;
  for (std::size_t k = 0; k < copies; ++k) list.push_back(element);
  return list;
}

// The outcome of every check of the shipped workflows on a field the tool printed as N/A,
// written down here so that each one is a decision (orchestrator/workflow/README.md, "Null").
// Checks with a `when` are evaluated as if their parameter were set.
TEST(ShippedWorkflowsTest, EveryShippedCheckDecidesNullAsDocumented) {
  const std::map<std::string, bool> kPassesOnNull = [] {
    std::map<std::string, bool> m;
    auto fail = [&](const std::string& key) { m[key] = false; };
    auto pass = [&](const std::string& key) { m[key] = true; };
    // rack-firmware runs firmware-upgrade's host checks as they are (issue 32).
    for (const char* workflow : {"firmware-upgrade", "rack-firmware"}) {
      for (const char* check : {"driver version", "GPU VBIOS version", "HMC bundle version", "SBIOS version",
                                "BMC version", "ConnectX firmware version"}) {
        fail(std::string(workflow) + "/verify-versions/" + check);
      }
      for (const char* check :
           {"GPU count", "driver version reported by nvidia-smi", "GPU VBIOS reported by nvidia-smi",
            "no row remap pending", "NVLink fabric registered"}) {
        fail(std::string(workflow) + "/health-gpu-state/" + check);
      }
    }
    fail("rack-firmware/bmc-reset/BMC runs the new version after its reset");
    fail("rack-firmware/bmc-read-back/BMC firmware version read back");
    fail("rack-firmware/switch-read-back/every switch tray runs the bundle's version");
    for (const char* prefix : {"firmware-upgrade/health-diag/", "rack-firmware/health-diag/", "l11-burn-in/dcgm-diag/",
                               "pre-job-health/dcgm-diag/", "quarantine-validation/dcgm-diag/"}) {
      fail(std::string(prefix) + "dcgmi diag passed");
      pass(std::string(prefix) + "dcgmi diag ran its tests");  // exists: the key is there
    }
    const char* const gpuState[] = {"GPU count", "no row remap pending", "no row remap failure",
                                    "no volatile uncorrectable ECC errors", "PCIe generation", "PCIe width",
                                    "NVLink fabric registered"};
    for (const char* check : gpuState) {
      fail(std::string("l11-burn-in/gpu-state/") + check);
      fail(std::string("pre-job-health/gpu-state/") + check);
      fail(std::string("quarantine-validation/gpu-state/") + check);
    }
    fail("pre-job-health/gpu-state/no hardware slowdown or thermal throttling");
    fail("pre-job-health/gpu-state/driver version");
    fail("quarantine-validation/gpu-state/driver version");
    // A driver too old to print gpu_recovery_action (before ~550): null passes, by its operand.
    pass("pre-job-health/gpu-state/no pending GPU recovery action");
    pass("quarantine-validation/gpu-state/no pending GPU recovery action");
    pass("l11-burn-in/gpu-state-after/no pending GPU recovery action");
    // Issue 32: the NVLink domain's own validation: a GPU that cannot say its fabric state is
    // not proven in the domain; recovery action as everywhere.
    for (const char* check : {"GPU count", "NVLink fabric registered", "NVLink fabric registration succeeded"})
      fail(std::string("nvlink-domain-validation/fabric/") + check);
    pass("nvlink-domain-validation/fabric/no pending GPU recovery action");
    // A BMC that does not say its version after the update is not verified.
    fail("tray-bmc-firmware/bmc-reset/BMC runs the new version after its reset");
    fail("tray-bmc-firmware/bmc-read-back/BMC firmware version read back");
    fail("switch-tray-firmware/switch-read-back/every switch tray runs the bundle's version");
    for (const char* check : {"no row remap pending", "no row remap failure", "no volatile uncorrectable ECC errors",
                              "NVLink fabric registered"}) {
      fail(std::string("l11-burn-in/gpu-state-after/") + check);
    }
    for (const char* check :
         {"no row remap pending", "no volatile uncorrectable ECC errors", "NVLink fabric registered"}) {
      fail(std::string("quarantine-validation/gpu-state-after/") + check);
    }
    for (const char* workflow : {"l11-burn-in", "pre-job-health", "quarantine-validation"}) {
      for (int g = 0; g < 4; ++g) {
        fail(std::string(workflow) + "/nvlink-after-g" + std::to_string(g) + "/NVLink error counters did not grow");
      }
    }
    return m;
  }();

  auto workflows = loadWorkflowDir(KILN_WORKFLOWS_DIR);
  ASSERT_TRUE(workflows.ok()) << workflows.error();
  std::map<std::string, bool> actual;
  for (const auto& w : *workflows) {
    ParamValues given;
    for (const auto& p : w.params) {
      if (p.type == ParamType::kString) given[p.name] = "x";
    }
    auto params = resolveParams(w, given);
    ASSERT_TRUE(params.ok()) << w.name << ": " << params.error();
    for (const auto& step : w.steps) {
      for (const auto& check : step.checks) {
        auto segs = parsePath(check.path);
        ASSERT_TRUE(segs.ok()) << check.path;
        json doc = nullDocument(*segs, 0, check);
        std::map<std::string, json> earlier;
        if (!check.delta_from.empty()) earlier[check.delta_from] = doc;
        CheckOutcome o = evaluateCheck(check, doc, earlier, *params);
        EXPECT_FALSE(o.skipped) << w.name << "/" << step.id << "/" << check.name;
        actual[w.name + "/" + step.id + "/" + check.name] = o.passed;
      }
    }
  }
  EXPECT_EQ(actual, kPassesOnNull);
  for (const auto& [key, passes] : actual) {
    auto it = kPassesOnNull.find(key);
    if (it == kPassesOnNull.end()) {
      ADD_FAILURE() << "shipped check " << key << " has no documented outcome on null";
    } else {
      EXPECT_EQ(passes, it->second) << key;
    }
  }
}

TEST(CheckEvalTest, EvaluateChecksRunsEveryCheckInOrder) {
  StepSpec step;
  step.checks = {mk("gpu_count", CheckOp::kEq, 4), mk("gpus[*].fabric.state", CheckOp::kEq, "Completed")};
  step.checks[1].name = "fabric";
  auto outcomes = evaluateChecks(step, smi(), {}, {});
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_TRUE(outcomes[0].passed);
  EXPECT_FALSE(outcomes[1].passed);
  EXPECT_EQ(outcomes[1].name, "fabric");
  EXPECT_NE(outcomes[1].message.find("gpu 2: fabric.state = \"In Progress\""), std::string::npos)
      << outcomes[1].message;
  EXPECT_FALSE(allPassed(outcomes));
}

}  // namespace
}  // namespace kiln::workflow
