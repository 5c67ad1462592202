#!/usr/bin/env bash
# slurm-cluster.sh: a private, throwaway Slurm cluster on this one machine, for Kiln's tests and demo.
#
#   slurm-cluster.sh start DIR --nodes NAME,NAME,... [--port-base P] [--prolog PATH] [--epilog PATH]
#                              [--health-check PATH] [--health-check-interval SECS]
#                              [--prolog-flags FLAGS] [--prolog-slurmctld PATH] [--slurmd-timeout SECS]
#                              [--return-to-service 0|1|2]
#   slurm-cluster.sh stop DIR
#   slurm-cluster.sh status DIR
#   slurm-cluster.sh kill-node DIR NAME [SIGNAL]   (default KILL: the slurmd dies, its jobs' slurmstepd live on)
#   slurm-cluster.sh start-node DIR NAME           (restart that node's slurmd)
#
# Everything lives in DIR: slurm.conf, munge key/socket/pid/log/seed, StateSaveLocation, per-node
# spool dirs, logs, pid files. Nothing under /etc/slurm or /etc/munge is read or written and no
# system service is touched, so several clusters (different DIR and --port-base) run side by side.
#
# Daemons (Debian 12 slurm-wlm 22.05 / munge 0.5):
#   munged     as the `munge` user (munged refuses to run as root unless --force), own key and socket
#   slurmctld  as the `slurm` user (SlurmUser=slurm), SlurmctldPort=P (default derived from DIR)
#   slurmd     as root, one per node (`slurmd -N NAME`), each on its own port P+10+i, all with
#              NodeAddr=127.0.0.1 (distinct NodeHostName per node = node name). Jobs run as the
#              submitting user. No network namespaces are needed: per-node Port= works in Debian's
#              22.05 build (see docs/notes/slurm-facts.md). Nodes are therefore limited to 9 per DIR.
#
# start waits until every node is IDLE (timeout KILN_SLURM_START_TIMEOUT, default 60 s), then writes
# DIR/env (sourceable: `export SLURM_CONF=DIR/slurm.conf`) and prints the same to stdout.
# stop cancels jobs, kills every daemon whose pid is recorded in DIR/pids (and the slurmstepd
# processes those slurmd spawned), is idempotent, and also cleans up after a half-failed start.
# Needs root (slurmd and the setpriv switches to munge/slurm).
set -euo pipefail

SBIN=/usr/sbin
MUNGE_USER=munge
SLURM_USER=slurm
MARK_VAR=KILN_SLURM_CLUSTER_DIR   # exported into each daemon's environment, to find their children

die() { printf 'slurm-cluster: error: %s\n' "$*" >&2; exit 1; }
log() { printf 'slurm-cluster: %s\n' "$*" >&2; }

