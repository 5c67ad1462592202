#include "tests/api/api_fixture.h"

#include "orchestrator/api/compress.h"
#include "tests/support/loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/process.hpp>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <fstream>
#include <mutex>

namespace kiln::apitest {
namespace {

// What the api tier received, checked against api/openapi.yaml when each test ends.
struct Received {
  std::string method, path, content_type, body;
  int status = 0;
};
// Tests call the API from several threads at once (KilndReplicasTest's concurrent writes): the
// list is guarded.
std::vector<Received>& received() {
  static std::vector<Received> all;
  return all;
}
std::mutex& receivedMu() {
  static std::mutex mu;
  return mu;
}

void remember(const std::string& method, const std::string& path, const Reply& r) {
  if (r.status == 0) return;
  std::string body = r.body;
  if (auto enc = r.headers.find("content-encoding"); enc != r.headers.end() && enc->second == "gzip") {
    auto plain = api::gunzip(r.body);
    EXPECT_TRUE(plain.has_value()) << method << " " << path << ": a gzip body that does not unpack";
    body = plain.value_or("");
  }
  std::lock_guard lock(receivedMu());
  received().push_back({method, path, r.content_type, std::move(body), r.status});
}

std::string currentTestName() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info ? std::string(info->test_suite_name()) + "." + info->name() : "";
}

}  // namespace

void checkResponsesAgainstContract() {
  std::vector<Received> batch;
  {
    std::lock_guard lock(receivedMu());
    batch.swap(received());
  }
  if (batch.empty()) return;
  const std::string dir = KILN_CONTRACT_DIR;
  const bool required = std::getenv("KILN_CONTRACT_REQUIRED") && std::string(std::getenv("KILN_CONTRACT_REQUIRED")) == "1";
  if (std::ifstream(dir + "/node_modules/ajv/package.json").fail() || boost::process::search_path("node").empty()) {
    if (required) ADD_FAILURE() << "cannot check responses against api/openapi.yaml: no node or no " << dir
                                << "/node_modules (deploy/lib/browser-deps.sh installs them)";
    return;
  }
  char path[] = "/tmp/kiln-api-responses-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::ofstream out(path);
    const std::string test = currentTestName();
    for (const auto& r : batch)
      out << json{{"test", test}, {"method", r.method}, {"path", r.path}, {"status", r.status},
                  {"content_type", r.content_type}, {"body", r.body}}
                 .dump(-1, ' ', false, json::error_handler_t::replace)
          << "\n";
  }
  namespace bp = boost::process;
  bp::ipstream out;
  bp::child node(bp::search_path("node"), dir + "/validate-responses.mjs", std::string(path), std::string(KILN_OPENAPI_DOC),
                 (bp::std_out & bp::std_err) > out);
  std::string report, line;
  while (std::getline(out, line)) report += line + "\n";
  node.wait();
  ::unlink(path);
  EXPECT_EQ(node.exit_code(), 0) << "responses that api/openapi.yaml does not allow:\n" << report;
}

json Reply::doc() const { return json::parse(body, nullptr, /*allow_exceptions=*/false); }

Reply call(http::Client& client, const std::string& method, const std::string& path, const std::string& body,
           const std::string& content_type, const std::map<std::string, std::string>& headers) {
  auto r = client.request(method, path, body, content_type, headers);
  if (!r.ok()) {
    ADD_FAILURE() << method << " " << path << ": " << r.error().message;
    return {};
  }
  Reply out{r->status, r->body, r->content_type, r->headers};
  remember(method, path, out);
  return out;
}

Reply rawCall(int port, const std::string& bytes, std::chrono::milliseconds timeout) {
  Reply out;
  const int fd = testing::connectLoopback(port);
  if (fd < 0) return out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto remaining = [&] {
    return static_cast<int>(std::max<std::int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
               .count()));
  };
  // Send and read at once: a server may answer (413) before it has read the whole body.
  std::size_t sent = 0;
  std::string in;
  bool can_send = true;
  for (;;) {
    pollfd p{fd, static_cast<short>(POLLIN | (can_send && sent < bytes.size() ? POLLOUT : 0)), 0};
    const int ms = remaining();
    if (ms == 0 || ::poll(&p, 1, ms) <= 0) break;
    if (p.revents & POLLOUT) {
      const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) can_send = false;
      else sent += static_cast<std::size_t>(n);
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, static_cast<std::size_t>(n));
      // Stop once a whole response with Content-Length is in (a HEAD answer has no body).
      const auto end = in.find("\r\n\r\n");
      if (end != std::string::npos && bytes.rfind("HEAD ", 0) == 0) break;
      if (end != std::string::npos) {
        std::string head = in.substr(0, end);
        for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const auto cl = head.find("content-length:");
        if (cl != std::string::npos) {
          const std::size_t len = std::strtoull(head.c_str() + cl + 15, nullptr, 10);
          if (in.size() >= end + 4 + len) break;
        }
      }
    }
  }
  ::close(fd);
  const auto end = in.find("\r\n\r\n");
  if (in.compare(0, 5, "HTTP/") != 0 || end == std::string::npos) return out;
  out.status = std::atoi(in.c_str() + in.find(' ') + 1);
  std::size_t pos = in.find("\r\n") + 2;
  while (pos < end) {
    const auto eol = in.find("\r\n", pos);
    const std::string line = in.substr(pos, eol - pos);
    const auto colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      out.headers[name] = value;
    }
    pos = eol + 2;
  }
  out.body = in.substr(end + 4);
  out.content_type = out.headers["content-type"];
  // The request line, for the contract check; bytes that are no request are not checked.
  const auto first = bytes.find("\r\n");
  const std::string request_line = bytes.substr(0, first);
  const auto sp1 = request_line.find(' '), sp2 = request_line.rfind(' ');
  const bool is_method = sp1 != std::string::npos && sp1 > 0 &&
                         std::all_of(request_line.begin(), request_line.begin() + static_cast<std::ptrdiff_t>(sp1),
                                     [](char c) { return c >= 'A' && c <= 'Z'; });
  if (is_method && sp2 > sp1 && out.headers.count("transfer-encoding") == 0)
    remember(request_line.substr(0, sp1), request_line.substr(sp1 + 1, sp2 - sp1 - 1), out);
  return out;
}

