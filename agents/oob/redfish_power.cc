#include "agents/oob/redfish_power.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

namespace kiln::oob {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxBody = 1u << 20;
constexpr std::size_t kMaxMembers = 256;

struct Body {
  std::string data;
  bool too_big = false;
};

std::size_t onData(char* ptr, std::size_t size, std::size_t n, void* user) {
  auto* b = static_cast<Body*>(user);
  if (b->data.size() + size * n > kMaxBody) {
    b->too_big = true;
    return 0;  // ends the transfer
  }
  b->data.append(ptr, size * n);
  return size * n;
}

void curlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

// A path from a BMC's document, to be asked of the same BMC: absolute, Redfish, no host.
bool safeRedfishPath(const std::string& p) {
  if (p.rfind("/redfish/v1", 0) != 0 || p.size() > 512) return false;
  return std::none_of(p.begin(), p.end(),
                      [](char c) {
                        return static_cast<unsigned char>(c) < 0x21 || c == '\\' || c == '#' || c == '?' ||
                               static_cast<unsigned char>(c) >= 0x7f;
                      }) &&
         p.find("..") == std::string::npos;
}

static std::string odataId(const json& link) {
  if (!link.is_object() || !link.contains("@odata.id") || !link["@odata.id"].is_string()) return "";
  return link["@odata.id"].get<std::string>();
}

Result<std::vector<std::string>> redfishMembers(const json& collection, const std::string& what) {
  if (!collection.is_object() || !collection.contains("Members") || !collection["Members"].is_array())
    return unavailable(what + ": no Members array in the BMC's answer");
  std::vector<std::string> out;
  for (const auto& m : collection["Members"]) {
    const std::string id = odataId(m);
    if (!safeRedfishPath(id)) return unavailable(what + ": a member link that is not a Redfish path");
    out.push_back(id);
    if (out.size() > kMaxMembers) return unavailable(what + ": more than " + std::to_string(kMaxMembers) + " members");
  }
  return out;
}

std::string resetTypeFor(PowerAction action) {
  switch (action) {
    case PowerAction::kOn:
      return "On";
    case PowerAction::kOff:
      return "ForceOff";
    case PowerAction::kCycle:
      return "PowerCycle";
    case PowerAction::kReset:
      return "ForceRestart";
  }
  return "";
}

Result<PowerState> parseRedfishPowerState(const json& system) {
  if (!system.is_object() || !system.contains("PowerState") || !system["PowerState"].is_string())
    return unavailable("the BMC's ComputerSystem has no PowerState");
  const std::string s = system["PowerState"];
  if (s == "On" || s == "PoweringOff" || s == "Paused") return PowerState::kOn;
  if (s == "Off" || s == "PoweringOn") return PowerState::kOff;
  return unavailable("the BMC reports PowerState '" + s.substr(0, 40) + "'");
}

Result<std::pair<std::string, std::vector<std::string>>> resetAction(const json& system) {
  if (!system.is_object() || !system.contains("Actions") || !system["Actions"].is_object() ||
      !system["Actions"].contains("#ComputerSystem.Reset") || !system["Actions"]["#ComputerSystem.Reset"].is_object())
    return unavailable("the BMC's ComputerSystem offers no #ComputerSystem.Reset action");
  const json& a = system["Actions"]["#ComputerSystem.Reset"];
  if (!a.contains("target") || !a["target"].is_string() || !safeRedfishPath(a["target"].get<std::string>()))
    return unavailable("the BMC's #ComputerSystem.Reset has no usable target");
  std::vector<std::string> allowed;
  if (a.contains("ResetType@Redfish.AllowableValues") && a["ResetType@Redfish.AllowableValues"].is_array())
    for (const auto& v : a["ResetType@Redfish.AllowableValues"])
      if (v.is_string()) allowed.push_back(v.get<std::string>());
  return std::make_pair(a["target"].get<std::string>(), allowed);
}

RedfishPower::RedfishPower(CredentialSource credential, RedfishOptions options)
    : credential_(std::move(credential)), options_(std::move(options)) {
  curlOnce();
}

namespace {

// The value of the last `name:` header line (name in lower case), without CR/LF.
std::string headerValue(const std::string& headers, const std::string& name) {
  std::string lower = headers;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  std::string value;
  const std::string key = "\n" + name + ":";
  for (auto at = lower.find(key); at != std::string::npos; at = lower.find(key, at + 1)) {
    const auto end = headers.find('\r', at + key.size());
    value = headers.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
    while (!value.empty() && value.front() == ' ') value.erase(value.begin());
  }
  return value;
}

}  // namespace

RedfishPower::~RedfishPower() {
  for (auto& [_, s] : sessions_) {
    if (s.token.empty() || !safeRedfishPath(s.location)) continue;
    const auto saved = options_.timeout;
    options_.timeout = std::min<std::chrono::milliseconds>(saved, std::chrono::milliseconds(5000));
    (void)send(s.bmc, s.cred, "DELETE", s.location, "", nullptr, &s.token, nullptr);
    options_.timeout = saved;
  }
}

Result<json> RedfishPower::call(const BmcEndpoint& bmc, const BmcCredential& cred, const std::string& method,
                                const std::string& path, const std::string& body, const std::string* params,
                                std::string* location) {
  if (!options_.sessions) {
    std::string headers;
    auto r = send(bmc, cred, method, path, body, params, nullptr, location ? &headers : nullptr);
    if (location) *location = headerValue(headers, "location");
    return r;
  }
  const std::string key = bmc.address + ":" + std::to_string(bmc.port);
  auto it = sessions_.find(key);
  if (it == sessions_.end()) {
    // Log in once: the password crosses the wire here and nowhere else.
    Session s;
    s.bmc = bmc;
    s.cred = cred;
    std::string headers;
    const std::string none;
    const std::string login = json{{"UserName", cred.user}, {"Password", cred.password.reveal()}}.dump();
    auto made = send(bmc, cred, "POST", "/redfish/v1/SessionService/Sessions", login, nullptr, &none, &headers);
    if (made.ok()) {
      s.token = headerValue(headers, "x-auth-token");
      s.location = headerValue(headers, "location");
      if (auto scheme = s.location.find("://"); scheme != std::string::npos) {
        const auto slash = s.location.find('/', scheme + 3);
        s.location = slash == std::string::npos ? "" : s.location.substr(slash);
      }
      if (s.location.empty()) s.location = odataId(*made);
      if (s.token.empty()) return unavailable("the BMC made a session but sent no X-Auth-Token");
    } else if (const auto st = made.error().details.find("http_status");
               st == made.error().details.end() ||
               (st->second != "404" && st->second != "405" && st->second != "501")) {
      return made.error();  // refused credentials, TLS, no answer: as any request's error
    }                       // else: no SessionService, HTTP Basic for this BMC
    it = sessions_.emplace(key, std::move(s)).first;
  }
  std::string headers;
  auto r = send(bmc, cred, method, path, body, params, it->second.token.empty() ? nullptr : &it->second.token,
                location ? &headers : nullptr);
  if (location) *location = headerValue(headers, "location");
  return r;
}

Result<json> RedfishPower::send(const BmcEndpoint& bmc, const BmcCredential& cred, const std::string& method,
                                const std::string& path, const std::string& body, const std::string* params,
                                const std::string* token, std::string* headers_out) {
  const bool v6 = bmc.address.find(':') != std::string::npos;
  const std::string origin = std::string(options_.plain_http ? "http://" : "https://") + (v6 ? "[" : "") + bmc.address +
                             (v6 ? "]" : "") + ":" + std::to_string(bmc.port);
  const std::string what = method + " " + origin + path;
  CURL* c = curl_easy_init();
  if (c == nullptr) return internalError("curl_easy_init failed");
  Body out;
  char errbuf[CURL_ERROR_SIZE] = {};
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  headers = curl_slist_append(headers, "OData-Version: 4.0");
  if (method == "POST" && params == nullptr) headers = curl_slist_append(headers, "Content-Type: application/json");
  if (method == "DELETE") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
  const std::string url = origin + path;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, options_.plain_http ? "http" : "https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min<std::int64_t>(options_.timeout.count(), 10000)));
  std::string token_header;
  if (token == nullptr) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERNAME, cred.user.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, cred.password.reveal().c_str());
  } else if (!token->empty()) {
    token_header = "X-Auth-Token: " + *token;
    headers = curl_slist_append(headers, token_header.c_str());
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, onData);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  if (!options_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, options_.insecure ? 0L : 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, options_.insecure ? 0L : 2L);
  curl_mime* mime = nullptr;
  if (method == "POST" && params != nullptr) {
    mime = curl_mime_init(c);
    curl_mimepart* p = curl_mime_addpart(mime);
    curl_mime_name(p, "UpdateParameters");
    curl_mime_data(p, params->data(), params->size());
    curl_mime_type(p, "application/json");
    p = curl_mime_addpart(mime);
    curl_mime_name(p, "UpdateFile");
    curl_mime_filename(p, "image.fwpkg");
    curl_mime_data(p, body.data(), body.size());
    curl_mime_type(p, "application/octet-stream");
    curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
  } else if (method == "POST") {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  std::string header_text;
  if (headers_out != nullptr) {
    curl_easy_setopt(
        c, CURLOPT_HEADERFUNCTION, +[](char* ptr, std::size_t size, std::size_t n, void* user) -> std::size_t {
          auto* h = static_cast<std::string*>(user);
          if (h->size() < 65536) h->append(ptr, size * n);
          return size * n;
        });
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &header_text);
  }
  const CURLcode rc = curl_easy_perform(c);
  if (mime != nullptr) curl_mime_free(mime);
  if (headers_out != nullptr) *headers_out = header_text;

  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  if (out.too_big) return unavailable(what + ": answer larger than 1 MiB");
  if (rc != CURLE_OK)
    return unavailable(what + ": " + redact(errbuf[0] ? std::string(errbuf) : curl_easy_strerror(rc), cred.password));
  json doc = out.data.empty() ? json() : json::parse(out.data, nullptr, false);
  if (status == 401 || status == 403)
    return unavailable(what + ": HTTP " + std::to_string(status) + ": the BMC refused user '" + cred.user +
                       "' (check the credential '" + bmc.credential + "')");
  if (status < 200 || status >= 300) {
    std::string msg;
    if (doc.is_object() && doc.contains("error") && doc["error"].is_object() && doc["error"].contains("message") &&
        doc["error"]["message"].is_string())
      msg = ": " + redact(doc["error"]["message"].get<std::string>().substr(0, 200), cred.password);
    return Error(unavailable(what + ": HTTP " + std::to_string(status) + msg))
        .with("http_status", std::to_string(status));
  }
  if (!out.data.empty() && doc.is_discarded()) return unavailable(what + ": the BMC's answer is not JSON");
  return doc;
}

