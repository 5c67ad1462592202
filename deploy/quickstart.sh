#!/usr/bin/env bash
# Kiln demo in one command: installs missing Debian packages, builds with -j2, starts a private
# PostgreSQL 15 cluster under .kiln/ (user "kiln", socket only), kilnd on 127.0.0.1:8080, imports
# a demo fleet, starts a simulated fleet of agents and a simulated job scheduler (kiln-jobsim,
# holding two pods with jobs), the switch-tray BMCs of one pod with an out-of-band runner
# (deploy/lib/demo-oob.sh), and prints the console URL and admin token. Running it again
# reuses what exists.
#
#   deploy/quickstart.sh          # start (or restart kilnd with a fresh build)
#   deploy/quickstart.sh --prometheus   # also a Prometheus scraping kilnd with deploy/prometheus's rules
#   deploy/quickstart.sh --slurm  # a real Slurm (munged, slurmctld, 8 slurmd for prn-b01-p01's hosts)
#                                 # instead of kiln-jobsim; kilnd runs with --scheduler slurm
#   deploy/quickstart.sh stop     # stop everything it started
#   deploy/quickstart.sh status
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

STATE=$KILN_ROOT/.kiln
PGDIR=$STATE/pg
PGPORT=${KILN_DEMO_PG_PORT:-54329}
LISTEN=${KILN_DEMO_LISTEN:-127.0.0.1:8080}
URL=http://$LISTEN
# kiln-jobsim (deploy/lib/demo-extras.sh) answers kilnd's job-scheduler hook here.
JOBSIM_LISTEN=${KILN_DEMO_JOBSIM_LISTEN:-127.0.0.1:8091}
BUILD=$KILN_ROOT/build
DBURL=$(pg_url "$PGDIR" "$PGPORT" kiln)

PROMETHEUS=0
SLURM=0
SLURM_DIR=$STATE/slurm
SLURM_NODES=prn-b01-p01-h01,prn-b01-p01-h02,prn-b01-p01-h03,prn-b01-p01-h04,prn-b01-p01-h05,prn-b01-p01-h06,prn-b01-p01-h07,prn-b01-p01-h08
PROM_LISTEN=${KILN_DEMO_PROMETHEUS_LISTEN:-127.0.0.1:9090}
ACTION=start
for arg in "$@"; do
  case "$arg" in
    --prometheus) PROMETHEUS=1 ;;
    --slurm) SLURM=1 ;;
    start|stop|status) ACTION=$arg ;;
    *) echo "usage: $0 [start [--prometheus] [--slurm]|stop|status]" >&2; exit 2 ;;
  esac
done

case "$ACTION" in
  stop)
    stop_pidfile "$STATE/prometheus.pid"
    stop_pidfile "$STATE/jobsim.pid"
    stop_pidfile "$STATE/oob/runner.pid"
    for s in 1 2 3 4 5 6 7 8 9; do stop_pidfile "$STATE/oob/switch-$s.pid"; done
    stop_pidfile "$STATE/fleet.pid" 100
    stop_pidfile "$STATE/kilnd.pid"
    [ -f "$SLURM_DIR/slurm.conf" ] && "$KILN_ROOT/deploy/lib/slurm-cluster.sh" stop "$SLURM_DIR" >/dev/null 2>&1 || true
    pg_down "$PGDIR"
    log "stopped (data kept in $STATE; rm -rf it for a clean start)"
    exit 0 ;;
  status)
    for p in kilnd fleet jobsim prometheus oob/runner; do
      if [ -f "$STATE/$p.pid" ] && kill -0 "$(cat "$STATE/$p.pid")" 2>/dev/null; then
        echo "$p: running (pid $(cat "$STATE/$p.pid"))"; else echo "$p: stopped"; fi
    done
    exit 0 ;;
  start) ;;
esac

ensure_packages "${KILN_PACKAGES[@]}"
"$KILN_ROOT/deploy/lib/browser-deps.sh" --console-only   # Node.js + web/dist (the console)
log "building (first build takes several minutes on 2 cores)"
kiln_build "$BUILD"

