#include "agents/sim/redfish_bmc.h"

#include <algorithm>
#include <ctime>
#include <random>
#include <variant>

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

std::optional<std::map<std::string, std::string>> multipartParts(const std::string& content_type,
                                                                 const std::string& body) {
  const auto b = content_type.find("boundary=");
  if (content_type.rfind("multipart/form-data", 0) != 0 || b == std::string::npos) return std::nullopt;
  std::string boundary = content_type.substr(b + 9);
  if (auto semi = boundary.find(';'); semi != std::string::npos) boundary = boundary.substr(0, semi);
  if (boundary.size() >= 2 && boundary.front() == '"' && boundary.back() == '"')
    boundary = boundary.substr(1, boundary.size() - 2);
  if (boundary.empty() || boundary.size() > 70) return std::nullopt;
  const std::string delim = "--" + boundary;
  std::map<std::string, std::string> parts;
  std::size_t at = body.find(delim);
  if (at == std::string::npos) return std::nullopt;
  for (int n = 0; n < 16; ++n) {
    at += delim.size();
    if (body.compare(at, 2, "--") == 0) return parts;  // the closing delimiter
    if (body.compare(at, 2, "\r\n") != 0) return std::nullopt;
    at += 2;
    const auto head_end = body.find("\r\n\r\n", at);
    if (head_end == std::string::npos) return std::nullopt;
    const std::string head = body.substr(at, head_end - at);
    const auto next = body.find("\r\n" + delim, head_end + 4);
    if (next == std::string::npos) return std::nullopt;
    const auto name_at = head.find("name=\"");
    if (name_at == std::string::npos) return std::nullopt;
    const auto name_end = head.find('"', name_at + 6);
    if (name_end == std::string::npos) return std::nullopt;
    parts[head.substr(name_at + 6, name_end - name_at - 6)] = body.substr(head_end + 4, next - head_end - 4);
    at = next + 2;
  }
  return std::nullopt;
}

RedfishBmc::RedfishBmc(BmcConfig config) : config_(std::move(config)) {
  note("OK", "BMC started");
}

void RedfishBmc::note(const std::string& severity, const std::string& message) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char created[32];
  std::strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
  const std::string id = std::to_string(log_.size() + 1);
  log_.push_back(json{{"@odata.id", "/redfish/v1/Systems/System_0/LogServices/EventLog/Entries/" + id},
                      {"@odata.type", "#LogEntry.v1_9_0.LogEntry"},
                      {"Id", id},
                      {"Name", "Log Entry " + id},
                      {"EntryType", "Event"},
                      {"Severity", severity},
                      {"Created", created},
                      {"Message", message}});
  if (log_.size() > 500) log_.erase(log_.begin());
}

json RedfishBmc::taskJson(const std::string& id, Clock::time_point now) {
  Task& t = tasks_.at(id);
  const bool hangs = config_.faults.count("task-hangs") > 0;
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - t.started);
  const bool done = !hangs && elapsed >= config_.update_time;
  if (done && !t.applied) {
    t.applied = true;
    if (!config_.faults.count("version-unchanged")) config_.firmware[t.component] = t.version;
    note("OK", "Firmware update of " + t.component + " to " + t.version + " completed");
  }
  int percent = done ? 100
                     : static_cast<int>(std::min<std::int64_t>(
                           99, 100 * elapsed.count() / std::max<std::int64_t>(1, config_.update_time.count())));
  if (hangs) percent = std::min(percent, 42);
  json messages = json::array();
  if (done)
    messages.push_back({{"MessageId", "Update.1.0.UpdateSuccessful"},
                        {"Message", "The update of " + t.component + " to " + t.version + " has completed."}});
  return json{{"@odata.id", "/redfish/v1/TaskService/Tasks/" + id},
              {"@odata.type", "#Task.v1_4_3.Task"},
              {"Id", id},
              {"Name", "Firmware update of " + t.component},
              {"TaskState", done ? "Completed" : "Running"},
              {"TaskStatus", "OK"},
              {"PercentComplete", percent},
              {"Messages", messages}};
}