Result<json> RedfishPower::firstSystem(const BmcEndpoint& bmc, const BmcCredential& cred, std::string& path) {
  auto systems = call(bmc, cred, "GET", "/redfish/v1/Systems", "");
  if (!systems.ok()) return systems.error();
  auto ids = redfishMembers(*systems, "/redfish/v1/Systems");
  if (!ids.ok()) return ids.error();
  if (ids->empty()) return unavailable("the BMC lists no ComputerSystem");
  path = ids->front();
  return call(bmc, cred, "GET", path, "");
}

Result<PowerState> RedfishPower::status(const BmcEndpoint& bmc) {
  auto cred = credential_(bmc.credential);
  if (!cred.ok()) return cred.error();
  std::string path;
  auto system = firstSystem(bmc, *cred, path);
  if (!system.ok()) return system.error();
  return parseRedfishPowerState(*system);
}

Status RedfishPower::act(const BmcEndpoint& bmc, PowerAction action) {
  auto cred = credential_(bmc.credential);
  if (!cred.ok()) return cred.error();
  std::string path;
  auto system = firstSystem(bmc, *cred, path);
  if (!system.ok()) return system.error();
  auto reset = resetAction(*system);
  if (!reset.ok()) return reset.error();
  const std::string type = resetTypeFor(action);
  const auto& allowed = reset->second;
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), type) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a.substr(0, 40);
    return unavailable("the BMC does not offer ResetType " + type + " (it offers " + list + ")");
  }
  auto done = call(bmc, *cred, "POST", reset->first, json{{"ResetType", type}}.dump());
  if (!done.ok()) return done.error();
  return Ok{};
}

