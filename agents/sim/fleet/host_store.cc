#include "agents/sim/fleet/host_store.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace kiln::vfleet {
namespace {

std::optional<std::string> readAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Writes through a temporary file and a rename, so a crash never leaves half a file.
Status writeAtomically(const std::filesystem::path& p, const std::string& text, bool secret) {
  std::error_code ec;
  std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) return unavailable("cannot create " + p.parent_path().string() + ": " + ec.message());
  const auto tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return unavailable("cannot write " + tmp);
    if (secret) ::chmod(tmp.c_str(), 0600);
    out << text;
    if (!out.flush()) return unavailable("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, p, ec);
  if (ec) return unavailable("cannot rename " + tmp + ": " + ec.message());
  return okStatus();
}

// Host ids are fleet names ("prn-b01-p01-h03"); keep anything else out of the path.
std::string fileName(const std::string& host) {
  std::string s = host;
  for (char& c : s) {
    if (c == '/' || c == '\0') c = '_';
  }
  if (s == "." || s == "..") s = "_" + s;
  return s;
}

}  // namespace

std::optional<std::string> MemoryHostStore::loadToken(const std::string& host) {
  auto it = tokens_.find(host);
  if (it == tokens_.end()) return std::nullopt;
  return it->second;
}

Status MemoryHostStore::saveToken(const std::string& host, const std::string& token) {
  tokens_[host] = token;
  return okStatus();
}

std::optional<sim::HostState> MemoryHostStore::loadState(const std::string& host) {
  auto it = states_.find(host);
  if (it == states_.end()) return std::nullopt;
  return it->second;
}

Status MemoryHostStore::saveState(const sim::HostState& state) {
  states_[state.host] = state;
  return okStatus();
}

DirHostStore::DirHostStore(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::optional<std::string> DirHostStore::loadToken(const std::string& host) {
  auto text = readAll(dir_ / "tokens" / fileName(host));
  if (!text) return std::nullopt;
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  if (text->empty()) return std::nullopt;
  return text;
}

Status DirHostStore::saveToken(const std::string& host, const std::string& token) {
  return writeAtomically(dir_ / "tokens" / fileName(host), token + "\n", true);
}

std::optional<sim::HostState> DirHostStore::loadState(const std::string& host) {
  auto text = readAll(dir_ / "hosts" / (fileName(host) + ".json"));
  if (!text) return std::nullopt;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  auto state = sim::hostStateFromJson(j);
  if (!state.ok() || state->host != host) return std::nullopt;
  return std::move(*state);
}

Status DirHostStore::saveState(const sim::HostState& state) {
  return writeAtomically(dir_ / "hosts" / (fileName(state.host) + ".json"),
                         sim::toJson(state).dump() + "\n", false);
}

}  // namespace kiln::vfleet
