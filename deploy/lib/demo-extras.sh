#!/usr/bin/env bash
# Demo extras, run by deploy/quickstart.sh once kilnd is up: the virtual fleet (kiln-vfleet),
# every host of the demo fleet simulated in one process and speaking the real agent protocol.
# Idempotent: a fleet already running is stopped (SIGTERM: it saves its state) and started anew.
#
# Env from quickstart: KILN_URL, KILN_TOKEN (admin), KILN_STATE (.kiln dir), KILN_BUILD.
# Optional: KILN_FLEET_TIME_SCALE (default 0.01: a 15 min diagnostic takes 9 s).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

: "${KILN_URL:?}" "${KILN_TOKEN:?}" "${KILN_STATE:?}" "${KILN_BUILD:?}"
BIN=$KILN_BUILD/agents/sim/fleet/kiln-vfleet
PIDFILE=$KILN_STATE/fleet.pid
LOGFILE=$KILN_STATE/fleet.log
SCALE=${KILN_FLEET_TIME_SCALE:-0.01}

if [ ! -x "$BIN" ]; then
  log "no $BIN: the virtual fleet is not started"
  exit 0
fi

# Stop the fleet this script started last time.
if [ -f "$PIDFILE" ]; then
  pid=$(cat "$PIDFILE")
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping the running virtual fleet (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
fi

umask 077
api() {  # METHOD PATH [JSON]
  curl -fsS -X "$1" -H "Authorization: Bearer $KILN_TOKEN" -H 'Content-Type: application/json' \
    ${3:+--data "$3"} "$KILN_URL$2"
}

# A fresh enrolment token for this start; the previous one is revoked. Hosts that enrolled
# before keep their agent tokens in $KILN_STATE/fleet and do not need it.
created=$(api POST /api/v1/tokens '{"role":"enroll","name":"demo-virtual-fleet"}') \
  || die "cannot create an enrolment token"
token=$(printf '%s' "$created" | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
token_id=$(printf '%s' "$created" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
[ -n "$token" ] || die "no token in the answer: $created"
if [ -f "$KILN_STATE/enroll-token.id" ]; then
  old=$(cat "$KILN_STATE/enroll-token.id")
  [ -n "$old" ] && [ "$old" != "$token_id" ] && api DELETE "/api/v1/tokens/$old" >/dev/null 2>&1 || true
fi
printf '%s\n' "$token" >"$KILN_STATE/enroll-token"
printf '%s\n' "$token_id" >"$KILN_STATE/enroll-token.id"
printf '%s\n' "$KILN_TOKEN" >"$KILN_STATE/fleet-api-token"

log "starting the virtual fleet (every demo host, time scale $SCALE), log $LOGFILE"
nohup "$BIN" --url "$KILN_URL" --enroll-token-file "$KILN_STATE/enroll-token" \
  --token-file "$KILN_STATE/fleet-api-token" --hosts all --state-dir "$KILN_STATE/fleet" \
  --time-scale "$SCALE" --status-interval 30 \
  ${KILN_FLEET_ARGS:-} >>"$LOGFILE" 2>&1 </dev/null &
echo $! >"$PIDFILE"
sleep 1
kill -0 "$(cat "$PIDFILE")" 2>/dev/null || die "the virtual fleet exited at once, see $LOGFILE"