Result<std::vector<FirmwareItem>> RedfishPower::firmware(const BmcEndpoint& bmc) {
  auto cred = credential_(bmc.credential);
  if (!cred.ok()) return cred.error();
  const std::string inventory = "/redfish/v1/UpdateService/FirmwareInventory";
  auto list = call(bmc, *cred, "GET", inventory, "");
  if (!list.ok()) return list.error();
  auto ids = redfishMembers(*list, inventory);
  if (!ids.ok()) return ids.error();
  std::vector<FirmwareItem> out;
  for (const auto& id : *ids) {
    auto item = call(bmc, *cred, "GET", id, "");
    if (!item.ok()) return item.error();
    if (!item->is_object() || !item->contains("Version") || !(*item)["Version"].is_string())
      return unavailable(id + ": no Version in the BMC's SoftwareInventory");
    FirmwareItem f;
    f.id = item->value("Id", json()).is_string() ? (*item)["Id"].get<std::string>() : id.substr(id.rfind('/') + 1);
    f.name = item->value("Name", json()).is_string() ? (*item)["Name"].get<std::string>() : f.id;
    f.version = (*item)["Version"].get<std::string>().substr(0, 200);
    f.updateable = item->value("Updateable", json()).is_boolean() && (*item)["Updateable"].get<bool>();
    out.push_back(std::move(f));
  }
  return out;
}

