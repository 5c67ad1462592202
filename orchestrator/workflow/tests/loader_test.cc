#include "orchestrator/workflow/loader.h"

#include <gtest/gtest.h>

#include "orchestrator/workflow/checks.h"

#include <filesystem>
#include <fstream>

namespace kiln::workflow {
namespace {

const char* const kValid = R"(name: demo
version: "1"
description: a small workflow
scope: host
params:
  min_gen: {type: int, default: 5}
  driver: {type: string, default: ""}
steps:
  - id: smi
    run: [nvidia-smi, -q, -x]
    timeout: 10s
    parse: nvidia-smi-xml
    checks:
      - name: four GPUs
        path: gpu_count
        eq: 4
      - path: gpus[*].pcie.gen_max
        ge: "{{min_gen}}"
      - path: driver_version
        eq: "{{driver}}"
        when: "{{driver}}"
  - id: nv-before
    run: [dcgmi, nvlink, -e, -g, "0", -j]
    timeout: 5s
    parse: dcgmi-nvlink-json
  - id: nv-after
    run: [dcgmi, nvlink, -e, -g, "0", -j]
    timeout: 5s
    retries: {count: 1, backoff: 2s}
    parse: dcgmi-nvlink-json
    checks:
      - name: no growth
        delta_from: nv-before
        path: gpus[*].links[*]
        fields: [crc_flit, replay]
)";

// Loads `yaml` expecting failure; returns the error.
Error errorsOf(const std::string& yaml) {
  auto r = loadWorkflow(yaml, "wf.yaml");
  EXPECT_FALSE(r.ok()) << "expected an error for:\n" << yaml;
  if (r.ok()) return {};
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidContent);
  return r.error();
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

bool hasField(const Error& e, const std::string& path, const std::string& message_part) {
  for (const auto& f : e.fields) {
    if (f.path == path && f.message.find(message_part) != std::string::npos) return true;
  }
  return false;
}

TEST(WorkflowLoaderTest, LoadsAValidWorkflow) {
  auto r = loadWorkflow(kValid, "wf.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  const WorkflowSpec& w = *r;
  EXPECT_EQ(w.name, "demo");
  EXPECT_EQ(w.scope, Scope::kHost);
  ASSERT_EQ(w.steps.size(), 3u);
  EXPECT_EQ(w.steps[0].run, (std::vector<std::string>{"nvidia-smi", "-q", "-x"}));
  EXPECT_EQ(w.steps[0].timeout.literal.value, std::chrono::seconds(10));
  EXPECT_EQ(w.steps[0].expect_exit, std::vector<int>{0});
  ASSERT_EQ(w.steps[0].checks.size(), 3u);
  EXPECT_EQ(w.steps[0].checks[0].expected, 4);
  EXPECT_EQ(w.steps[0].checks[1].name, "gpus[*].pcie.gen_max ge \"{{min_gen}}\"");
  EXPECT_EQ(w.steps[0].checks[2].when, "{{driver}}");
  EXPECT_EQ(w.steps[0].checks[0].mark.line, 14);
  const Check& delta = w.steps[2].checks[0];
  EXPECT_EQ(delta.op, CheckOp::kMaxIncrease);
  EXPECT_EQ(delta.expected, 0);
  EXPECT_EQ(delta.fields, (std::vector<std::string>{"crc_flit", "replay"}));
  EXPECT_EQ(w.steps[2].retries.count, 1);
  EXPECT_EQ(w.findParam("driver")->default_value, "");
  EXPECT_EQ(w.content_hash, contentHash(kValid));
  EXPECT_EQ(w.content_hash.size(), 64u);
}

TEST(WorkflowLoaderTest, ContentHashIsSha256Hex) {
  EXPECT_EQ(contentHash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(WorkflowLoaderTest, ToJsonCarriesTheSpec) {
  auto r = loadWorkflow(kValid, "wf.yaml");
  ASSERT_TRUE(r.ok());
  nlohmann::json j = toJson(*r);
  EXPECT_EQ(j["name"], "demo");
  EXPECT_EQ(j["scope"], "host");
  EXPECT_EQ(j["params"]["min_gen"]["default"], 5);
  EXPECT_EQ(j["steps"][0]["timeout"], "10s");
  EXPECT_EQ(j["steps"][2]["checks"][0]["max_increase"], 0);
  EXPECT_EQ(j["steps"][2]["checks"][0]["delta_from"], "nv-before");
  EXPECT_EQ(j["steps"][2]["retries"]["backoff"], "2s");
}

TEST(WorkflowLoaderTest, UnknownKeyNamesFileLineColumnAndPath) {
  Error e = errorsOf(replaced(kValid, "    timeout: 10s\n", "    timeout: 10s\n    retry: 3\n"));
  EXPECT_EQ(e.message.rfind("wf.yaml:12:5: steps[0].retry: unknown key \"retry\"", 0), 0u)
      << e.message;
}

// Issue 32: a barrier's agreement names an earlier step with a parse and check paths.
TEST(WorkflowLoaderTest, AgreeIsForBarriersOverAnEarlierParsedStep) {
  const char* ok = R"(name: domain
version: "1"
scope: pod
steps:
  - id: fabric
    run: [nvidia-smi, -q, -x]
    parse: nvidia-smi-xml
    timeout: 1m
  - id: domain
    type: barrier
    timeout: 10m
    agree: {step: fabric, paths: ["gpus[*].fabric.clique_id"]}
)";
  auto spec = loadWorkflow(ok, "domain.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_TRUE(spec->steps[1].agree);
  EXPECT_EQ(spec->steps[1].agree->step, "fabric");
  EXPECT_EQ(spec->agreedPaths("fabric"), std::vector<std::string>{"gpus[*].fabric.clique_id"});
  EXPECT_EQ(toJson(*spec)["steps"][1]["agree"]["paths"][0], "gpus[*].fabric.clique_id");

  Error e = errorsOf(replaced(ok, "{step: fabric,", "{step: later,"));
  EXPECT_TRUE(hasField(e, "steps[1].agree.step", "no step")) << e.message;
  e = errorsOf(replaced(ok, "    parse: nvidia-smi-xml\n", ""));
  EXPECT_TRUE(hasField(e, "steps[1].agree.step", "has no parse")) << e.message;
  e = errorsOf(replaced(ok, "paths: [\"gpus[*].fabric.clique_id\"]", "paths: []"));
  EXPECT_TRUE(hasField(e, "steps[1].agree.paths", "non-empty list")) << e.message;
  e = errorsOf(replaced(ok, "paths: [\"gpus[*].fabric.clique_id\"]", "paths: [\"gpus[*.x\"]"));
  EXPECT_TRUE(hasField(e, "steps[1].agree.paths[0]", "")) << e.message;
  e = errorsOf(replaced(ok, "    parse: nvidia-smi-xml\n", "    parse: nvidia-smi-xml\n    agree: {step: fabric, paths: [x]}\n"));
  EXPECT_TRUE(hasField(e, "steps[0].agree", "for barrier steps")) << e.message;
}

// Issue 32: steps about the host's BMC, and a reboot's recovery through it.
TEST(WorkflowLoaderTest, TargetAndRecoverAreReadAndCheckedWhereTheyBelong) {
  const char* ok = R"(name: oob
version: "1"
scope: host
steps:
  - id: status
    target: bmc
    run: [kiln-oob, power, status, --bmc, "{{host.bmc}}", --credential, "{{host.bmc_credential}}"]
    parse: json
    timeout: 1m
  - id: reboot
    type: reboot
    timeout: 15m
    recover: {power_cycles: 2, timeout: 5m}
)";
  auto spec = loadWorkflow(ok, "oob.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->steps[0].target, Target::kBmc);
  EXPECT_FALSE(spec->steps[0].recover);
  ASSERT_TRUE(spec->steps[1].recover);
  EXPECT_EQ(spec->steps[1].recover->power_cycles, 2);
  EXPECT_EQ(spec->steps[1].recover->timeout.value, std::chrono::minutes(5));
  EXPECT_EQ(toJson(*spec)["steps"][0]["target"], "bmc");
  EXPECT_EQ(toJson(*spec)["steps"][1]["recover"]["timeout"], "5m");

  Error e = errorsOf(replaced(ok, "    target: bmc\n", "    target: switch\n"));
  EXPECT_TRUE(hasField(e, "steps[0].target", "expected host, bmc or switch_trays")) << e.message;
  e = errorsOf(replaced(ok, "    type: reboot\n", "    type: reboot\n    target: bmc\n"));
  EXPECT_TRUE(hasField(e, "steps[1].target", "for run steps")) << e.message;
  e = errorsOf(replaced(ok, "    parse: json\n", "    parse: json\n    recover: {power_cycles: 1}\n"));
  EXPECT_TRUE(hasField(e, "steps[0].recover", "for reboot steps")) << e.message;
  e = errorsOf(replaced(ok, "power_cycles: 2", "power_cycles: 9"));
  EXPECT_TRUE(hasField(e, "steps[1].recover.power_cycles", "")) << e.message;
  e = errorsOf(replaced(ok, "timeout: 5m}", "timeout: 2s}"));
  EXPECT_TRUE(hasField(e, "steps[1].recover.timeout", "from 10s to 1h")) << e.message;
  e = errorsOf(replaced(ok, "timeout: 5m}", "timeout: 5m, attempts: 3}"));
  EXPECT_TRUE(hasField(e, "steps[1].recover.attempts", "unknown key")) << e.message;
}

// Issue 32: a pod's switch trays through its runner, and read-backs that record devices' versions.
TEST(WorkflowLoaderTest, SwitchTraysAndInventoryAreReadAndCheckedWhereTheyBelong) {
  const char* ok = R"(name: rack
version: "1"
scope: pod
steps:
  - id: bmc-read-back
    target: bmc
    run: [kiln-oob, firmware, list, --bmc, "{{host.bmc}}"]
    parse: json
    inventory: {bmc: BMC_Firmware, hmc_bundle: HMC_Firmware}
    timeout: 1m
  - id: switch-read-back
    target: switch_trays
    run_on: leader
    run: [kiln-oob, firmware, list, --bmc, "{{pod.switch_bmcs}}"]
    parse: json
    inventory: {nvswitch: NVSwitch_Firmware}
    timeout: 1m
)";
  auto spec = loadWorkflow(ok, "rack.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->steps[0].inventory,
            (std::map<std::string, std::string>{{"bmc", "BMC_Firmware"}, {"hmc_bundle", "HMC_Firmware"}}));
  EXPECT_EQ(spec->steps[1].target, Target::kSwitchTrays);
  EXPECT_EQ(toJson(*spec)["steps"][1]["target"], "switch_trays");
  EXPECT_EQ(toJson(*spec)["steps"][1]["inventory"]["nvswitch"], "NVSwitch_Firmware");

  Error e = errorsOf(replaced(ok, "    run_on: leader\n", ""));
  EXPECT_TRUE(hasField(e, "steps[1].target", "add run_on: leader")) << e.message;
  e = errorsOf(replaced(ok, "{nvswitch: NVSwitch_Firmware}", "{bmc: BMC_Firmware}"));
  EXPECT_TRUE(hasField(e, "steps[1].inventory.bmc", "nvswitch only")) << e.message;
  e = errorsOf(replaced(ok, "{bmc: BMC_Firmware, hmc_bundle: HMC_Firmware}", "{nvswitch: X}"));
  EXPECT_TRUE(hasField(e, "steps[0].inventory.nvswitch", "a compute tray's own components")) << e.message;
  e = errorsOf(replaced(ok, "hmc_bundle: HMC_Firmware", "hmc_bundle: \"HMC Firmware\""));
  EXPECT_TRUE(hasField(e, "steps[0].inventory.hmc_bundle", "FirmwareInventory member id")) << e.message;
  e = errorsOf(replaced(ok, "    target: bmc\n", ""));
  EXPECT_TRUE(hasField(e, "steps[0].inventory", "target: bmc or switch_trays")) << e.message;
  e = errorsOf(replaced(ok, "    parse: json\n    inventory: {bmc", "    parse: nvidia-smi-xml\n    inventory: {bmc"));
  EXPECT_TRUE(hasField(e, "steps[0].inventory", "needs parse: json")) << e.message;
  e = errorsOf(replaced(ok, "{nvswitch: NVSwitch_Firmware}", "[nvswitch]"));
  EXPECT_TRUE(hasField(e, "steps[1].inventory", "mapping of component kind")) << e.message;
  e = errorsOf(replaced(ok, "scope: pod", "scope: host"));
  EXPECT_TRUE(hasField(e, "steps[1].run_on", "needs scope: pod")) << e.message;
}

// Issue 35: how much raw stdout a clean, parsed run sends back.
TEST(WorkflowLoaderTest, StdoutWhenParsedNeedsAParseAndABoundedSize) {
  const char* ok = R"(name: check
version: "1"
scope: host
steps:
  - id: gpu-state
    run: [nvidia-smi, -q, -x]
    parse: nvidia-smi-xml
    stdout_when_parsed: 2048
    timeout: 8s
  - id: plain
    run: [true]
    timeout: 8s
)";
  auto spec = loadWorkflow(ok, "check.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->steps[0].stdout_when_parsed, 2048);
  EXPECT_FALSE(spec->steps[1].stdout_when_parsed.has_value());
  EXPECT_EQ(toJson(*spec)["steps"][0]["stdout_when_parsed"], 2048);
  EXPECT_FALSE(toJson(*spec)["steps"][1].contains("stdout_when_parsed"));
  EXPECT_EQ(loadWorkflow(replaced(ok, "2048", "0"), "check.yaml")->steps[0].stdout_when_parsed, 0);

  Error e = errorsOf(replaced(ok, "    parse: nvidia-smi-xml\n", ""));
  EXPECT_TRUE(hasField(e, "steps[0].stdout_when_parsed", "with a parse format")) << e.message;
  e = errorsOf(replaced(ok, "2048", "65537"));
  EXPECT_TRUE(hasField(e, "steps[0].stdout_when_parsed", "an integer from 0 to 65536")) << e.message;
  e = errorsOf(replaced(ok, "2048", "-1"));
  EXPECT_TRUE(hasField(e, "steps[0].stdout_when_parsed", "an integer from 0 to 65536")) << e.message;
  e = errorsOf(replaced(ok, "2048", "2KiB"));
  EXPECT_TRUE(hasField(e, "steps[0].stdout_when_parsed", "an integer")) << e.message;
}

// Found by tests/fuzz (workflow_yaml): a byte that is not UTF-8 in a string made the loader's
// error quoting throw nlohmann's type_error out of loadWorkflow (kilnd's PUT answered with the
// library's message; a workflows/ file would have stopped kilnd at start). It is a YAML error
// with its position now, and specs hold only UTF-8.
TEST(WorkflowLoaderTest, TextThatIsNotUtf8IsAnErrorWithItsPosition) {
  const Error e = errorsOf(replaced(kValid, "run: [nvidia-smi, -q, -x]", "run: [\"nvidia-smi\xff\"]"));
  EXPECT_EQ(e.message.rfind("wf.yaml:10:22: ", 0), 0u) << e.message;
  EXPECT_NE(e.message.find("not UTF-8 text (byte 0xFF)"), std::string::npos) << e.message;
}

TEST(WorkflowLoaderTest, NestingPastTheBoundIsAnError) {
  const Error e = errorsOf(replaced(kValid, "fields: [crc_flit, replay]", "fields: " + std::string(300, '[')));
  EXPECT_NE(e.message.find("nested deeper than 256"), std::string::npos) << e.message;
}

TEST(WorkflowLoaderTest, BadDurationGivesTheExampleMessage) {
  Error e = errorsOf(replaced(kValid, "timeout: 10s", "timeout: fast"));
  EXPECT_EQ(e.message,
            "wf.yaml:11:14: steps[0].timeout: expected a duration like 30s or 15m, got \"fast\"");
  ASSERT_EQ(e.fields.size(), 1u);
  EXPECT_EQ(e.fields[0].path, "steps[0].timeout");
  EXPECT_EQ(e.fields[0].message, "11:14: expected a duration like 30s or 15m, got \"fast\"");
  EXPECT_EQ(e.details.at("text"), e.message);
}

TEST(WorkflowLoaderTest, DuplicateStepId) {
  Error e = errorsOf(replaced(kValid, "id: nv-after", "id: nv-before"));
  EXPECT_TRUE(hasField(e, "steps[2].id", "26:9: duplicate step id \"nv-before\" (first at line 22)"))
      << e;
}

TEST(WorkflowLoaderTest, UnknownParseFormat) {
  Error e = errorsOf(replaced(kValid, "parse: nvidia-smi-xml", "parse: nvidia-smi"));
  EXPECT_TRUE(hasField(e, "steps[0].parse", "12:12: expected one of nvidia-smi-xml, "
                                            "dcgmi-diag-json, dcgmi-nvlink-json, json, key-value, "
                                            "got \"nvidia-smi\""))
      << e;
}

TEST(WorkflowLoaderTest, UndeclaredParamInArgvAndInCheck) {
  std::string y = replaced(kValid, "[nvidia-smi, -q, -x]", "[nvidia-smi, -q, \"{{fmt}}\"]");
  y = replaced(y, "ge: \"{{min_gen}}\"", "ge: \"{{min_generation}}\"");
  Error e = errorsOf(y);
  EXPECT_TRUE(hasField(e, "steps[0].run[2]", "10:27: undeclared parameter \"fmt\" (declared: "
                                             "min_gen, driver)"))
      << e;
  EXPECT_TRUE(hasField(e, "steps[0].checks[1].ge", "undeclared parameter \"min_generation\"")) << e;
}

TEST(WorkflowLoaderTest, UnknownHostFieldAndPodHostsInHostScope) {
  std::string y = replaced(kValid, "[nvidia-smi, -q, -x]",
                           "[nvidia-smi, \"{{host.colour}}\", \"{{pod.hosts}}\", \"{{host.name}}\"]");
  Error e = errorsOf(y);
  EXPECT_TRUE(hasField(e, "steps[0].run[1]", "unknown field \"host.colour\"")) << e;
  EXPECT_TRUE(hasField(e, "steps[0].run[2]", "{{pod.hosts}} needs scope: pod")) << e;
  EXPECT_EQ(e.fields.size(), 2u) << e;
}

TEST(WorkflowLoaderTest, BarrierInHostScope) {
  std::string y = std::string(kValid) + "  - id: wait\n    type: barrier\n    timeout: 1h\n";
  Error e = errorsOf(y);
  EXPECT_TRUE(hasField(e, "steps[3].type", "37:11: barrier steps need scope: pod")) << e;
  std::string pod = replaced(y, "scope: host", "scope: pod");
  EXPECT_TRUE(loadWorkflow(pod, "wf.yaml").ok());
}

TEST(WorkflowLoaderTest, DeltaFromALaterStep) {
  std::string y = replaced(kValid, "delta_from: nv-before", "delta_from: nv-later");
  y += "  - id: nv-later\n    run: [dcgmi]\n    timeout: 5s\n    parse: json\n";
  Error e = errorsOf(y);
  EXPECT_TRUE(hasField(e, "steps[2].checks[0].delta_from",
                       "33:21: step \"nv-later\" does not come before this step"))
      << e;
}

TEST(WorkflowLoaderTest, DeltaFromUnknownOrUnparsedStep) {
  Error unknown = errorsOf(replaced(kValid, "delta_from: nv-before", "delta_from: nope"));
  EXPECT_TRUE(hasField(unknown, "steps[2].checks[0].delta_from", "no step \"nope\"")) << unknown;
  std::string unparsed = replaced(kValid, "    parse: dcgmi-nvlink-json\n  - id: nv-after",
                                  "  - id: nv-after");
  Error e = errorsOf(unparsed);
  EXPECT_TRUE(hasField(e, "steps[2].checks[0].delta_from", "has no parse")) << e;
}

TEST(WorkflowLoaderTest, ReportsEveryErrorInDocumentOrder) {
  std::string y = replaced(kValid, "scope: host", "scope: rack");
  y = replaced(y, "timeout: 10s", "timeout: soon");
  y = replaced(y, "eq: 4", "equals: 4");
  y = replaced(y, "parse: dcgmi-nvlink-json\n  - id: nv-after", "parse: xml\n  - id: nv-after");
  Error e = errorsOf(y);
  ASSERT_EQ(e.fields.size(), 5u) << e;  // "equals" is unknown AND leaves the check operator-less
  EXPECT_EQ(e.fields[0].path, "scope");
  EXPECT_EQ(e.fields[1].path, "steps[0].timeout");
  EXPECT_EQ(e.fields[2].path, "steps[0].checks[0]");
  EXPECT_EQ(e.fields[3].path, "steps[0].checks[0].equals");
  EXPECT_EQ(e.fields[4].path, "steps[1].parse");
  EXPECT_EQ(e.details.at("count"), "5");
  const std::string& text = e.details.at("text");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
  EXPECT_NE(text.find("wf.yaml:4:8: scope: expected host or pod, got \"rack\""), std::string::npos)
      << text;
}

TEST(WorkflowLoaderTest, MissingRequiredKeysAndBadShapes) {
  Error e = errorsOf("name: x\nsteps:\n  - run: nvidia-smi -q\n    timeout: 5s\n");
  EXPECT_TRUE(hasField(e, "version", "required key \"version\" is missing")) << e;
  EXPECT_TRUE(hasField(e, "scope", "required key \"scope\" is missing")) << e;
  EXPECT_TRUE(hasField(e, "steps[0].id", "required key \"id\" is missing")) << e;
  EXPECT_TRUE(hasField(e, "steps[0].run", "expected a non-empty argv list")) << e;
}

TEST(WorkflowLoaderTest, CheckOperatorRules) {
  auto withCheck = [](const std::string& check) {
    return replaced(kValid, "      - name: four GPUs\n        path: gpu_count\n        eq: 4\n",
                    check);
  };
  EXPECT_TRUE(hasField(errorsOf(withCheck("      - path: gpu_count\n        eq: 4\n        ne: 3\n")),
                       "steps[0].checks[0].ne", "one operator per check"));
  EXPECT_TRUE(hasField(errorsOf(withCheck("      - path: gpu_count\n        max_increase: 0\n")),
                       "steps[0].checks[0].max_increase", "needs delta_from"));
  EXPECT_TRUE(hasField(errorsOf(withCheck("      - path: gpus[x]\n        eq: 4\n")),
                       "steps[0].checks[0].path", "expected a path like"));
  EXPECT_TRUE(hasField(errorsOf(withCheck("      - path: gpu_count\n        in: 4\n")),
                       "steps[0].checks[0].in", "expected a non-empty list"));
  EXPECT_TRUE(hasField(errorsOf(withCheck("      - path: a\n        matches: \"(\"\n")),
                       "steps[0].checks[0].matches", "expected a regular expression"));
  EXPECT_TRUE(hasField(errorsOf(withCheck("      - path: a\n        exists: maybe\n")),
                       "steps[0].checks[0].exists", "expected true or false"));
  EXPECT_TRUE(hasField(errorsOf(withCheck("      - path: a\n        ge: high\n")),
                       "steps[0].checks[0].ge", "expected a number or {{param}}"));
  EXPECT_TRUE(hasField(errorsOf(withCheck("      - path: a\n        eq: \"{{host.name}}\"\n")),
                       "steps[0].checks[0].eq", "only parameters"));
}

TEST(WorkflowLoaderTest, QuotedScalarsStayStrings) {
  auto r = loadWorkflow(replaced(kValid, "eq: 4", "eq: \"4\""), "wf.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->steps[0].checks[0].expected, "4");
}

TEST(WorkflowLoaderTest, StepTypeRules) {
  std::string reboot = std::string(kValid) +
                       "  - id: boot\n    type: reboot\n    timeout: 20m\n    parse: json\n";
  Error e = errorsOf(reboot);
  EXPECT_TRUE(hasField(e, "steps[3].parse", "not allowed in a reboot step")) << e;
  auto ok = loadWorkflow(std::string(kValid) + "  - id: boot\n    type: reboot\n    timeout: 20m\n",
                         "wf.yaml");
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->steps[3].run, std::vector<std::string>{"kiln-reboot"});
  std::string barrier = replaced(std::string(kValid), "scope: host", "scope: pod") +
                        "  - id: b\n    type: barrier\n    run: [x]\n    timeout: 1h\n";
  EXPECT_TRUE(hasField(errorsOf(barrier), "steps[3].run", "not allowed in a barrier step"));
  EXPECT_TRUE(hasField(errorsOf(replaced(kValid, "    timeout: 5s\n    retries",
                                         "    timeout: 5s\n    run_on: leader\n    retries")),
                       "steps[2].run_on", "needs scope: pod"));
}

TEST(WorkflowLoaderTest, WorkflowLevelRepeatAndSoakTakeTypedParams) {
  std::string y = replaced(kValid, "params:\n",
                           "repeat: \"{{passes}}\"\nsoak_between: \"{{soak}}\"\nparams:\n"
                           "  passes: {type: int, default: 2}\n"
                           "  soak: {type: duration, default: 30m}\n");
  auto r = loadWorkflow(y, "wf.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->repeat.param, "passes");
  EXPECT_EQ(r->soak_between.param, "soak");
  Error e = errorsOf(replaced(y, "soak_between: \"{{soak}}\"", "soak_between: \"{{passes}}\""));
  EXPECT_TRUE(hasField(e, "soak_between", "has type int, expected duration")) << e;
}

TEST(WorkflowLoaderTest, BadParamDefaultsAndTypes) {
  std::string y = replaced(kValid, "min_gen: {type: int, default: 5}",
                           "min_gen: {type: int, default: five}\n  x: {type: float}");
  Error e = errorsOf(y);
  EXPECT_TRUE(hasField(e, "params.min_gen.default", "expected an integer, got \"five\"")) << e;
  EXPECT_TRUE(hasField(e, "params.x.type", "expected string, int, bool, duration or artifact")) << e;
}

TEST(WorkflowLoaderTest, ArtifactParamsTakeLocationWithSha256OrNothing) {
  const std::string sha(64, 'a');
  std::string y = replaced(kValid, "min_gen: {type: int, default: 5}",
                           "min_gen: {type: int, default: 5}\n"
                           "  pkg: {type: artifact, default: \"https://m.example/t.fwpkg#sha256=" + sha + "\"}\n"
                           "  image: {type: artifact, default: }\n"
                           "  none: {type: artifact, default: \"\"}");
  auto r = loadWorkflow(y, "wf.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_NE(r->findParam("pkg"), nullptr);
  EXPECT_EQ(r->findParam("pkg")->type, ParamType::kArtifact);
  EXPECT_EQ(r->findParam("image")->default_value, "");
  EXPECT_EQ(r->findParam("none")->default_value, "");
  nlohmann::json j = toJson(*r);
  EXPECT_EQ(j["params"]["pkg"]["type"], "artifact");
  EXPECT_EQ(j["params"]["pkg"]["default"], "https://m.example/t.fwpkg#sha256=" + sha);

  Error e = errorsOf(replaced(kValid, "min_gen: {type: int, default: 5}",
                              "min_gen: {type: int, default: 5}\n"
                              "  pkg: {type: artifact, default: \"https://m.example/t.fwpkg\"}"));
  EXPECT_TRUE(hasField(e, "params.pkg.default", "expected an artifact")) << e;
}

// A stage step lists artifact params to fetch and runs nothing (issue 31).
TEST(WorkflowLoaderTest, AStageStepListsArtifactParamsAndRunsNothing) {
  const std::string base =
      "name: stage\nversion: \"1\"\nscope: host\nparams:\n"
      "  pkg: {type: artifact, default: \"\"}\n  image: {type: artifact, default: \"\"}\n"
      "  note: {type: string, default: \"\"}\nsteps:\n";
  auto r = loadWorkflow(base + "  - id: stage\n    type: stage\n    artifacts: [pkg, image]\n    timeout: 1h\n", "wf.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->steps[0].type, StepType::kStage);
  EXPECT_EQ(r->steps[0].artifacts, (std::vector<std::string>{"pkg", "image"}));
  EXPECT_TRUE(r->steps[0].run.empty());
  nlohmann::json j = toJson(*r);
  EXPECT_EQ(j["steps"][0]["type"], "stage");
  EXPECT_EQ(j["steps"][0]["artifacts"], (nlohmann::json{"pkg", "image"}));
  EXPECT_FALSE(j["steps"][0].contains("run"));

  struct Bad {
    std::string step, field, says;
  };
  for (const Bad& b : std::vector<Bad>{
           {"    type: stage\n    timeout: 1h\n", "steps[0].artifacts", "missing"},
           {"    type: stage\n    artifacts: []\n    timeout: 1h\n", "steps[0].artifacts", "non-empty list"},
           {"    type: stage\n    artifacts: [nope]\n    timeout: 1h\n", "steps[0].artifacts[0]", "unknown parameter"},
           {"    type: stage\n    artifacts: [note]\n    timeout: 1h\n", "steps[0].artifacts[0]", "has type string"},
           {"    type: stage\n    artifacts: [pkg, pkg]\n    timeout: 1h\n", "steps[0].artifacts[1]", "listed twice"},
           {"    type: stage\n    artifacts: [pkg]\n    run: [true]\n    timeout: 1h\n", "steps[0].run", "not allowed"},
           {"    run: [true]\n    artifacts: [pkg]\n    timeout: 1h\n", "steps[0].artifacts", "not allowed"}}) {
    Error e = errorsOf(base + "  - id: stage\n" + b.step);
    EXPECT_TRUE(hasField(e, b.field, b.says)) << b.step << "\n" << e;
  }
}

TEST(WorkflowLoaderTest, YamlSyntaxErrorHasAPosition) {
  Error e = errorsOf("name: x\nsteps: [\n");
  EXPECT_EQ(e.message.rfind("wf.yaml:", 0), 0u);
  EXPECT_NE(e.message.find("YAML syntax error"), std::string::npos) << e.message;
}

TEST(WorkflowLoaderTest, DuplicateYamlKeyIsAnError) {
  Error e = errorsOf(replaced(kValid, "version: \"1\"\n", "version: \"1\"\nversion: \"2\"\n"));
  EXPECT_TRUE(hasField(e, "version", "duplicate key")) << e;
}

TEST(WorkflowLoaderTest, DirectoryLoaderCollectsErrorsOfEveryFile) {
  auto dir = std::filesystem::path(testing::TempDir()) / "kiln-wf-dir-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.yaml") << replaced(kValid, "timeout: 10s", "timeout: fast");
  std::ofstream(dir / "b.yaml") << replaced(kValid, "scope: host", "scope: rack");
  std::ofstream(dir / "notes.txt") << "ignored";
  auto r = loadWorkflowDir(dir.string());
  ASSERT_FALSE(r.ok());
  const std::string& text = r.error().details.at("text");
  EXPECT_NE(text.find((dir / "a.yaml").string() + ":11:14: steps[0].timeout"), std::string::npos)
      << text;
  EXPECT_NE(text.find((dir / "b.yaml").string() + ":4:8: scope"), std::string::npos) << text;
  std::filesystem::remove(dir / "b.yaml");
  std::ofstream(dir / "a.yaml") << kValid;
  std::ofstream(dir / "c.yml") << kValid;  // the same workflow name twice
  auto dup = loadWorkflowDir(dir.string());
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("also defined in"), std::string::npos) << dup.error();
  std::filesystem::remove_all(dir);
}

// The workflows shipped in workflows/ must always load: a broken one would stop kilnd.
TEST(ShippedWorkflowsTest, AllLoadWithoutErrors) {
  auto r = loadWorkflowDir(KILN_WORKFLOWS_DIR);
  ASSERT_TRUE(r.ok()) << r.error().details["text"];
  std::vector<std::string> names;
  for (const auto& w : *r) names.push_back(w.name);
  EXPECT_EQ(names, (std::vector<std::string>{"artifact-stage", "firmware-upgrade", "l11-burn-in",
                                             "nvlink-domain-validation", "pre-job-health", "quarantine-validation",
                                             "rack-firmware", "switch-tray-firmware", "tray-bmc-firmware"}));
  for (const auto& w : *r) {
    EXPECT_FALSE(w.description.empty()) << w.name;
    for (const auto& p : w.params) EXPECT_FALSE(p.description.empty()) << w.name << " " << p.name;
  }
}

TEST(ShippedWorkflowsTest, PreJobHealthStepTimeoutsFitSlurmsSixtySeconds) {
  auto r = loadWorkflowFile(std::string(KILN_WORKFLOWS_DIR) + "/pre-job-health.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  std::chrono::milliseconds total{0};
  auto params = resolveParams(*r, {});
  ASSERT_TRUE(params.ok()) << params.error();
  for (const auto& s : r->steps) {
    auto t = resolveDuration(s.timeout, *params);
    ASSERT_TRUE(t.ok());
    total += t->value * (1 + s.retries.count);
  }
  // docs/FACTS.md: Slurm kills a HealthCheckProgram that runs over 60 s.
  EXPECT_LE(total, std::chrono::seconds(55));
}

TEST(ShippedWorkflowsTest, QuarantineValidationPassesTwiceASoakApart) {
  auto r = loadWorkflowFile(std::string(KILN_WORKFLOWS_DIR) + "/quarantine-validation.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  auto params = resolveParams(*r, {});
  ASSERT_TRUE(params.ok());
  EXPECT_EQ(*resolveInt(r->repeat, *params), 2);
  EXPECT_EQ(resolveDuration(r->soak_between, *params)->value, std::chrono::minutes(30));
}

// The shipped check paths against the documents agents/parsers/README.md gives as examples: a
// path that does not match the parsers' output would make every host fail (or pass) silently.
TEST(ShippedWorkflowsTest, PreJobHealthChecksReadTheParsersDocuments) {
  auto w = loadWorkflowFile(std::string(KILN_WORKFLOWS_DIR) + "/pre-job-health.yaml");
  ASSERT_TRUE(w.ok()) << w.error();
  auto params = resolveParams(*w, {{"expected_gpus", "1"}, {"expected_driver", "575.57.08"}});
  ASSERT_TRUE(params.ok());
  nlohmann::json smi = nlohmann::json::parse(R"({
    "driver_version": "575.57.08", "cuda_version": "12.9", "gpu_count": 1,
    "gpus": [{"index": 1, "uuid": "GPU-7a2e4b61", "vbios_version": "97.00.82.00.0E",
      "pcie": {"gen_max": 5, "gen_current": 3, "width_max": 16, "width_current": 8, "replay_counter": 0},
      "clock_event_reasons_active": ["sw_power_cap"],
      "ecc": {"mode": "Enabled", "volatile_correctable": 5, "volatile_uncorrectable": 2,
              "aggregate_correctable": 42, "aggregate_uncorrectable": 2},
      "remapped_rows": {"correctable": 0, "uncorrectable": 2, "pending": true, "failure": false},
      "fabric": {"state": "Completed", "status": "Success"},
      "recovery_action": "Reset"}]})");
  std::map<std::string, bool> passed;
  for (const auto& o : evaluateChecks(*w->findStep("gpu-state"), smi, {}, *params)) {
    passed[o.name] = o.passed;
    EXPECT_FALSE(o.skipped) << o.name;
  }
  EXPECT_TRUE(passed.at("GPU count"));
  EXPECT_FALSE(passed.at("no row remap pending"));
  EXPECT_TRUE(passed.at("no row remap failure"));
  EXPECT_FALSE(passed.at("no volatile uncorrectable ECC errors"));
  EXPECT_TRUE(passed.at("PCIe generation"));
  EXPECT_FALSE(passed.at("PCIe width"));
  EXPECT_TRUE(passed.at("no hardware slowdown or thermal throttling"));
  EXPECT_TRUE(passed.at("NVLink fabric registered"));
  EXPECT_FALSE(passed.at("no pending GPU recovery action"));
  EXPECT_TRUE(passed.at("driver version"));

  nlohmann::json diag = nlohmann::json::parse(R"({
    "dcgm_major": 4, "overall": "Fail",
    "tests": [{"name": "software", "category": "Deployment", "results": []}],
    "failed": [{"test": "software", "entity_group": "GPU", "entity_id": 1, "error_ids": [85]},
               {"test": "software", "entity_group": "GPU", "entity_id": 2, "error_ids": [85]}]})");
  auto d = evaluateChecks(*w->findStep("dcgm-diag"), diag, {}, *params);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_FALSE(d[0].passed);
  EXPECT_NE(d[0].message.find("(failed[*].test: software)"), std::string::npos) << d[0].message;
  EXPECT_TRUE(d[1].passed) << d[1].message;

  nlohmann::json before = nlohmann::json::parse(
      R"({"gpus": [{"gpu_id": 2, "links": [{"link": 7, "crc_flit": 12, "crc_data": 0, "replay": 3, "recovery": 1}]}]})");
  nlohmann::json after = before;
  after["gpus"][0]["links"][0]["crc_flit"] = 26;
  auto n = evaluateChecks(*w->findStep("nvlink-after-g2"), after, {{"nvlink-before-g2", before}},
                          *params);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_FALSE(n[0].passed);
  EXPECT_NE(n[0].message.find("gpu 2 link 7: crc_flit +14"), std::string::npos) << n[0].message;
}

TEST(ShippedWorkflowsTest, DriverCheckIsSkippedWhenNoDriverIsExpected) {
  auto w = loadWorkflowFile(std::string(KILN_WORKFLOWS_DIR) + "/pre-job-health.yaml");
  ASSERT_TRUE(w.ok());
  auto params = resolveParams(*w, {});
  ASSERT_TRUE(params.ok());
  auto outcomes = evaluateChecks(*w->findStep("gpu-state"), nlohmann::json::object(), {}, *params);
  EXPECT_TRUE(outcomes.back().skipped) << outcomes.back().name;
}

}  // namespace
}  // namespace kiln::workflow
