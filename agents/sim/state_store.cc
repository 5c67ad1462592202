#include "agents/sim/state_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kiln::sim {
namespace {

class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the flock
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

Status writeAtomically(const std::filesystem::path& path, const std::string& content) {
  // A unique temp name per process so concurrent writers never share a temp file.
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return unavailable("cannot write " + tmp.string() + ": " + std::strerror(errno));
    out << content;
    out.flush();
    if (!out) return unavailable("short write to " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return unavailable("cannot rename state file into " + path.string());
  }
  return okStatus();
}

}  // namespace

StateStore::StateStore(std::filesystem::path dir, StateDefaults defaults)
    : dir_(std::move(dir)), defaults_(std::move(defaults)) {}

Result<HostState> StateStore::update(const std::function<void(HostState&)>& mutate) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return unavailable("cannot create state dir " + dir_.string() + ": " + ec.message());
  FileLock lock(dir_ / "state.lock");
  if (!lock.ok()) return unavailable("cannot lock " + (dir_ / "state.lock").string());

  const auto path = dir_ / "state.json";
  HostState state;
  bool fresh = false;
  if (std::filesystem::exists(path)) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    auto parsed = nlohmann::json::parse(buf.str(), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) return invalidContent("corrupt state file " + path.string());
    auto loaded = hostStateFromJson(parsed);
    if (!loaded) return loaded.error();
    state = std::move(*loaded);
  } else {
    state = makeDefaultState(defaults_.host, defaults_.platform);
    fresh = true;
  }
  nlohmann::json before = fresh ? nlohmann::json() : toJson(state);
  if (mutate) mutate(state);
  nlohmann::json after = toJson(state);
  if (fresh || after != before) {
    auto written = writeAtomically(path, after.dump(1) + "\n");
    if (!written) return written.error();
  }
  return state;
}

Result<HostState> StateStore::read() {
  return update(nullptr);
}

Status StateStore::reset(const HostState& state) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return unavailable("cannot create state dir " + dir_.string() + ": " + ec.message());
  FileLock lock(dir_ / "state.lock");
  if (!lock.ok()) return unavailable("cannot lock " + (dir_ / "state.lock").string());
  return writeAtomically(dir_ / "state.json", toJson(state).dump(1) + "\n");
}

}  // namespace kiln::sim