Result<std::string> RedfishPower::resetBmc(const BmcEndpoint& bmc, std::chrono::seconds wait,
                                           std::chrono::milliseconds poll) {
  auto cred = credential_(bmc.credential);
  if (!cred.ok()) return cred.error();
  auto managers = call(bmc, *cred, "GET", "/redfish/v1/Managers", "");
  if (!managers.ok()) return managers.error();
  auto ids = redfishMembers(*managers, "/redfish/v1/Managers");
  if (!ids.ok()) return ids.error();
  if (ids->empty()) return unavailable("the BMC lists no Manager");
  const std::string path = ids->front();
  auto manager = call(bmc, *cred, "GET", path, "");
  if (!manager.ok()) return manager.error();
  const json* action = nullptr;
  if (manager->is_object() && manager->contains("Actions") && (*manager)["Actions"].is_object() &&
      (*manager)["Actions"].contains("#Manager.Reset") && (*manager)["Actions"]["#Manager.Reset"].is_object())
    action = &(*manager)["Actions"]["#Manager.Reset"];
  if (!action || !action->contains("target") || !(*action)["target"].is_string() ||
      !safeRedfishPath((*action)["target"].get<std::string>()))
    return unavailable(path + " offers no usable #Manager.Reset action");
  std::string type = "ForceRestart";
  if (auto allowed = action->find("ResetType@Redfish.AllowableValues"); allowed != action->end() && allowed->is_array()) {
    const bool graceful = std::find(allowed->begin(), allowed->end(), json("GracefulRestart")) != allowed->end();
    const bool force = std::find(allowed->begin(), allowed->end(), json("ForceRestart")) != allowed->end();
    if (!graceful && !force) return unavailable(path + "'s #Manager.Reset allows neither GracefulRestart nor ForceRestart");
    type = graceful ? "GracefulRestart" : "ForceRestart";
  }
  auto done = call(bmc, *cred, "POST", (*action)["target"].get<std::string>(), json{{"ResetType", type}}.dump());
  if (!done.ok()) return done.error();
  // Its sessions went with it: no logout, and the next request logs in again.
  sessions_.erase(bmc.address + ":" + std::to_string(bmc.port));
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::string last = "no answer yet";
  while (true) {
    std::this_thread::sleep_for(poll);
    auto back = call(bmc, *cred, "GET", path, "");
    if (back.ok()) {
      if (!back->is_object() || !back->contains("FirmwareVersion") || !(*back)["FirmwareVersion"].is_string())
        return unavailable(path + ": no FirmwareVersion after the reset");
      return (*back)["FirmwareVersion"].get<std::string>().substr(0, 200);
    }
    sessions_.erase(bmc.address + ":" + std::to_string(bmc.port));  // a login refused while it restarts
    last = back.error().message;
    if (std::chrono::steady_clock::now() >= deadline)
      return unavailable("the BMC did not answer within " + std::to_string(wait.count()) + " s of its reset (" +
                         path + ", " + type + "): " + last);
  }
}

