#include "agents/sim/redfish_bmc.h"

#include <random>

namespace kiln::sim {
namespace {

using nlohmann::json;

const std::vector<std::string> kResetTypes = {"On",           "ForceOff",        "GracefulShutdown",
                                              "ForceRestart", "GracefulRestart", "PowerCycle"};

json link(const std::string& id) {
  return json{{"@odata.id", id}};
}

json collection(const std::string& id, const std::string& type, const std::string& name,
                const std::vector<std::string>& members) {
  json m = json::array();
  for (const auto& x : members) m.push_back(link(x));
  return json{{"@odata.id", id},
              {"@odata.type", "#" + type + "." + type},
              {"Name", name},
              {"Members@odata.count", members.size()},
              {"Members", m}};
}

std::string decodeBase64(const std::string& in) {
  static const std::string chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -8;
  for (unsigned char c : in) {
    if (c == '=') break;
    const auto p = chars.find(static_cast<char>(c));
    if (p == std::string::npos) return "";
    val = (val << 6) + static_cast<int>(p);
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((val >> bits) & 0xFF));
      bits -= 8;
    }
  }
  return out;
}

std::string newToken() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string t;
  for (int i = 0; i < 32; ++i) t += hex[rng() % 16];
  return t;
}

}  // namespace

json redfishError(const std::string& message_id, const std::string& message) {
  return json{{"error",
               {{"code", "Base.1.8." + message_id},
                {"message", message},
                {"@Message.ExtendedInfo",
                 json::array({json{{"MessageId", "Base.1.8." + message_id}, {"Message", message}}})}}}};
}

RedfishBmc::RedfishBmc(BmcConfig config) : config_(std::move(config)) {}

bool RedfishBmc::poweredOn(Clock::time_point now) const {
  if (cycling_) return now >= on_again_;
  return on_;
}

bool RedfishBmc::authorized(const BmcRequest& r) const {
  if (auto t = r.headers.find("x-auth-token"); t != r.headers.end())
    for (const auto& [_, token] : sessions_)
      if (token == t->second) return true;
  if (auto a = r.headers.find("authorization"); a != r.headers.end() && a->second.rfind("Basic ", 0) == 0)
    return decodeBase64(a->second.substr(6)) == config_.user + ":" + config_.password;
  return false;
}

BmcResponse RedfishBmc::reset(const BmcRequest& r, Clock::time_point now) {
  json body = json::parse(r.body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("ResetType") || !body["ResetType"].is_string())
    return {400,
            redfishError("PropertyMissing",
                         "The property ResetType is a required property and must be included in the request."),
            {}};
  const std::string type = body["ResetType"];
  if (std::find(kResetTypes.begin(), kResetTypes.end(), type) == kResetTypes.end())
    return {
        400,
        redfishError("ActionParameterNotSupported", "The parameter ResetType does not accept the value " + type + "."),
        {}};
  power_log_.push_back(type);
  if (config_.faults.count("reset-ignored")) return {204, nullptr, {}};
  const bool was_on = poweredOn(now);
  cycling_ = false;
  if (type == "On")
    on_ = true;
  else if (type == "ForceOff" || type == "GracefulShutdown")
    on_ = false;
  else if (type == "PowerCycle" || ((type == "ForceRestart" || type == "GracefulRestart") && was_on)) {
    cycling_ = true;
    on_ = true;
    on_again_ = now + config_.cycle_off;
  }
  return {204, nullptr, {}};
}

