#!/usr/bin/env bash
# Demo extras, run by deploy/quickstart.sh once kilnd is up: the virtual fleet (kiln-vfleet),
# every host of the demo fleet simulated in one process and speaking the real agent protocol,
# and a simulated job scheduler (kiln-jobsim) running jobs on two pods, which answers kilnd's
# --scheduler-hook and lets a pod go --hold seconds after a rollout asks for it.
# Idempotent: what runs already is stopped (SIGTERM: the fleet saves its state) and started anew.
#
# Env from quickstart: KILN_URL, KILN_TOKEN (admin), KILN_STATE (.kiln dir), KILN_BUILD,
# KILN_JOBSIM_LISTEN (HOST:PORT of the hook kilnd was started with).
# Optional: KILN_FLEET_TIME_SCALE (default 0.01: a 15 min diagnostic takes 9 s),
# KILN_JOBSIM_PODS (default prn-b01-p01,prn-b02-p02), KILN_JOBSIM_HOLD (seconds, default 30).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/demo-api.sh"

: "${KILN_URL:?}" "${KILN_TOKEN:?}" "${KILN_STATE:?}" "${KILN_BUILD:?}"
BIN=$KILN_BUILD/agents/sim/fleet/kiln-vfleet
PIDFILE=$KILN_STATE/fleet.pid
LOGFILE=$KILN_STATE/fleet.log
SCALE=${KILN_FLEET_TIME_SCALE:-0.01}
JOBSIM_BIN=$KILN_BUILD/agents/sim/jobsim/kiln-jobsim
JOBSIM_LISTEN=${KILN_JOBSIM_LISTEN:-127.0.0.1:8091}
JOBSIM_PODS=${KILN_JOBSIM_PODS:-prn-b01-p01,prn-b02-p02}
JOBSIM_HOLD=${KILN_JOBSIM_HOLD:-30}

# What this script started last time.
stop_pidfile "$KILN_STATE/jobsim.pid"
stop_pidfile "$PIDFILE" 100

umask 077

if [ ! -x "$BIN" ]; then
  log "no $BIN: the virtual fleet is not started"
else
  # Hosts that enrolled before keep their agent tokens in $KILN_STATE/fleet and do not need
  # the enrolment token.
  fresh_token enroll demo-virtual-fleet "$KILN_STATE/enroll-token"
  printf '%s\n' "$KILN_TOKEN" >"$KILN_STATE/fleet-api-token"

  log "starting the virtual fleet (every demo host, time scale $SCALE), log $LOGFILE"
  nohup "$BIN" --url "$KILN_URL" --enroll-token-file "$KILN_STATE/enroll-token" \
    --token-file "$KILN_STATE/fleet-api-token" --hosts all --state-dir "$KILN_STATE/fleet" \
    --time-scale "$SCALE" --status-interval 30 \
    ${KILN_FLEET_ARGS:-} >>"$LOGFILE" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  sleep 1
  kill -0 "$(cat "$PIDFILE")" 2>/dev/null || die "the virtual fleet exited at once, see $LOGFILE"
fi

# The job scheduler: jobs on $JOBSIM_PODS (their non-spare hosts allocated), released
# $JOBSIM_HOLD s after kilnd's hook asks. Allocate and release are operator host actions.
if [ -n "${KILN_NO_JOBSIM:-}" ]; then
  log "a real Slurm is the job scheduler (quickstart --slurm): kiln-jobsim is not started"
  exit 0
fi
if [ ! -x "$JOBSIM_BIN" ]; then
  log "no $JOBSIM_BIN: the simulated job scheduler is not started"
  exit 0
fi
fresh_token operator demo-jobsim "$KILN_STATE/jobsim-token"
log "starting kiln-jobsim on $JOBSIM_LISTEN (jobs on $JOBSIM_PODS, hold $JOBSIM_HOLD s), log $KILN_STATE/jobsim.log"
nohup "$JOBSIM_BIN" --url "$KILN_URL" --token-file "$KILN_STATE/jobsim-token" --listen "$JOBSIM_LISTEN" \
  --hold "$JOBSIM_HOLD" --allocate "$JOBSIM_PODS" >>"$KILN_STATE/jobsim.log" 2>&1 </dev/null &
echo $! >"$KILN_STATE/jobsim.pid"
sleep 1
kill -0 "$(cat "$KILN_STATE/jobsim.pid")" 2>/dev/null || die "kiln-jobsim exited at once, see $KILN_STATE/jobsim.log"