Result<FirmwareUpdateResult> RedfishPower::update(const BmcEndpoint& bmc, const std::string& component,
                                                  const std::string& image, const std::string& version,
                                                  std::chrono::seconds task_timeout, std::chrono::milliseconds poll) {
  if (component.empty() || component.size() > 64 || !std::all_of(component.begin(), component.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
      }))
    return invalidArgument("component '" + component.substr(0, 64) + "': expected a FirmwareInventory member id");
  auto cred = credential_(bmc.credential);
  if (!cred.ok()) return cred.error();
  const std::string member = "/redfish/v1/UpdateService/FirmwareInventory/" + component;
  auto readVersion = [&]() -> Result<std::string> {
    auto item = call(bmc, *cred, "GET", member, "");
    if (!item.ok()) return item.error();
    if (!item->is_object() || !item->contains("Version") || !(*item)["Version"].is_string())
      return unavailable(member + ": no Version in the BMC's SoftwareInventory");
    return (*item)["Version"].get<std::string>().substr(0, 200);
  };
  FirmwareUpdateResult out;
  auto before = readVersion();
  if (!before.ok()) return before.error();
  out.before = *before;
  if (out.before == version) {
    out.after = out.before;
    return out;  // already there: nothing is flashed twice
  }
  auto service = call(bmc, *cred, "GET", "/redfish/v1/UpdateService", "");
  if (!service.ok()) return service.error();
  if (!service->is_object() || !service->contains("MultipartHttpPushUri") ||
      !(*service)["MultipartHttpPushUri"].is_string() ||
      !safeRedfishPath((*service)["MultipartHttpPushUri"].get<std::string>()))
    return unavailable("the BMC's UpdateService offers no MultipartHttpPushUri");
  const std::string params = json{{"Targets", {member}}, {"@Redfish.OperationApplyTime", "Immediate"}}.dump();
  std::string location;
  auto pushed =
      call(bmc, *cred, "POST", (*service)["MultipartHttpPushUri"].get<std::string>(), image, &params, &location);
  if (!pushed.ok()) return pushed.error();
  out.pushed = true;
  std::string task = location;
  if (auto scheme = task.find("://"); scheme != std::string::npos) {  // an absolute Location: its path
    const auto slash = task.find('/', scheme + 3);
    task = slash == std::string::npos ? "" : task.substr(slash);
  }
  if (task.empty()) task = odataId(*pushed);
  if (!safeRedfishPath(task)) return unavailable("the BMC took the image but named no Task to follow");
  out.task = task;
  const auto deadline = std::chrono::steady_clock::now() + task_timeout;
  for (;;) {
    auto t = call(bmc, *cred, "GET", task, "");
    if (!t.ok()) return t.error();
    const std::string state =
        t->is_object() && t->value("TaskState", json()).is_string() ? (*t)["TaskState"].get<std::string>() : "";
    out.task_state = state.substr(0, 40);
    if (state == "Completed") break;
    if (state == "Exception" || state == "Killed" || state == "Cancelled" || state == "Interrupted") {
      std::string why;
      if (t->contains("Messages") && (*t)["Messages"].is_array())
        for (const auto& m : (*t)["Messages"])
          if (m.is_object() && m.value("Message", json()).is_string())
            why += "; " + m["Message"].get<std::string>().substr(0, 200);
      return unavailable("the update of " + component + " ended " + out.task_state + " (task " + task + ")" + why);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      const std::string pct = t->is_object() && t->value("PercentComplete", json()).is_number_integer()
                                  ? " at " + std::to_string((*t)["PercentComplete"].get<int>()) + "%"
                                  : "";
      return unavailable("the update of " + component + " is still " +
                         (out.task_state.empty() ? "unreported" : out.task_state) + pct + " after " +
                         std::to_string(task_timeout.count()) + " s (task " + task +
                         "): not retried; the component is left as the BMC has it");
    }
    std::this_thread::sleep_for(poll);
  }
  auto after = readVersion();
  if (!after.ok()) return after.error();
  out.after = *after;
  if (out.after != version)
    return unavailable("the BMC reports " + component + " " + out.after + " after a completed update to " + version +
                       " (it did not apply the image)");
  return out;
}

