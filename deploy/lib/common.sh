# Shared by deploy/quickstart.sh and deploy/test.sh: packages, build, private PostgreSQL.
# Source it; it defines functions only.

KILN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PG_BIN=/usr/lib/postgresql/15/bin
KILN_PG_USER=kiln

# Debian 12 packages Kiln needs to build and run. Keep in sync with README.md.
KILN_PACKAGES=(
  g++ cmake ninja-build pkg-config ccache git
  libcpprest-dev libssl-dev libpqxx-dev libboost-dev libboost-filesystem-dev
  libyaml-cpp-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libpugixml-dev libjemalloc-dev zlib1g-dev
  libgtest-dev libgmock-dev
  postgresql postgresql-client curl
  prometheus  # promtool and a real Prometheus server for the prometheus test label (issue 16)
  clang libfuzzer-14-dev  # the libFuzzer targets of tests/fuzz (ctest label fuzz, deploy/fuzz.sh)
  slurmctld slurmd slurm-client munge  # a real Slurm for the slurm test label and quickstart --slurm (issue 12)
  haproxy  # three kilnd behind a real balancer (tests/e2e/replicas_test.cc, deploy/haproxy; issue 14)
  libcurl4-openssl-dev  # kiln-agent fetches artifacts with libcurl: resume, rate limit, CA bundle (issue 31)
  gpgv gnupg nginx-light  # signed bundles checked with gpgv, keys made with gpg, an nginx mirror in the tests (issue 31)
  openssl  # the mutual-TLS test makes its CA and certificates with the openssl command (issue 31)
  ipmitool openipmi  # kiln-oob's IPMI power driver uses ipmitool; its tests talk to OpenIPMI's ipmi_sim (issue 32)
  redfishtool  # DMTF's Redfish client checks kiln-hwsim's simulated BMC (issue 32)
)

log() { printf '\033[1m[kiln]\033[0m %s\n' "$*" >&2; }
die() { printf '[kiln] error: %s\n' "$*" >&2; exit 1; }

ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  [ "$(id -u)" = 0 ] || die "missing packages: ${missing[*]} (run as root, or apt-get install them)"
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || die "apt-get update failed"
  apt-get install -y -qq "${missing[@]}" >/dev/null || die "apt-get install failed"
}

# build BUILD_DIR [extra cmake args...]
kiln_build() {
  local dir=$1; shift
  # The KILN_SKIP_* options (building the orchestrator alone) are cached: reset them, so a
  # build dir once configured with them still builds and tests everything here.
  cmake -S "$KILN_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKILN_SKIP_AGENTS=OFF -DKILN_SKIP_CLI=OFF -DKILN_SKIP_TESTS=OFF "$@" >/dev/null \
    || die "cmake configure failed"
  cmake --build "$dir" -j2 || die "build failed"
}

# kiln_build_fuzz DIR: the libFuzzer targets (tests/fuzz) in a clang build with ASan and UBSan;
# only they and the libraries they link are built. The default build's `ctest -L fuzz` runs them
# from DIR (its KILN_FUZZ_BINARY_DIR, by default the build dir's name with -fuzz).
kiln_build_fuzz() {
  local dir=$1
  CXX=clang++ cmake -S "$KILN_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_FUZZ=ON >/dev/null \
    || die "cmake configure of the fuzz build failed"
  cmake --build "$dir" -j2 --target kiln_fuzzers || die "fuzz build failed"
}

# PostgreSQL refuses to run as root: a dedicated unprivileged user owns the clusters.
ensure_pg_user() {
  id "$KILN_PG_USER" >/dev/null 2>&1 && return 0
  [ "$(id -u)" = 0 ] || die "user $KILN_PG_USER is missing and we are not root"
  useradd --system --no-create-home --shell /usr/sbin/nologin "$KILN_PG_USER"
}

as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$KILN_PG_USER" -- "$@"
  else
    "$@"
  fi
}

# pg_up DIR PORT [fsync on|off]: a private cluster in DIR/data, socket in DIR/run, loopback
# TCP off (socket only). Reuses an existing cluster; starts it if stopped.
pg_up() {
  local dir=$1 port=$2 fsync=${3:-on}
  mkdir -p "$dir/run"
  if [ "$(id -u)" = 0 ]; then ensure_pg_user; chown "$KILN_PG_USER" "$dir" "$dir/run"; fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    log "creating PostgreSQL cluster in $dir/data"
    as_pg "$PG_BIN/initdb" -D "$dir/data" -U "$KILN_PG_USER" --auth=trust -E UTF8 --locale=C.UTF-8 \
      >"$dir/initdb.log" 2>&1 || die "initdb failed, see $dir/initdb.log"
  fi
  if as_pg "$PG_BIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    return 0
  fi
  as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 start \
    -o "-p $port -k $dir/run -c listen_addresses='' -c fsync=$fsync -c synchronous_commit=$fsync -c max_connections=200 -c shared_buffers=256MB" \
    >/dev/null || die "PostgreSQL did not start, see $dir/postgres.log"
}

pg_down() {
  local dir=$1
  [ -f "$dir/data/PG_VERSION" ] || return 0
  as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}

# pg_url DIR PORT DBNAME
pg_url() { echo "host=$1/run port=$2 user=$KILN_PG_USER dbname=$3"; }

pg_createdb() {
  local dir=$1 port=$2 db=$3
  as_pg /usr/bin/psql -h "$dir/run" -p "$port" -U "$KILN_PG_USER" -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1 && return 0
  as_pg /usr/bin/createdb -h "$dir/run" -p "$port" -U "$KILN_PG_USER" "$db"
}

# wait_http URL SECONDS
wait_http() {
  local url=$1 secs=$2 i
  for ((i = 0; i < secs * 10; i++)); do
    curl -fsS -o /dev/null "$url" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# stop_pidfile FILE [TENTHS]: SIGTERM the process whose pid FILE holds, SIGKILL it if it is
# still there after TENTHS tenths of a second (default 50), remove FILE.
stop_pidfile() {
  local f=$1 tenths=${2:-50} pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq "$tenths"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
