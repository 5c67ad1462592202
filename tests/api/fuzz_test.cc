// No input makes kilnd crash or answer 5xx: seeded random and hostile bodies into every POST
// endpoint over raw sockets, then kilnd must still be alive and healthy.

#include <random>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

struct Target {
  std::string path;
  std::string content_type;
};

std::string hexPreview(const std::string& s) {
  std::string out;
  char buf[8];
  for (std::size_t i = 0; i < s.size() && i < 80; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') out += static_cast<char>(c);
    else {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > 80) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

class FuzzTest : public ApiTest {
 protected:
  Reply post(const Target& t, const std::string& body) {
    return rawCall(kilnd_->port(), "POST " + t.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                                       kilnd_->adminToken() + "\r\nContent-Type: " + t.content_type +
                                       "\r\nContent-Length: " + std::to_string(body.size()) +
                                       "\r\nConnection: close\r\n\r\n" + body,
                   std::chrono::milliseconds(30000));
  }

  // Every input must get an answer below 500; a failure names the input.
  void expectHandled(const Target& t, const std::string& body, const std::string& what) {
    Reply r = post(t, body);
    EXPECT_GT(r.status, 0) << what << " -> no answer; POST " << t.path << " " << t.content_type << ": "
                           << hexPreview(body);
    EXPECT_LT(r.status, 500) << what << " -> " << r.status << " " << r.body.substr(0, 300) << "; POST " << t.path
                             << " " << t.content_type << ": " << hexPreview(body);
    ++sent_;
  }

  std::vector<Target> targets() const {
    return {{"/api/v1/fleet/import", "application/json"},
            {"/api/v1/fleet/import", "application/yaml"},
            {"/api/v1/hosts/t01-b01-p0001-h01/actions", "application/json"},
            {"/api/v1/tokens", "application/json"}};
  }
  int sent_ = 0;
};

TEST_F(FuzzTest, HostileBodiesNeverCrashKilnd) {
  importFleet(smallFleet(1));
  const std::uint32_t seed = 20260;  // fixed: a failure reproduces
  std::mt19937 rng(seed);
  const std::string valid_fleet = smallFleet(2).dump();
  const std::string valid_yaml =
      "sites:\n  - name: f01\n    buildings:\n      - name: f01-b01\n        pods:\n"
      "          - {name: f01-b01-p0001, platform: clemente, labels: {row: a}}\n";
  const std::string valid_action = R"({"action":"drain","reason":"fuzz"})";
  const std::string valid_token = R"({"role":"viewer","name":"fuzz"})";

  std::vector<std::pair<std::string, std::string>> fixed = {
      {"deep arrays", std::string(100000, '[') + std::string(100000, ']')},
      {"deep arrays, unclosed", std::string(200000, '[')},
      {"deep objects", [] {
         std::string s;
         for (int i = 0; i < 50000; ++i) s += "{\"a\":";
         s += "1";
         s += std::string(50000, '}');
         return s;
       }()},
      {"deep yaml flow", std::string(5000, '[') + std::string(5000, ']')},
      {"deep yaml block", [] {
         std::string s;
         for (int i = 0; i < 3000; ++i) s += std::string(static_cast<std::size_t>(i), ' ') + "- \n";
         return s;
       }()},
      {"yaml anchors bomb", "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                            "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                            "sites: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"},
      {"huge number", R"({"action": 1e999999, "sites": 1e999999, "role": 1e999999})"},
      {"huge integer", R"({"action": 123456789012345678901234567890123456789, "name": -99999999999999999999999})"},
      {"huge integer in fleet", R"({"sites":[{"name":"s","buildings":[{"name":"b","pods":[{"name":)"
                                R"(123456789012345678901234567890,"platform":1e400}]}]}]})"},
      {"number as version", R"({"versions":{"driver":1e308},"sites":[]})"},
      {"invalid utf-8 in strings", "{\"action\":\"drain\",\"reason\":\"\xff\xfe\xc3\x28\",\"name\":\"\xed\xa0\x80\","
                                   "\"role\":\"viewer\"}"},
      {"invalid utf-8 in keys", "{\"\xff\xff\":1,\"sites\":[{\"name\":\"\xc3\x28\",\"buildings\":[]}]}"},
      {"invalid utf-8 in a fleet",
       "sites:\n  - name: \"\xff\xfe\"\n    buildings:\n      - name: \"b\xc3\x28\"\n        pods:\n"
       "          - {name: \"p\xe2\x82\", platform: \"clemente\xff\", labels: {\"\xff\": \"\xfe\"}}\n"},
      {"nul bytes", std::string("{\"action\":\"dr\0ain\",\"reason\":\"a\0b\",\"name\":\"x\0y\",\"role\":\"viewer\"}", 60)},
      {"nul in yaml", std::string("sites:\n  - name: a\0b\n", 20)},
      {"null body", "null"},
      {"empty object", "{}"},
      {"string", "\"just a string\""},
      {"long string", "{\"reason\":\"" + std::string(900000, 'x') + "\",\"action\":\"drain\"}"},
      {"many keys", [] {
         std::string s = "{";
         for (int i = 0; i < 50000; ++i) s += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
         s += "\"z\":0}";
         return s;
       }()},
      {"many bad pods", [] {
         std::string s = R"({"sites":[{"name":"s1","buildings":[{"name":"s1-b1","pods":[)";
         for (int i = 0; i < 20000; ++i) s += std::string(i ? "," : "") + R"({"name":"BAD NAME","platform":"x"})";
         return s + "]}]}]}";
       }()},
      {"duplicate pods", R"({"sites":[{"name":"d1","buildings":[{"name":"d1-b1","pods":[)"
                         R"({"name":"d1-b1-p1","platform":"clemente"},{"name":"d1-b1-p1","platform":"catalina"}]}]}]})"},
      {"lone surrogate escape", R"({"action":"drain","reason":"\ud800","name":"\udfff","role":"viewer"})"},
      {"bom", "\xef\xbb\xbf" + valid_action},
      {"yaml tags", "!!binary sites: !!python/object:os.system [\"rm\"]\n"},
      {"yaml document markers", "---\n...\n---\nsites: []\n...\n"},
  };

  for (const auto& t : targets())
    for (const auto& [what, body] : fixed) expectHandled(t, body, what);

  // Random bytes and mutations of valid documents.
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 4096);
  for (int i = 0; i < 60; ++i) {
    std::string junk(static_cast<std::size_t>(length(rng)), '\0');
    for (auto& c : junk) c = static_cast<char>(byte(rng));
    for (const auto& t : targets()) expectHandled(t, junk, "random bytes #" + std::to_string(i));
  }
  for (int i = 0; i < 60; ++i) {
    for (const auto& t : targets()) {
      std::string doc = t.path.find("import") != std::string::npos
                            ? (t.content_type == "application/yaml" ? valid_yaml : valid_fleet)
                            : (t.path.find("tokens") != std::string::npos ? valid_token : valid_action);
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int f = 0; f < flips && !doc.empty(); ++f) {
        const std::size_t at = rng() % doc.size();
        switch (rng() % 3) {
          case 0: doc[at] = static_cast<char>(byte(rng)); break;
          case 1: doc.erase(at, 1 + rng() % 8); break;
          default: doc.insert(at, std::string(1 + rng() % 4, "{}[]\":,\\\xff"[rng() % 10])); break;
        }
      }
      expectHandled(t, doc, "mutation #" + std::to_string(i));
    }
  }

  // Requests that are not HTTP the way a client would send it.
  for (const std::string& junk : std::vector<std::string>{std::string("GARBAGE\r\n\r\n"), std::string("POST / HTTP/9.9\r\n\r\n"),
                                 std::string("POST /api/v1/tokens HTTP/1.1\r\nContent-Length: -5\r\n\r\n"),
                                 std::string("POST /api/v1/tokens HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"),
                                 std::string("GET /api/v1/%ff%00%2e%2e/pods?%zz=1&limit=%ff HTTP/1.1\r\nConnection: close\r\n\r\n"),
                                 std::string(70000, 'A') + "\r\n\r\n"}) {
    Reply r = rawCall(kilnd_->port(), junk, std::chrono::milliseconds(5000));
    EXPECT_LT(r.status, 500) << hexPreview(junk) << " -> " << r.body.substr(0, 200);
  }

  ASSERT_TRUE(kilnd_->running()) << "kilnd died; seed " << seed;
  auto anyone = client("");
  EXPECT_EQ(call(*anyone, "GET", "/healthz").status, 200);
  EXPECT_EQ(call(*admin_, "GET", "/api/v1/pods/t01-b01-p0001").status, 200);
  std::printf("%d hostile requests (seed %u), kilnd still healthy\n", sent_, seed);
}

}  // namespace
}  // namespace kiln::apitest
