#include "tests/api/api_fixture.h"

#include "tests/support/loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

namespace kiln::apitest {

json Reply::doc() const { return json::parse(body, nullptr, /*allow_exceptions=*/false); }

Reply call(http::Client& client, const std::string& method, const std::string& path, const std::string& body,
           const std::string& content_type) {
  auto r = client.request(method, path, body, content_type);
  if (!r.ok()) {
    ADD_FAILURE() << method << " " << path << ": " << r.error().message;
    return {};
  }
  return {r->status, r->body, r->content_type, r->headers};
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
      // Stop once a whole response with Content-Length is in.
      const auto end = in.find("\r\n\r\n");
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

}  // namespace kiln::apitest