BmcResponse RedfishBmc::push(const BmcRequest& r, Clock::time_point now) {
  for (const auto& [id, _] : tasks_)
    if (taskJson(id, now)["TaskState"] == "Running")
      return {503,
              redfishError("ServiceTemporarilyUnavailable",
                           "An update is in progress (task " + id + "); push one image at a time."),
              {{"Retry-After", "30"}}};
  auto ct = r.headers.find("content-type");
  auto parts = multipartParts(ct == r.headers.end() ? "" : ct->second, r.body);
  if (!parts)
    return {400,
            redfishError("MalformedJSON", "Expected a multipart/form-data body with UpdateParameters and UpdateFile."),
            {}};
  if (!parts->count("UpdateParameters") || !parts->count("UpdateFile"))
    return {400, redfishError("PropertyMissing", "UpdateParameters and UpdateFile are required parts."), {}};
  const json params = json::parse((*parts)["UpdateParameters"], nullptr, false);
  if (params.is_discarded() || !params.is_object() || !params.contains("Targets") || !params["Targets"].is_array() ||
      params["Targets"].size() != 1 || !params["Targets"][0].is_string())
    return {400,
            redfishError("PropertyValueFormatError",
                         "UpdateParameters.Targets must name exactly one FirmwareInventory member."),
            {}};
  const std::string target = params["Targets"][0];
  const std::string inventory = "/redfish/v1/UpdateService/FirmwareInventory/";
  const std::string component = target.rfind(inventory, 0) == 0 ? target.substr(inventory.size()) : "";
  if (!config_.firmware.count(component))
    return {400, redfishError("ResourceMissingAtURI", "No firmware component at " + target + "."), {}};
  const std::string& image = (*parts)["UpdateFile"];
  const std::string magic = "KILN-HWSIM-FW ";
  const auto eol = image.find('\n');
  std::string line = image.substr(0, eol == std::string::npos ? std::min<std::size_t>(image.size(), 200) : eol);
  if (line.rfind(magic, 0) != 0)
    return {400,
            redfishError("ActionParameterValueFormatError", "The image is not a firmware package this BMC takes."),
            {}};
  line = line.substr(magic.size());
  const auto sp = line.find(' ');
  if (sp == std::string::npos)
    return {400, redfishError("ActionParameterValueFormatError", "The image names no version."), {}};
  const std::string image_component = line.substr(0, sp), version = line.substr(sp + 1);
  if (image_component != component)
    return {400,
            redfishError("ActionParameterValueConflict",
                         "The image is for " + image_component + ", not " + component + "."),
            {}};
  const std::string id = std::to_string(next_task_++);
  tasks_[id] = Task{now, component, version, false};
  const std::string at = "/redfish/v1/TaskService/Tasks/" + id;
  return {202, taskJson(id, now), {{"Location", at}}};
}

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

// A Reset action's ResetType, one of `allowed`; else the 400 to answer.
static std::variant<std::string, BmcResponse> resetTypeOf(const BmcRequest& r, const std::vector<std::string>& allowed) {
  json body = json::parse(r.body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("ResetType") || !body["ResetType"].is_string())
    return BmcResponse{400,
                       redfishError("PropertyMissing",
                                    "The property ResetType is a required property and must be included in the request."),
                       {}};
  const std::string type = body["ResetType"];
  if (std::find(allowed.begin(), allowed.end(), type) == allowed.end())
    return BmcResponse{
        400,
        redfishError("ActionParameterNotSupported", "The parameter ResetType does not accept the value " + type + "."),
        {}};
  return type;
}

