#pragma once
// Shared by the api tier: a fresh database and a real kilnd per test, clients with tokens of
// each role, a raw-socket HTTP call for what the client cannot send (chunked bodies, bodies
// that lie about their length), and assertions on the error body of docs/DESIGN.md.

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "orchestrator/http/client.h"
#include "tests/support/kilnd_process.h"
#include "tests/support/test_db.h"

namespace kiln::apitest {

using nlohmann::json;

// A response; status 0 when the transport failed (the failure is already reported).
struct Reply {
  int status = 0;
  std::string body;
  std::string content_type;
  std::map<std::string, std::string> headers;  // lower-case names
  json doc() const;                            // body as JSON, null when it is not JSON
};

Reply call(http::Client& client, const std::string& method, const std::string& path,
           const std::string& body = "", const std::string& content_type = "application/json",
           const std::map<std::string, std::string>& headers = {});

// Sends `bytes` as they are on a fresh connection to 127.0.0.1:port and reads the response
// until the server closes or its Content-Length is complete. Status 0 when nothing came back.
Reply rawCall(int port, const std::string& bytes,
              std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));

// Checks every response call() and rawCall() received since the last check against
// api/openapi.yaml (tests/contract/validate-responses.mjs: the status is one the operation
// documents, the JSON body matches its schema); a mismatch fails the current test. ApiTest
// runs it in TearDown. Needs node and tests/contract/node_modules; without them the check is
// skipped, or fails when KILN_CONTRACT_REQUIRED=1 (deploy/test.sh sets it).
void checkResponsesAgainstContract();

// The docs/DESIGN.md error body: {"error": {"code", "message", "details"}} with the given status
// and code; message a non-empty string, details an object.
::testing::AssertionResult isError(const Reply& r, int status, const std::string& code);

// A host-scoped workflow "two-steps" of two nvidia-smi steps (PUT /workflows/two-steps).
extern const char* const kTwoStepsWorkflow;

// `t` as ISO-8601 UTC to the second ("2026-12-05T21:00:00Z"), as the API takes times.
std::string isoUtc(std::time_t t);

// A small fleet: `pods` pods alternating catalina/clemente in building "t01-b01" of site
// "t01", pod ids "t01-b01-p0001"...; labels row=a for odd pods, row=b for even ones.
json smallFleet(int pods);

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Flags a test class adds to kilnd's command line.
  virtual std::vector<std::string> extraKilndArgs() const { return {}; }
  std::unique_ptr<http::Client> client(const std::string& token) const;
  // Creates a token of `role` through the admin client and returns its secret; `id` receives
  // its id when given.
  std::string createToken(const std::string& role, const std::string& name, std::string* id = nullptr);
  // Imports `fleet` as JSON through the admin client; asserts 200 or 201.
  json importFleet(const json& fleet);
  // The host ids of a pod, in its order (GET /pods/{id}); a failed read fails the test.
  std::vector<std::string> podHosts(const std::string& pod);

  std::unique_ptr<testing::TestDatabase> db_;
  std::unique_ptr<testing::KilndProcess> kilnd_;
  std::unique_ptr<http::Client> admin_;
};

}  // namespace kiln::apitest