mkdir -p "$STATE"
pg_up "$PGDIR" "$PGPORT" on
pg_createdb "$PGDIR" "$PGPORT" kiln

stop_pidfile "$STATE/kilnd.pid"
log "starting kilnd on $URL"
hook=()
if [ "$SLURM" = 1 ]; then
  # A real Slurm of 8 nodes named as the canary pod's first hosts; kilnd drives it (--scheduler
  # slurm) as it would a production cluster (deploy/OPERATIONS.md, Slurm).
  log "starting a private Slurm cluster in $SLURM_DIR (munged, slurmctld, 8 slurmd)"
  "$KILN_ROOT/deploy/lib/slurm-cluster.sh" stop "$SLURM_DIR" >/dev/null 2>&1 || true
  "$KILN_ROOT/deploy/lib/slurm-cluster.sh" start "$SLURM_DIR" --nodes "$SLURM_NODES" >/dev/null \
    || die "the Slurm cluster did not start, see $SLURM_DIR/log"
  export SLURM_CONF=$SLURM_DIR/slurm.conf
  hook=(--scheduler slurm --slurm-interval 2)
elif [ -x "$BUILD/agents/sim/jobsim/kiln-jobsim" ]; then
  hook=(--scheduler-hook "http://$JOBSIM_LISTEN/release")
fi
nohup "$BUILD/orchestrator/kilnd/kilnd" --listen "$LISTEN" --database-url "$DBURL" \
  --admin-token-file "$STATE/admin-token" --web-root "$KILN_ROOT/web/dist" \
  --workflows-dir "$KILN_ROOT/workflows" "${hook[@]}" \
  >>"$STATE/kilnd.log" 2>&1 &
echo $! >"$STATE/kilnd.pid"
wait_http "$URL/healthz" 30 || die "kilnd did not come up, see $STATE/kilnd.log"
TOKEN=$(cat "$STATE/admin-token")

log "importing the demo fleet (deploy/demo/fleet.yaml)"
curl -fsS -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/yaml' \
  --data-binary @"$KILN_ROOT/deploy/demo/fleet.yaml" "$URL/api/v1/fleet/import" >/dev/null \
  || die "fleet import failed"

log "loading the example bundle (deploy/demo/bundle.yaml)"
curl -fsS -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/yaml' \
  --data-binary @"$KILN_ROOT/deploy/demo/bundle.yaml" "$URL/api/v1/bundles" >/dev/null \
  || die "loading the example bundle failed"

if [ -x "$KILN_ROOT/deploy/lib/demo-extras.sh" ]; then
  KILN_URL=$URL KILN_TOKEN=$TOKEN KILN_STATE=$STATE KILN_BUILD=$BUILD KILN_JOBSIM_LISTEN=$JOBSIM_LISTEN \
    KILN_NO_JOBSIM=$([ "$SLURM" = 1 ] && echo 1) "$KILN_ROOT/deploy/lib/demo-extras.sh"
fi
# Out of band (issue 32): prn-b01-p02's switch trays as simulated BMCs, a runner, a switch-tray bundle.
KILN_URL=$URL KILN_TOKEN=$TOKEN KILN_STATE=$STATE KILN_BUILD=$BUILD "$KILN_ROOT/deploy/lib/demo-oob.sh"

SCHED_LINES="                  .kiln/jobsim.log (simulated job scheduler: jobs on prn-b01-p01 and prn-b02-p02)"
TRY_LINES="  The canary prn-b01-p01 runs a job: the rollout waits (\"allocated\"), asks kiln-jobsim to
  release it, and drains it once the job has checkpointed and left (30 s)."