usage() {
  sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# pid_alive PID DIR: PID runs and its cmdline or environment names DIR (guards against reused pids)
pid_alive() {
  local pid=$1 dir=$2
  [[ -n "$pid" && -d /proc/$pid ]] || return 1
  if { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$dir/"; then return 0; fi
  { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qxF -- "$MARK_VAR=$dir"
}

# pids_marked DIR: every process whose environment carries our marker for DIR (slurmd, slurmstepd, ...)
pids_marked() {
  local dir=$1 p
  for p in /proc/[0-9]*; do
    { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qxF -- "$MARK_VAR=$dir" && echo "${p#/proc/}"
  done
  return 0
}

kill_wait() {  # kill_wait DIR PID...: TERM, wait up to 5 s, then KILL
  local dir=$1; shift
  local pid live=() i
  for pid in "$@"; do pid_alive "$pid" "$dir" && { kill -TERM "$pid" 2>/dev/null || true; live+=("$pid"); }; done
  ((${#live[@]})) || return 0
  for ((i = 0; i < 50; i++)); do
    local any=0
    for pid in "${live[@]}"; do pid_alive "$pid" "$dir" && any=1; done
    ((any)) || return 0
    sleep 0.1
  done
  for pid in "${live[@]}"; do pid_alive "$pid" "$dir" && kill -KILL "$pid" 2>/dev/null || true; done
  sleep 0.2
}

cmd_stop() {
  local dir=$1
  [[ -d "$dir" ]] || return 0
  dir=$(cd "$dir" && pwd -P)
  local ctld=""
  [[ -f "$dir/pids/slurmctld" ]] && ctld=$(cat "$dir/pids/slurmctld")
  # Cancel jobs first so their slurmstepd and user processes go away cleanly.
  if [[ -n "$ctld" ]] && pid_alive "$ctld" "$dir" && [[ -f "$dir/slurm.conf" ]]; then
    local jobs
    jobs=$(SLURM_CONF=$dir/slurm.conf timeout 5 squeue -h -o %i 2>/dev/null || true)
    [[ -n "$jobs" ]] && { SLURM_CONF=$dir/slurm.conf timeout 5 scancel $jobs >/dev/null 2>&1 || true; sleep 1; }
  fi
  local f pids=()
  for f in "$dir"/pids/slurmd.*; do [[ -f "$f" ]] && pids+=("$(cat "$f")"); done
  ((${#pids[@]})) && kill_wait "$dir" "${pids[@]}"
  # slurmstepd (and job processes) spawned by our slurmd carry the marker in their environment
  mapfile -t pids < <(pids_marked "$dir")
  ((${#pids[@]})) && kill_wait "$dir" "${pids[@]}"
  [[ -n "$ctld" ]] && kill_wait "$dir" "$ctld"
  [[ -f "$dir/pids/munged" ]] && kill_wait "$dir" "$(cat "$dir/pids/munged")"
  # network namespaces (only if a future version made any; recorded one per line)
  if [[ -f "$dir/netns" ]]; then
    while read -r ns; do [[ -n "$ns" ]] && ip netns del "$ns" 2>/dev/null || true; done <"$dir/netns"
    rm -f "$dir/netns"
  fi
  rm -f "$dir"/pids/* "$dir/env" "$dir/munge/munge.socket" "$dir/munge/munge.socket.lock"
  return 0
}

cmd_status() {
  local dir
  dir=$(cd "$1" && pwd -P) || die "no such DIR: $1"
  [[ -f "$dir/slurm.conf" ]] || die "no cluster in $dir"
  local f n
  for f in "$dir"/pids/*; do
    [[ -f "$f" ]] || continue
    n=$(cat "$f")
    if pid_alive "$n" "$dir"; then echo "${f##*/}: running (pid $n)"; else echo "${f##*/}: not running (pid $n)"; fi
  done
  SLURM_CONF=$dir/slurm.conf sinfo -N -o '%N %T %E'
}

# start_as USER NAME CMD...: start CMD in its own session as USER, record its pid in DIR/pids/NAME
start_as() {
  local user=$1 name=$2; shift 2
  local pre=()
  [[ "$user" != root ]] && pre=(setpriv --reuid="$user" --regid="$user" --init-groups --)
  env "$MARK_VAR=$DIR" setsid "${pre[@]}" "$@" </dev/null >>"$DIR/log/$name.out" 2>&1 &
  echo $! >"$DIR/pids/$name"
}

tails() {
  local f
  for f in "$DIR"/log/*; do
    [[ -f "$f" ]] || continue
    printf '==> %s <==\n' "$f" >&2
    tail -n 25 "$f" >&2
  done
}

fail_start() {
  log "start failed: $*"
  tails
  cmd_stop "$DIR"
  exit 1
}

cmd_start() {
  DIR=$1; shift
  local nodes="" port_base="" prolog="" epilog="" hc="" hc_interval=30 prolog_flags="" prolog_ctld=""
  local slurmd_timeout=${KILN_SLURMD_TIMEOUT:-10} rts=2
  while (($#)); do
    case $1 in
      --nodes) nodes=$2; shift 2 ;;
      --port-base) port_base=$2; shift 2 ;;
      --prolog) prolog=$2; shift 2 ;;
      --epilog) epilog=$2; shift 2 ;;
      --health-check) hc=$2; shift 2 ;;
      --health-check-interval) hc_interval=$2; shift 2 ;;
      --prolog-flags) prolog_flags=$2; shift 2 ;;
      --prolog-slurmctld) prolog_ctld=$2; shift 2 ;;
      --slurmd-timeout) slurmd_timeout=$2; shift 2 ;;
      --return-to-service) rts=$2; shift 2 ;;
      *) usage ;;
    esac
  done
  [[ -n "$nodes" ]] || die "--nodes is required"
  [[ $EUID -eq 0 ]] || die "must run as root (slurmd runs as root)"
  id "$MUNGE_USER" >/dev/null 2>&1 || die "user $MUNGE_USER missing (apt-get install munge)"
  id "$SLURM_USER" >/dev/null 2>&1 || die "user $SLURM_USER missing (apt-get install slurmctld)"
  local p
  for p in "$prolog" "$epilog" "$hc" "$prolog_ctld"; do
    [[ -z "$p" || ( "$p" == /* && -x "$p" ) ]] || die "$p: must be an absolute path to an executable"
  done

  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd -P)
  if [[ -f "$DIR/pids/slurmctld" ]] && pid_alive "$(cat "$DIR/pids/slurmctld")" "$DIR"; then
    die "a cluster already runs in $DIR (stop it first)"
  fi
  cmd_stop "$DIR"   # leftovers of a half-failed start

  local hash cluster
  hash=$(printf '%s' "$DIR" | sha1sum | cut -c1-10)
  cluster="kiln${hash}"
  if [[ -z "$port_base" ]]; then
    # Below the kernel's ephemeral range (32768.. here): a port in it can be any live outgoing
    # connection's local port, and a slurmd once failed to bind 47252 that way in deploy/test.sh.
    local low
    low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    ((low > 12000)) || low=32768
    port_base=$((10000 + (16#${hash:0:6} % ((low - 10000) / 20 - 1)) * 20))   # 10000..low-40, step 20
  fi
  [[ "$port_base" =~ ^[0-9]+$ ]] && ((port_base >= 1024 && port_base <= 65000)) || die "bad --port-base $port_base"

  IFS=, read -r -a NODES <<<"$nodes"
  local n
  for n in "${NODES[@]}"; do [[ "$n" =~ ^[a-z][a-z0-9-]*$ ]] || die "bad node name '$n'"; done
  ((${#NODES[@]} <= 9)) || die "at most 9 nodes (ports P+10..P+18)"

  # DIR and its parents must be traversable by munge, slurm and job users.
  chmod 755 "$DIR"
  rm -rf "$DIR/state" "$DIR/spool" "$DIR/log"
  mkdir -p "$DIR/pids" "$DIR/log" "$DIR/state" "$DIR/spool" "$DIR/munge"
  chown "$SLURM_USER:$SLURM_USER" "$DIR/state" "$DIR/log"
  chmod 755 "$DIR/log" "$DIR/spool"
  touch "$DIR/log/slurmctld.log" && chown "$SLURM_USER:$SLURM_USER" "$DIR/log/slurmctld.log"

  # munge: own key, socket, pid, log and seed, all in DIR/munge (owned by munge, 0755 so clients
  # can reach the socket; munged rejects group/other-writable dirs).
  chown "$MUNGE_USER:$MUNGE_USER" "$DIR/munge"
  chmod 755 "$DIR/munge"
  if [[ ! -s "$DIR/munge/munge.key" ]]; then
    setpriv --reuid="$MUNGE_USER" --regid="$MUNGE_USER" --init-groups -- \
      mungekey --create --keyfile="$DIR/munge/munge.key" || die "mungekey failed"
  fi
  chmod 600 "$DIR/munge/munge.key"
  local sock=$DIR/munge/munge.socket
  start_as "$MUNGE_USER" munged "$SBIN/munged" --foreground --socket="$sock" \
    --key-file="$DIR/munge/munge.key" --pid-file="$DIR/munge/munged.pid" \
    --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/munged.seed"
  local i
  for ((i = 0; i < 50; i++)); do [[ -S "$sock" ]] && break; sleep 0.1; done
  [[ -S "$sock" ]] || fail_start "munged did not create $sock"

  # slurm.conf
  local conf=$DIR/slurm.conf nodelines="" idx=0
  for n in "${NODES[@]}"; do
    nodelines+="NodeName=$n NodeHostName=$n NodeAddr=127.0.0.1 Port=$((port_base + 10 + idx)) CPUs=1 RealMemory=1000 State=UNKNOWN"$'\n'
    idx=$((idx + 1))
  done
  {
    cat <<EOF
# generated by deploy/lib/slurm-cluster.sh for $DIR
ClusterName=$cluster
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port_base
SlurmdPort=$((port_base + 1))
SlurmUser=$SLURM_USER
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire also sets how long a requeued job waits before it may start again (default 120 s).
AuthInfo=socket=$sock,cred_expire=10
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/pids/slurmctld.pid
SlurmdPidFile=$DIR/spool/slurmd.%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/linear
SchedulerType=sched/backfill
# A job whose prolog failed (Kiln's pre-job check) is requeued, not held, so it runs elsewhere.
SchedulerParameters=nohold_on_prolog_fail
SwitchType=switch/none
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=$rts
SlurmdTimeout=$slurmd_timeout
SlurmctldTimeout=30
MessageTimeout=5
InactiveLimit=0
KillWait=5
MinJobAge=300
ResumeTimeout=60
TreeWidth=65533
PlugStackConfig=$DIR/plugstack.conf
EOF
    [[ -n "$prolog" ]] && echo "Prolog=$prolog"
    [[ -n "$epilog" ]] && echo "Epilog=$epilog"
    [[ -n "$prolog_flags" ]] && echo "PrologFlags=$prolog_flags"
    [[ -n "$prolog_ctld" ]] && echo "PrologSlurmctld=$prolog_ctld"
    if [[ -n "$hc" ]]; then
      echo "HealthCheckProgram=$hc"
      echo "HealthCheckInterval=$hc_interval"
      echo "HealthCheckNodeState=ANY"
    fi
    printf '%s' "$nodelines"
    echo "PartitionName=kiln Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE"
  } >"$conf"
  : >"$DIR/plugstack.conf"
  chmod 644 "$conf" "$DIR/plugstack.conf"
  for n in "${NODES[@]}"; do mkdir -p "$DIR/spool/$n"; done

  export SLURM_CONF=$conf
  start_as "$SLURM_USER" slurmctld "$SBIN/slurmctld" -D -i -f "$conf"
  for ((i = 0; i < 100; i++)); do
    scontrol ping 2>/dev/null | grep -q 'is UP' && break
    pid_alive "$(cat "$DIR/pids/slurmctld")" "$DIR" || fail_start "slurmctld exited"
    sleep 0.1
  done
  scontrol ping 2>/dev/null | grep -q 'is UP' || fail_start "slurmctld did not answer scontrol ping"

  for n in "${NODES[@]}"; do
    start_as root "slurmd.$n" "$SBIN/slurmd" -D -N "$n" -f "$conf"
  done

  local timeout=${KILN_SLURM_START_TIMEOUT:-60} t0=$SECONDS states
  while :; do
    states=$(sinfo -h -N -o '%N %T' 2>/dev/null || true)
    if [[ -n "$states" ]] && ! grep -qv ' idle$' <<<"$states" \
      && (($(wc -l <<<"$states") == ${#NODES[@]})); then
      break
    fi
    for n in "${NODES[@]}"; do
      pid_alive "$(cat "$DIR/pids/slurmd.$n")" "$DIR" || fail_start "slurmd for $n exited"
    done
    ((SECONDS - t0 < timeout)) || fail_start "nodes not IDLE after ${timeout}s: $(tr '\n' ';' <<<"$states")"
    sleep 0.2
  done

  cat >"$DIR/env" <<EOF
export SLURM_CONF=$conf
export KILN_SLURM_DIR=$DIR
export KILN_SLURM_CLUSTER=$cluster
export KILN_SLURM_PORT_BASE=$port_base
EOF
  chmod 644 "$DIR/env"
  cat "$DIR/env"
}

cmd_kill_node() {
  local dir name=$2 sig=${3:-KILL} pid
  dir=$(cd "$1" && pwd -P) || die "no such DIR: $1"
  [[ -f "$dir/pids/slurmd.$name" ]] || die "no slurmd recorded for node $name"
  pid=$(cat "$dir/pids/slurmd.$name")
  pid_alive "$pid" "$dir" || die "slurmd for $name is not running"
  kill -"$sig" "$pid"
}

cmd_start_node() {
  local name=$2
  DIR=$(cd "$1" && pwd -P) || die "no such DIR: $1"
  [[ -f "$DIR/pids/slurmd.$name" ]] || die "no slurmd recorded for node $name"
  ! pid_alive "$(cat "$DIR/pids/slurmd.$name")" "$DIR" || die "slurmd for $name already runs"
  start_as root "slurmd.$name" "$SBIN/slurmd" -D -N "$name" -f "$DIR/slurm.conf"
}

(($# >= 2)) || usage
case $1 in
  start) shift; cmd_start "$@" ;;
  stop) cmd_stop "$2" ;;
  status) cmd_status "$2" ;;
  kill-node) (($# >= 3)) || usage; cmd_kill_node "$2" "$3" "${4:-KILL}" ;;
  start-node) (($# >= 3)) || usage; cmd_start_node "$2" "$3" ;;
  *) usage ;;
esac