Result<std::vector<LogEntry>> RedfishPower::eventLog(const BmcEndpoint& bmc, std::size_t last) {
  auto cred = credential_(bmc.credential);
  if (!cred.ok()) return cred.error();
  std::string path;
  auto system = firstSystem(bmc, *cred, path);
  if (!system.ok()) return system.error();
  const std::string services_path =
      system->is_object() && system->contains("LogServices") ? odataId((*system)["LogServices"]) : "";
  if (services_path.empty()) return std::vector<LogEntry>{};  // a BMC without logs: nothing to show
  if (!safeRedfishPath(services_path)) return unavailable("the BMC's LogServices link is not a Redfish path");
  auto services = call(bmc, *cred, "GET", services_path, "");
  if (!services.ok()) return services.error();
  auto ids = redfishMembers(*services, services_path);
  if (!ids.ok()) return ids.error();
  std::vector<LogEntry> out;
  for (std::size_t i = 0; i < ids->size() && i < 8; ++i) {
    auto service = call(bmc, *cred, "GET", (*ids)[i], "");
    if (!service.ok()) return service.error();
    const std::string entries_path =
        service->is_object() && service->contains("Entries") ? odataId((*service)["Entries"]) : "";
    if (entries_path.empty() || !safeRedfishPath(entries_path)) continue;
    auto entries = call(bmc, *cred, "GET", entries_path, "");
    if (!entries.ok()) return entries.error();
    if (!entries->is_object() || !entries->contains("Members") || !(*entries)["Members"].is_array()) continue;
    for (const auto& m : (*entries)["Members"]) {
      if (!m.is_object() || !m.value("Message", json()).is_string()) continue;
      LogEntry e;
      auto str = [&](const char* k) {
        return m.value(k, json()).is_string() ? m[k].get<std::string>().substr(0, 200) : std::string();
      };
      e.id = str("Id");
      e.created = str("Created");
      e.severity = str("Severity");
      e.message = m["Message"].get<std::string>().substr(0, 500);
      out.push_back(std::move(e));
      if (out.size() >= 1000) break;
    }
  }
  if (out.size() > last) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(last));
  return out;
}

}  // namespace kiln::oob
