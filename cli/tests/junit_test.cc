// The JUnit writer: escaping, and the report of a passed and a failed run, read back with an XML
// parser (Boost.PropertyTree) so a malformed document fails the test.

#include <gtest/gtest.h>

#include <sstream>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include "cli/junit.h"
#include "cli/tests/run_fixtures.h"

namespace kiln::cli {
namespace {

namespace pt = boost::property_tree;
using namespace testing;

pt::ptree parseXml(const std::string& xml) {
  std::istringstream in(xml);
  pt::ptree tree;
  pt::read_xml(in, tree);  // throws on malformed XML
  return tree;
}

const pt::ptree& suite(const pt::ptree& doc) { return doc.get_child("testsuites.testsuite"); }

// The <testcase> with this classname and name, or nullptr.
const pt::ptree* testCase(const pt::ptree& s, const std::string& host, const std::string& name) {
  for (const auto& [tag, child] : s)
    if (tag == "testcase" && child.get("<xmlattr>.classname", "") == host && child.get("<xmlattr>.name", "") == name)
      return &child;
  return nullptr;
}

TEST(XmlEscapeTest, EscapesMarkupCharacters) {
  EXPECT_EQ(xmlEscape("a<b & c>\"d\" 'e'"), "a&lt;b &amp; c&gt;&quot;d&quot; &apos;e&apos;");
}

TEST(XmlEscapeTest, ReplacesControlCharactersXmlForbids) {
  EXPECT_EQ(xmlEscape(std::string("a\x01" "b\x1b[0m\x7f", 8)), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD[0m\x7f");
  EXPECT_EQ(xmlEscape(std::string("nul\0!", 5)), "nul\xEF\xBF\xBD!");
}

TEST(XmlEscapeTest, KeepsWhitespaceInTextAndEncodesItInAttributes) {
  EXPECT_EQ(xmlEscape("a\tb\nc\r"), "a\tb\nc\r");
  EXPECT_EQ(xmlEscape("a\tb\nc\r", /*attribute=*/true), "a&#9;b&#10;c&#13;");
}

TEST(XmlEscapeTest, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(xmlEscape("\xC2\xB5s \xE6\xBC\xA2 \xF0\x9F\x94\xA5"), "\xC2\xB5s \xE6\xBC\xA2 \xF0\x9F\x94\xA5");
  EXPECT_EQ(xmlEscape("bad\xFF" "cut\xE6\xBC"), "bad\xEF\xBF\xBD" "cut\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(xmlEscape("overlong\xC0\xAF"), "overlong\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(xmlEscape("surrogate\xED\xA0\x80"), "surrogate\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(xmlEscape("nonchar\xEF\xBF\xBE"), "nonchar\xEF\xBF\xBD");
}

TEST(JunitReportTest, PassedRunHasACasePerHostAndStepAndNoFailures) {
  const std::string xml = junitReport(passedRun());
  const pt::ptree doc = parseXml(xml);
  const pt::ptree& s = suite(doc);
  EXPECT_EQ(s.get<std::string>("<xmlattr>.name"), "l11-burn-in run-7");
  EXPECT_EQ(s.get<int>("<xmlattr>.tests"), 8);  // 2 hosts x (3 steps + verdict)
  EXPECT_EQ(s.get<int>("<xmlattr>.failures"), 0);
  EXPECT_EQ(s.get<int>("<xmlattr>.errors"), 0);
  EXPECT_EQ(s.get<int>("<xmlattr>.skipped"), 0);
  EXPECT_EQ(s.get<std::string>("<xmlattr>.time"), "95.000");
  EXPECT_EQ(s.get<std::string>("<xmlattr>.timestamp"), "2026-01-01T00:00:00");
  const pt::ptree* diag = testCase(s, kH1, "dcgm-diag");
  ASSERT_NE(diag, nullptr);
  EXPECT_EQ(diag->get<std::string>("<xmlattr>.time"), "60.000");
  EXPECT_FALSE(diag->get_child_optional("failure"));
  const pt::ptree* links = testCase(s, kH2, "nvlink-after-g0");
  ASSERT_NE(links, nullptr);
  EXPECT_EQ(links->get<std::string>("system-out"), "links ok\n");
  const pt::ptree* verdict = testCase(s, kH2, kVerdictTestName);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->get<std::string>("<xmlattr>.time"), "61.800");
  EXPECT_FALSE(verdict->get_child_optional("failure"));
  EXPECT_EQ(doc.get<int>("testsuites.<xmlattr>.tests"), 8);
}

TEST(JunitReportTest, FailedCheckBecomesAFailureWithTheCheckAndTheOutputTail) {
  const pt::ptree doc = parseXml(junitReport(failedRun()));
  const pt::ptree& s = suite(doc);
  EXPECT_EQ(s.get<int>("<xmlattr>.tests"), 8);
  EXPECT_EQ(s.get<int>("<xmlattr>.failures"), 2);  // h02's step and h02's verdict
  EXPECT_EQ(s.get<int>("<xmlattr>.skipped"), 1);   // h02's dcgm-diag
  const pt::ptree* links = testCase(s, kH2, "nvlink-after-g0");
  ASSERT_NE(links, nullptr);
  EXPECT_EQ(links->get<std::string>("failure.<xmlattr>.message"), kLinkFailure);
  const std::string body = links->get<std::string>("failure");
  EXPECT_NE(body.find("check failed: NVLink error counters did not grow: gpu 2 link 7: crc_flit +14"), std::string::npos)
      << body;
  EXPECT_EQ(links->get<std::string>("system-out"), "gpu 2 link 7 crc_flit 14 <&>\n");  // escaped, read back intact
  EXPECT_EQ(links->get<std::string>("<xmlattr>.time"), "1.500");
  const pt::ptree* skipped = testCase(s, kH2, "dcgm-diag");
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->get<std::string>("skipped.<xmlattr>.message"), "condition is false");
  const pt::ptree* verdict = testCase(s, kH2, kVerdictTestName);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->get<std::string>("failure.<xmlattr>.message"), std::string("nvlink-after-g0: ") + kLinkFailure);
  const pt::ptree* healthy = testCase(s, kH1, kVerdictTestName);
  ASSERT_NE(healthy, nullptr);
  EXPECT_FALSE(healthy->get_child_optional("failure"));
  EXPECT_FALSE(testCase(s, kH1, "nvlink-after-g0")->get_child_optional("failure"));
}

TEST(JunitReportTest, UnfinishedHostsAreErrorsAndUnreachedStepsSkipped) {
  const pt::ptree doc = parseXml(junitReport(runningRun(), "the gate stopped waiting after 3h"));
  const pt::ptree& s = suite(doc);
  EXPECT_EQ(s.get<int>("<xmlattr>.errors"), 2);
  EXPECT_EQ(s.get<int>("<xmlattr>.skipped"), 4);  // dcgm-diag (running) and nvlink-after-g0 (not reached), per host
  const pt::ptree* verdict = testCase(s, kH1, kVerdictTestName);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->get<std::string>("error.<xmlattr>.message"),
            "not finished (running, at step dcgm-diag): the gate stopped waiting after 3h");
  EXPECT_EQ(testCase(s, kH1, "dcgm-diag")->get<std::string>("skipped.<xmlattr>.message"),
            "running when the report was written");
  EXPECT_EQ(testCase(s, kH1, "nvlink-after-g0")->get<std::string>("skipped.<xmlattr>.message"), "not reached yet");
  bool noted = false;
  for (const auto& [tag, p] : s.get_child("properties"))
    noted |= p.get("<xmlattr>.name", "") == "note" && p.get("<xmlattr>.value", "") == "the gate stopped waiting after 3h";
  EXPECT_TRUE(noted);
}

TEST(JunitReportTest, HostileTextStaysWellFormedAndReadsBackTheSame) {
  json run = failedRun();
  const std::string hostile = "a<b>&c\"d'e\x01\x1b[31m\nline2\tend";
  run["hosts"][1]["steps"][2]["message"] = hostile;
  run["hosts"][1]["steps"][2]["stdout_tail"] = hostile;
  run["hosts"][1]["host"] = "h<&>\"";
  run["params"]["x"] = "]]><!--";
  const pt::ptree doc = parseXml(junitReport(run));
  const pt::ptree* links = testCase(suite(doc), "h<&>\"", "nvlink-after-g0");
  ASSERT_NE(links, nullptr);
  const std::string readable = "a<b>&c\"d'e\xEF\xBF\xBD\xEF\xBF\xBD[31m\nline2\tend";
  EXPECT_EQ(links->get<std::string>("failure.<xmlattr>.message"), readable);
  EXPECT_EQ(links->get<std::string>("system-out"), readable);
}

TEST(JunitReportTest, RepeatedPassesNameTheirPass) {
  json run = passedRun();
  json second = run["hosts"][0]["steps"][0];
  second["pass"] = 2;
  run["hosts"][0]["steps"].push_back(second);
  run["hosts"][0]["pass"] = 2;
  const pt::ptree doc = parseXml(junitReport(run));
  const pt::ptree& s = suite(doc);
  EXPECT_NE(testCase(s, kH1, "gpu-state (pass 1)"), nullptr);
  EXPECT_NE(testCase(s, kH1, "gpu-state (pass 2)"), nullptr);
  EXPECT_EQ(testCase(s, kH1, "dcgm-diag (pass 2)")->get<std::string>("skipped.<xmlattr>.message"), "not run");
  EXPECT_EQ(testCase(s, kH1, "gpu-state"), nullptr);
}

}  // namespace
}  // namespace kiln::cli
