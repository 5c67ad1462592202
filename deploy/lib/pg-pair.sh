#!/usr/bin/env bash
# pg-pair.sh: a private PostgreSQL 15 primary with a streaming-replication standby on this
# machine (socket only, run as the unprivileged user "kiln": initdb refuses root), for the
# failover test (tests/e2e/failover_test.cc) and for trying a failover by hand.
#
#   pg-pair.sh start DIR PRIMARY_PORT STANDBY_PORT   # database "kiln" on both; prints the URL
#   pg-pair.sh stop-primary DIR [immediate|fast]     # the primary goes away (default immediate)
#   pg-pair.sh promote DIR                           # the standby becomes the primary
#   pg-pair.sh stop DIR                              # stops both (idempotent)
#
# Replication is synchronous (synchronous_standby_names='*', synchronous_commit=on): a commit
# returns only once the standby has it, so a promotion loses nothing committed, as Patroni's
# synchronous_mode gives in production (deploy/OPERATIONS.md).
# The URL kilnd takes lists both: host=DIR/primary/run,DIR/standby/run port=P,S
# target_session_attrs=read-write, so libpq connects to whichever is the primary now.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() { sed -n '5,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
(($# >= 2)) || usage
cmd=$1 DIR=$2

ctl() { as_pg "$PG_BIN/pg_ctl" "$@"; }

case $cmd in
  start)
    (($# == 4)) || usage
    P=$3 S=$4
    mkdir -p "$DIR/primary/run" "$DIR/standby/run"
    if [ "$(id -u)" = 0 ]; then ensure_pg_user; chown -R "$KILN_PG_USER" "$DIR"; fi
    as_pg "$PG_BIN/initdb" -D "$DIR/primary/data" -U "$KILN_PG_USER" --auth=trust -E UTF8 --locale=C.UTF-8 \
      >"$DIR/initdb.log" 2>&1 || die "initdb failed, see $DIR/initdb.log"
    opts="-c listen_addresses='' -c fsync=off -c max_connections=100 -c shared_buffers=64MB -c wal_level=replica"
    ctl -D "$DIR/primary/data" -l "$DIR/primary.log" -w -t 60 start -o "-p $P -k $DIR/primary/run $opts" >/dev/null \
      || die "the primary did not start, see $DIR/primary.log"
    as_pg /usr/bin/createdb -h "$DIR/primary/run" -p "$P" -U "$KILN_PG_USER" kiln
    as_pg /usr/bin/pg_basebackup -h "$DIR/primary/run" -p "$P" -U "$KILN_PG_USER" -D "$DIR/standby/data" -R -X stream --checkpoint=fast \
      >"$DIR/basebackup.log" 2>&1 || die "pg_basebackup failed, see $DIR/basebackup.log"
    ctl -D "$DIR/standby/data" -l "$DIR/standby.log" -w -t 60 start -o "-p $S -k $DIR/standby/run $opts" >/dev/null \
      || die "the standby did not start, see $DIR/standby.log"
    # Synchronous from now on: the standby is streaming.
    as_pg /usr/bin/psql -h "$DIR/primary/run" -p "$P" -U "$KILN_PG_USER" -d postgres -qtA \
      -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 100); do
      state=$(as_pg /usr/bin/psql -h "$DIR/primary/run" -p "$P" -U "$KILN_PG_USER" -d postgres -qtAc \
        "SELECT sync_state FROM pg_stat_replication" || true)
      [ "$state" = sync ] && break
      sleep 0.1
    done
    [ "$state" = sync ] || die "the standby is not a synchronous standby ($state), see $DIR/standby.log"
    echo "host=$DIR/primary/run,$DIR/standby/run port=$P,$S user=$KILN_PG_USER dbname=kiln target_session_attrs=read-write connect_timeout=3"
    ;;
  stop-primary)
    ctl -D "$DIR/primary/data" -m "${3:-immediate}" -w stop >/dev/null ;;
  promote)
    ctl -D "$DIR/standby/data" -w -t 60 promote >/dev/null ;;
  stop)
    for d in primary standby; do
      [ -f "$DIR/$d/data/PG_VERSION" ] && { ctl -D "$DIR/$d/data" -m immediate -w stop >/dev/null 2>&1 || true; }
    done
    ;;
  *) usage ;;
esac