::testing::AssertionResult isError(const Reply& r, int status, const std::string& code) {
  if (r.status != status)
    return ::testing::AssertionFailure() << "status " << r.status << ", expected " << status << "; body: " << r.body;
  const json doc = r.doc();
  if (!doc.is_object() || !doc.contains("error") || !doc["error"].is_object())
    return ::testing::AssertionFailure() << "no {\"error\": {...}} body: " << r.body;
  const json& e = doc["error"];
  if (!e.contains("code") || e["code"] != code)
    return ::testing::AssertionFailure() << "error.code is not \"" << code << "\": " << r.body;
  if (!e.contains("message") || !e["message"].is_string() || e["message"].get<std::string>().empty())
    return ::testing::AssertionFailure() << "error.message is not a non-empty string: " << r.body;
  if (!e.contains("details") || !e["details"].is_object())
    return ::testing::AssertionFailure() << "error.details is not an object: " << r.body;
  return ::testing::AssertionSuccess();
}

const char* const kTwoStepsWorkflow = R"(name: two-steps
version: "1"
scope: host
steps:
  - id: first
    run: [nvidia-smi, -q, -x]
    timeout: 10m
  - id: second
    run: [nvidia-smi, -q, -x]
    timeout: 10m
)";

std::string isoUtc(std::time_t t) {
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json smallFleet(int pods) {
  json list = json::array();
  char name[32];
  for (int i = 1; i <= pods; ++i) {
    std::snprintf(name, sizeof name, "t01-b01-p%04d", i);
    list.push_back({{"name", name},
                    {"platform", i % 2 ? "catalina" : "clemente"},
                    {"labels", {{"row", i % 2 ? "a" : "b"}}}});
  }
  return {{"versions", {{"driver", "570.133.20"}}},
          {"sites", {{{"name", "t01"}, {"buildings", {{{"name", "t01-b01"}, {"pods", list}}}}}}}};
}

void ApiTest::SetUp() {
  db_ = std::make_unique<testing::TestDatabase>();
  kilnd_ = std::make_unique<testing::KilndProcess>(
      testing::KilndOptions{.database_url = db_->url(), .extra_args = extraKilndArgs()});
  auto started = kilnd_->start();
  ASSERT_TRUE(started.ok()) << started.error().message;
  ASSERT_FALSE(kilnd_->adminToken().empty());
  admin_ = client(kilnd_->adminToken());
}

void ApiTest::TearDown() {
  checkResponsesAgainstContract();
  admin_.reset();
  kilnd_.reset();  // stops kilnd before its database goes
  db_.reset();
}

std::unique_ptr<http::Client> ApiTest::client(const std::string& token) const {
  return std::make_unique<http::Client>(http::ClientOptions{.base_url = kilnd_->url(), .token = token});
}

std::string ApiTest::createToken(const std::string& role, const std::string& name, std::string* id) {
  Reply r = call(*admin_, "POST", "/api/v1/tokens", json{{"role", role}, {"name", name}}.dump());
  EXPECT_EQ(r.status, 201) << r.body;
  const json doc = r.doc();
  if (!doc.is_object() || !doc.contains("token")) return "";
  if (id) *id = doc["id"].get<std::string>();
  return doc["token"].get<std::string>();
}

json ApiTest::importFleet(const json& fleet) {
  Reply r = call(*admin_, "POST", "/api/v1/fleet/import", fleet.dump());
  EXPECT_TRUE(r.status == 200 || r.status == 201) << r.status << " " << r.body.substr(0, 2000);
  return r.doc();
}

std::vector<std::string> ApiTest::podHosts(const std::string& pod) {
  Reply r = call(*admin_, "GET", "/api/v1/pods/" + pod);
  EXPECT_EQ(r.status, 200) << r.body;
  const json doc = r.doc();  // (a range-for over r.doc()["hosts"] would outlive the document)
  std::vector<std::string> out;
  if (doc.is_object() && doc.contains("hosts"))
    for (const auto& h : doc["hosts"]) out.push_back(h.value("id", ""));
  return out;
}

}  // namespace kiln::apitest