BmcResponse RedfishBmc::reset(const BmcRequest& r, Clock::time_point now) {
  auto parsed = resetTypeOf(r, kResetTypes);
  if (auto* refused = std::get_if<BmcResponse>(&parsed)) return *refused;
  const std::string type = std::get<std::string>(parsed);
  power_log_.push_back(type);
  note("OK", "ComputerSystem.Reset " + type + " requested");
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

BmcResponse RedfishBmc::resetBmc(const BmcRequest& r, Clock::time_point now) {
  auto parsed = resetTypeOf(r, {"GracefulRestart", "ForceRestart"});
  if (auto* refused = std::get_if<BmcResponse>(&parsed)) return *refused;
  const std::string type = std::get<std::string>(parsed);
  note("OK", "Manager.Reset " + type + " requested");
  ++bmc_resets_;
  // The BMC restarts: away for a while, and every session is lost (the tray's power is not
  // touched: a BMC reset does not reset the host).
  sessions_.clear();
  bmc_back_ = now + config_.bmc_restart;
  return {204, nullptr, {}};
}

BmcResponse RedfishBmc::handle(const BmcRequest& r, Clock::time_point now) {
  std::string path = r.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (now < bmc_back_) return {503, redfishError("ServiceTemporarilyUnavailable", "The BMC is restarting."), {}};
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
                 {"TaskService", link("/redfish/v1/TaskService")},
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
                 {"LogServices", link("/redfish/v1/Systems/System_0/LogServices")},
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
  const std::string logs = "/redfish/v1/Systems/System_0/LogServices";
  if (path == logs)
    return get ? BmcResponse{200,
                             collection(path, "LogServiceCollection", "Log Service Collection", {logs + "/EventLog"}),
                             {}}
               : readOnly();
  if (path == logs + "/EventLog")
    return get ? BmcResponse{200,
                             json{{"@odata.id", path},
                                  {"@odata.type", "#LogService.v1_1_3.LogService"},
                                  {"Id", "EventLog"},
                                  {"Name", "Event Log"},
                                  {"Entries", link(path + "/Entries")}},
                             {}}
               : readOnly();
  if (path == logs + "/EventLog/Entries") {
    if (!get) return readOnly();
    return {200,
            json{{"@odata.id", path},
                 {"@odata.type", "#LogEntryCollection.LogEntryCollection"},
                 {"Name", "Event Log Entries"},
                 {"Members@odata.count", log_.size()},
                 {"Members", log_}},
            {}};
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
                                   config_.firmware.count("BMC_Firmware") ? config_.firmware.at("BMC_Firmware") : ""},
                                  {"Actions",
                                   {{"#Manager.Reset",
                                     {{"target", "/redfish/v1/Managers/BMC_0/Actions/Manager.Reset"},
                                      {"ResetType@Redfish.AllowableValues", {"GracefulRestart", "ForceRestart"}}}}}}},
                             {}}
               : readOnly();
  if (path == "/redfish/v1/Managers/BMC_0/Actions/Manager.Reset")
    return r.method == "POST" ? resetBmc(r, now)
                              : BmcResponse{405, redfishError("ActionNotSupported", "POST the action."), {}};
  if (path == "/redfish/v1/UpdateService")
    return get ? BmcResponse{200,
                             json{{"@odata.id", path},
                                  {"@odata.type", "#UpdateService.v1_8_0.UpdateService"},
                                  {"Id", "UpdateService"},
                                  {"Name", "Update Service"},
                                  {"ServiceEnabled", true},
                                  {"FirmwareInventory", link("/redfish/v1/UpdateService/FirmwareInventory")},
                                  {"MultipartHttpPushUri", "/redfish/v1/UpdateService/update-multipart"}},
                             {}}
               : readOnly();
  if (path == "/redfish/v1/UpdateService/update-multipart") {
    if (r.method != "POST") return {405, redfishError("ActionNotSupported", "Use POST."), {{"Allow", "POST"}}};
    return push(r, now);
  }
  if (path == "/redfish/v1/TaskService")
    return get ? BmcResponse{200,
                             json{{"@odata.id", path},
                                  {"@odata.type", "#TaskService.v1_1_4.TaskService"},
                                  {"Id", "TaskService"},
                                  {"Name", "Task Service"},
                                  {"ServiceEnabled", true},
                                  {"Tasks", link("/redfish/v1/TaskService/Tasks")}},
                             {}}
               : readOnly();
  const std::string tasks = "/redfish/v1/TaskService/Tasks";
  if (path == tasks) {
    if (!get) return readOnly();
    std::vector<std::string> ids;
    for (const auto& [id, _] : tasks_) ids.push_back(tasks + "/" + id);
    return {200, collection(path, "TaskCollection", "Task Collection", ids), {}};
  }
  if (path.rfind(tasks + "/", 0) == 0) {
    const std::string id = path.substr(tasks.size() + 1);
    if (!tasks_.count(id)) return {404, redfishError("ResourceMissingAtURI", "No task " + id + "."), {}};
    if (!get) return readOnly();
    return {200, taskJson(id, now), {}};
  }
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