BmcResponse RedfishBmc::handle(const BmcRequest& r, Clock::time_point now) {
  std::string path = r.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (cycling_ && now >= on_again_) {
    cycling_ = false;
    on_ = true;
  }
  if (path == "/redfish") return {200, json{{"v1", "/redfish/v1/"}}, {}};
  if (path == "/redfish/v1") {
    if (r.method != "GET") return {405, redfishError("ActionNotSupported", "The service root is read only."), {}};
    return {200,
            json{{"@odata.id", "/redfish/v1/"},
                 {"@odata.type", "#ServiceRoot.v1_5_0.ServiceRoot"},
                 {"Id", "RootService"},
                 {"Name", "Root Service"},
                 {"RedfishVersion", "1.8.0"},
                 {"UUID", "92384634-2938-2342-8820-489239905423"},
                 {"Systems", link("/redfish/v1/Systems")},
                 {"Chassis", link("/redfish/v1/Chassis")},
                 {"Managers", link("/redfish/v1/Managers")},
                 {"UpdateService", link("/redfish/v1/UpdateService")},
                 {"SessionService", link("/redfish/v1/SessionService")},
                 {"Links", {{"Sessions", link("/redfish/v1/SessionService/Sessions")}}}},
            {}};
  }
  // A session is made with the user's password in the body, without other authentication.
  if (path == "/redfish/v1/SessionService/Sessions" && r.method == "POST") {
    json body = json::parse(r.body, nullptr, false);
    if (body.is_discarded() || !body.is_object() || !body.value("UserName", json()).is_string() ||
        !body.value("Password", json()).is_string())
      return {400, redfishError("PropertyMissing", "UserName and Password are required."), {}};
    if (body["UserName"] != config_.user || body["Password"] != config_.password)
      return {401, redfishError("NoValidSession", "Invalid user name or password."), {}};
    const std::string id = std::to_string(next_session_++), token = newToken();
    sessions_[id] = token;
    const std::string at = "/redfish/v1/SessionService/Sessions/" + id;
    return {201,
            json{{"@odata.id", at},
                 {"@odata.type", "#Session.v1_3_0.Session"},
                 {"Id", id},
                 {"Name", "User Session"},
                 {"UserName", config_.user}},
            {{"X-Auth-Token", token}, {"Location", at}}};
  }
  if (!authorized(r))
    return {401,
            redfishError("NoValidSession", "There is no valid session established with the implementation."),
            {{"WWW-Authenticate", "Basic realm=\"kiln-hwsim BMC\""}}};

  const bool get = r.method == "GET";
  auto readOnly = [&]() -> BmcResponse {
    return {
        405, redfishError("ActionNotSupported", "The resource does not support " + r.method + "."), {{"Allow", "GET"}}};
  };
  const std::string power = poweredOn(now) ? "On" : "Off";
  if (path == "/redfish/v1/Systems")
    return get ? BmcResponse{200,
                             collection(path, "ComputerSystemCollection", "Computer System Collection",
                                        {"/redfish/v1/Systems/System_0"}),
                             {}}
               : readOnly();
  if (path == "/redfish/v1/Systems/System_0") {
    if (!get) return readOnly();
    return {200,
            json{{"@odata.id", path},
                 {"@odata.type", "#ComputerSystem.v1_13_0.ComputerSystem"},
                 {"Id", "System_0"},
                 {"Name", "GB200 compute tray " + config_.tray},
                 {"SystemType", "Physical"},
                 {"PowerState", power},
                 {"Status", {{"State", power == "On" ? "Enabled" : "StandbyOffline"}, {"Health", "OK"}}},
                 {"Actions",
                  {{"#ComputerSystem.Reset",
                    {{"target", "/redfish/v1/Systems/System_0/Actions/ComputerSystem.Reset"},
                     {"ResetType@Redfish.AllowableValues", kResetTypes}}}}}},
            {}};
  }
  if (path == "/redfish/v1/Systems/System_0/Actions/ComputerSystem.Reset") {
    if (r.method != "POST") return {405, redfishError("ActionNotSupported", "Use POST."), {{"Allow", "POST"}}};
    return reset(r, now);
  }
  if (path == "/redfish/v1/Chassis")
    return get ? BmcResponse{200,
                             collection(path, "ChassisCollection", "Chassis Collection",
                                        {"/redfish/v1/Chassis/Chassis_0"}),
                             {}}
               : readOnly();
  if (path == "/redfish/v1/Chassis/Chassis_0")
    return get ? BmcResponse{200,
                             json{{"@odata.id", path},
                                  {"@odata.type", "#Chassis.v1_15_0.Chassis"},
                                  {"Id", "Chassis_0"},
                                  {"Name", "Compute tray " + config_.tray},
                                  {"ChassisType", "RackMount"},
                                  {"PowerState", power}},
                             {}}
               : readOnly();
  if (path == "/redfish/v1/Managers")
    return get ? BmcResponse{200,
                             collection(path, "ManagerCollection", "Manager Collection",
                                        {"/redfish/v1/Managers/BMC_0"}),
                             {}}
               : readOnly();
  if (path == "/redfish/v1/Managers/BMC_0")
    return get ? BmcResponse{200,
                             json{{"@odata.id", path},
                                  {"@odata.type", "#Manager.v1_10_0.Manager"},
                                  {"Id", "BMC_0"},
                                  {"Name", "Tray BMC"},
                                  {"ManagerType", "BMC"},
                                  {"FirmwareVersion",
                                   config_.firmware.count("BMC_Firmware") ? config_.firmware.at("BMC_Firmware") : ""}},
                             {}}
               : readOnly();
  if (path == "/redfish/v1/UpdateService")
    return get ? BmcResponse{200,
                             json{{"@odata.id", path},
                                  {"@odata.type", "#UpdateService.v1_8_0.UpdateService"},
                                  {"Id", "UpdateService"},
                                  {"Name", "Update Service"},
                                  {"ServiceEnabled", true},
                                  {"FirmwareInventory", link("/redfish/v1/UpdateService/FirmwareInventory")}},
                             {}}
               : readOnly();
  const std::string inventory = "/redfish/v1/UpdateService/FirmwareInventory";
  if (path == inventory) {
    if (!get) return readOnly();
    std::vector<std::string> ids;
    for (const auto& [id, _] : config_.firmware) ids.push_back(inventory + "/" + id);
    return {200, collection(path, "SoftwareInventoryCollection", "Firmware Inventory Collection", ids), {}};
  }
  if (path.rfind(inventory + "/", 0) == 0) {
    const std::string id = path.substr(inventory.size() + 1);
    auto fw = config_.firmware.find(id);
    if (fw == config_.firmware.end())
      return {404, redfishError("ResourceMissingAtURI", "The resource at the URI " + path + " was not found."), {}};
    if (!get) return readOnly();
    return {200,
            json{{"@odata.id", path},
                 {"@odata.type", "#SoftwareInventory.v1_2_0.SoftwareInventory"},
                 {"Id", id},
                 {"Name", id},
                 {"Version", fw->second},
                 {"Updateable", true},
                 {"Status", {{"State", "Enabled"}, {"Health", "OK"}}}},
            {}};
  }
  if (path == "/redfish/v1/SessionService")
    return get ? BmcResponse{200,
                             json{{"@odata.id", path},
                                  {"@odata.type", "#SessionService.v1_1_8.SessionService"},
                                  {"Id", "SessionService"},
                                  {"Name", "Session Service"},
                                  {"ServiceEnabled", true},
                                  {"SessionTimeout", 600},
                                  {"Sessions", link("/redfish/v1/SessionService/Sessions")}},
                             {}}
               : readOnly();
  const std::string sessions = "/redfish/v1/SessionService/Sessions";
  if (path == sessions) {
    if (!get) return readOnly();
    std::vector<std::string> ids;
    for (const auto& [id, _] : sessions_) ids.push_back(sessions + "/" + id);
    return {200, collection(path, "SessionCollection", "Session Collection", ids), {}};
  }
  if (path.rfind(sessions + "/", 0) == 0) {
    const std::string id = path.substr(sessions.size() + 1);
    if (!sessions_.count(id)) return {404, redfishError("ResourceMissingAtURI", "No session " + id + "."), {}};
    if (r.method == "DELETE") {
      sessions_.erase(id);
      return {204, nullptr, {}};
    }
    if (!get) return readOnly();
    return {
        200,
        json{{"@odata.id", path}, {"@odata.type", "#Session.v1_3_0.Session"}, {"Id", id}, {"UserName", config_.user}},
        {}};
  }
  return {404, redfishError("ResourceMissingAtURI", "The resource at the URI " + r.path + " was not found."), {}};
}

}  // namespace kiln::sim
