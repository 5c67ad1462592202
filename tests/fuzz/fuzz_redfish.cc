// What a BMC answers kiln-oob over Redfish (agents/oob/redfish_power.h), and what a client sends (multipart pushes included)
// kiln-hwsim's simulated BMC (agents/sim/redfish_bmc.h), from any bytes (issue 32).
// Properties: never throws; a link kiln-oob would follow stays a Redfish path on the same BMC;
// the simulator answers every request with a status and a body that serialises.

#include "agents/oob/redfish_power.h"
#include "agents/sim/redfish_bmc.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string body(kiln::fuzz::text(data, size));
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_discarded()) {
    (void)kiln::oob::parseRedfishPowerState(doc);
    if (auto r = kiln::oob::resetAction(doc); r.ok())
      KILN_FUZZ_EXPECT(kiln::oob::safeRedfishPath(r->first) && r->first.rfind("/redfish/v1", 0) == 0, r->first);
    if (auto m = kiln::oob::redfishMembers(doc, "fuzz"); m.ok())
      for (const auto& p : *m) KILN_FUZZ_EXPECT(kiln::oob::safeRedfishPath(p) && p.find("..") == std::string::npos, p);
  }
  // The same bytes as a multipart body, its boundary taken from the first bytes.
  (void)kiln::sim::multipartParts("multipart/form-data; boundary=" + body.substr(0, 8), body);
  // The same bytes as the body (and, cut short, the path) of requests to the simulated BMC.
  kiln::sim::BmcConfig config;
  config.user = "kiln";
  config.password = "pw";
  kiln::sim::RedfishBmc bmc(config);
  const auto now = kiln::sim::RedfishBmc::Clock::now();
  const std::string basic = "Basic a2lsbjpwdw==";  // kiln:pw
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"POST", "/redfish/v1/Systems/System_0/Actions/ComputerSystem.Reset"},
           {"POST", "/redfish/v1/SessionService/Sessions"},
           {"POST", "/redfish/v1/UpdateService/update-multipart"},
           {"GET", "/redfish/v1/" + body.substr(0, 64)},
           {"DELETE", "/redfish/v1/SessionService/Sessions/" + body.substr(0, 16)}}) {
    kiln::sim::BmcRequest r{method, path, {{"authorization", basic}, {"x-auth-token", body.substr(0, 40)}}, body};
    auto out = bmc.handle(r, now);
    KILN_FUZZ_EXPECT(out.status >= 200 && out.status < 600, std::to_string(out.status));
    (void)kiln::fuzz::dumpOrDie(out.body, false);
  }
  return 0;
}