if [ "$SLURM" = 1 ]; then
  # A real job on the canary's first host: the rollout drains its node around it and waits.
  sbatch --parsable -w prn-b01-p01-h01 -o /dev/null -e /dev/null --chdir /tmp --wrap 'sleep 120' >/dev/null \
    || die "sbatch failed, see $SLURM_DIR/log"
  SCHED_LINES="    slurm:        export SLURM_CONF=$SLURM_DIR/slurm.conf; watch sinfo -N -o '%N %T %E'
                  (a job runs on prn-b01-p01-h01 for 2 minutes: squeue)"
  TRY_LINES="  Slurm runs a job on the canary's first node: kilnd drains that node around the job
  (ALLOCATED+DRAIN, reason 'kiln: ro-1 ...'), waits for it to end, drains the pod's other nodes,
  upgrades, validates and resumes them; sinfo shows each step."
fi

PROM_LINE=""
if [ "$PROMETHEUS" = 1 ]; then
  # A real Prometheus (Debian's) scraping kilnd every 5 s with a viewer token, with the shipped
  # recording and alerting rules (deploy/prometheus, OPERATIONS.md "Prometheus and Grafana").
  ensure_packages prometheus
  stop_pidfile "$STATE/prometheus.pid"
  mkdir -p "$STATE/prometheus"
  cp "$KILN_ROOT/deploy/prometheus/kiln-recording.yml" "$KILN_ROOT/deploy/prometheus/kiln-alerts.yml" "$STATE/prometheus/"
  [ -s "$STATE/prometheus/token" ] || curl -fsS -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
      -d '{"role": "viewer", "name": "demo prometheus"}' "$URL/api/v1/tokens" \
    | sed -n 's/.*"token":"\([^"]*\)".*/\1/p' >"$STATE/prometheus/token"
  [ -s "$STATE/prometheus/token" ] || die "could not create a viewer token for Prometheus"
  cat >"$STATE/prometheus/prometheus.yml" <<PROM
global: {scrape_interval: 5s, evaluation_interval: 5s}
rule_files: [kiln-recording.yml, kiln-alerts.yml]
scrape_configs:
  - job_name: kilnd
    metrics_path: /metrics
    authorization: {type: Bearer, credentials_file: $STATE/prometheus/token}
    static_configs: [{targets: ['$LISTEN']}]
PROM
  nohup /usr/bin/prometheus --config.file="$STATE/prometheus/prometheus.yml" --storage.tsdb.path="$STATE/prometheus/data" \
    --web.listen-address="$PROM_LISTEN" >"$STATE/prometheus.log" 2>&1 &
  echo $! >"$STATE/prometheus.pid"
  wait_http "http://$PROM_LISTEN/-/ready" 30 || die "Prometheus did not start, see $STATE/prometheus.log"
  PROM_LINE="    prometheus:   http://$PROM_LISTEN/   (try: kiln_rollout_pod_phase, kiln:rollout_pod_duration_seconds:p90)"
fi

cat <<MSG

  Kiln is running.
    console:      $URL/
    API:          $URL/api/v1   (curl -H "Authorization: Bearer \$(cat .kiln/admin-token)" $URL/api/v1/pods)
    admin token:  $TOKEN   (also in .kiln/admin-token)
$PROM_LINE
    logs:         .kiln/kilnd.log (kilnd), .kiln/fleet.log (simulated agents),
$SCHED_LINES
    stop:         deploy/quickstart.sh stop

  Try a rollout of the example bundle (see README.md):
    export KILN_TOKEN=\$(cat .kiln/admin-token)
    build/cli/kilnctl rollout plan --bundle gb200-fw-2026.12@1.0.0
    build/cli/kilnctl rollout create --bundle gb200-fw-2026.12@1.0.0 --start
    build/cli/kilnctl rollout watch ro-1
$TRY_LINES

  Switch trays through their own BMCs (an out-of-band runner, .kiln/oob/runner.log):
    build/cli/kilnctl rollout create --bundle demo-nvswitch@36.2601.0001 --pod prn-b01-p02 --start
    build/cli/kilnctl rollout watch ID       (the id it printed; then: build/cli/kilnctl pods show prn-b01-p02)

MSG
