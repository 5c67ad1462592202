#include "cli/settings.h"

#include <nlohmann/json.hpp>

#include "common/yaml_json.h"

namespace kiln::cli {
namespace {

struct Layer {
  std::optional<std::string> url, token, token_file, ca_file;
};

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

std::string expandHome(const std::string& path, const System& system) {
  if (path.rfind("~/", 0) != 0) return path;
  auto home = system.get_env("HOME");
  return home ? *home + path.substr(1) : path;
}

std::string folderOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

Result<Layer> fileLayer(const GlobalOptions& flags, const System& system) {
  std::string path;
  bool explicit_path = true;
  if (flags.config) {
    path = *flags.config;
  } else if (auto env = system.get_env("KILN_CONFIG"); env && !env->empty()) {
    path = *env;
  } else {
    path = kDefaultConfigPath;
    explicit_path = false;
  }
  path = expandHome(path, system);
  if (!explicit_path && !system.file_exists(path)) return Layer{};
  auto text = system.read_file(path);
  if (!text.ok()) return invalidArgument("config file: " + text.error().message);
  auto doc = yamlToJson(*text);
  if (!doc.ok()) return invalidArgument("config file " + path + ": " + doc.error().message);
  Layer layer;
  if (doc->is_null()) return layer;
  if (!doc->is_object()) return invalidArgument("config file " + path + ": expected a mapping of url, token, token_file, ca_file");
  for (const auto& [key, value] : doc->items()) {
    if (!value.is_string())
      return invalidArgument("config file " + path + ": " + key + " must be a string");
    const std::string v = value.get<std::string>();
    if (key == "url") layer.url = v;
    else if (key == "token") layer.token = v;
    else if (key == "token_file") layer.token_file = v.empty() || v[0] == '/' || v[0] == '~' ? v : folderOf(path) + v;
    else if (key == "ca_file") layer.ca_file = v.empty() || v[0] == '/' || v[0] == '~' ? v : folderOf(path) + v;
    else return invalidArgument("config file " + path + ": unknown key '" + key + "' (expected url, token, token_file, ca_file)");
  }
  return layer;
}

Layer envLayer(const System& system) {
  Layer layer;
  auto get = [&](const char* name) -> std::optional<std::string> {
    auto v = system.get_env(name);
    if (v && v->empty()) return std::nullopt;  // an empty variable counts as unset
    return v;
  };
  layer.url = get("KILN_URL");
  layer.token = get("KILN_TOKEN");
  layer.token_file = get("KILN_TOKEN_FILE");
  layer.ca_file = get("KILN_CA_FILE");
  return layer;
}

}  // namespace

Result<ConnectionSettings> resolveConnection(const GlobalOptions& flags, const System& system) {
  if (flags.token && flags.token_file) return invalidArgument("give --token or --token-file, not both");
  Layer flag_layer{flags.url, flags.token, flags.token_file, flags.ca_file};
  auto file = fileLayer(flags, system);
  if (!file.ok()) return file.error();
  const Layer layers[] = {flag_layer, envLayer(system), *file};  // highest precedence first

  ConnectionSettings out;
  for (const auto& l : layers)
    if (l.url) { out.url = *l.url; break; }
  for (const auto& l : layers)
    if (l.ca_file) { out.ca_file = expandHome(*l.ca_file, system); break; }
  for (const auto& l : layers) {
    if (l.token) {
      out.token = *l.token;
      break;
    }
    if (l.token_file) {
      const std::string path = expandHome(*l.token_file, system);
      auto text = system.read_file(path);
      if (!text.ok()) return invalidArgument("token file: " + text.error().message);
      out.token = trim(*text);
      if (out.token.empty()) return invalidArgument("token file " + path + " is empty");
      break;
    }
  }
  if (flags.timeout_seconds)
    out.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(*flags.timeout_seconds * 1000));

  if (out.url.rfind("http://", 0) != 0 && out.url.rfind("https://", 0) != 0)
    return invalidArgument("the server URL must start with http:// or https:// (got '" + out.url + "')");
  while (out.url.size() > 8 && out.url.back() == '/') out.url.pop_back();
  return out;
}

}  // namespace kiln::cli
