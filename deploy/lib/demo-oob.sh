#!/usr/bin/env bash
# The out-of-band corner of the demo (issue 32), run by deploy/quickstart.sh once kilnd is up:
#   - pod prn-b01-p02's 9 NVLink switch trays as simulated BMCs: kiln-hwsim bmc, Redfish over
#     plain HTTP on 127.0.0.1 to 127.0.0.9 (the whole 127/8 is loopback), one port;
#   - an out-of-band runner: a kiln-agent polling as runner:oob-demo with its own agent token,
#     running the real kiln-oob, the BMC credential as a systemd-style credential file;
#   - prn-b01-p02's management block re-imported to name them (switch_bmc, runner);
#   - a switch-tray bundle (demo-nvswitch@36.2601.0001, workflow switch-tray-firmware) whose
#     image lies in .kiln/oob, to roll out with kilnctl:
#       kilnctl rollout create --bundle demo-nvswitch@36.2601.0001 --pod prn-b01-p02 --start
# Idempotent: what it started last time is stopped first; the runner's previous token is revoked.
#
# Env from quickstart: KILN_URL, KILN_TOKEN (admin), KILN_STATE (.kiln dir), KILN_BUILD.
# Optional: KILN_DEMO_BMC_PORT (default 8643).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/demo-api.sh"

: "${KILN_URL:?}" "${KILN_TOKEN:?}" "${KILN_STATE:?}" "${KILN_BUILD:?}"
PORT=${KILN_DEMO_BMC_PORT:-8643}
DIR=$KILN_STATE/oob
POD=prn-b01-p02
RUNNER=oob-demo
HWSIM=$KILN_BUILD/agents/sim/kiln-hwsim
AGENT=$KILN_BUILD/agents/agent/kiln-agent
OOB=$KILN_BUILD/agents/oob/kiln-oob

stop_pidfile "$DIR/runner.pid"
for s in 1 2 3 4 5 6 7 8 9; do stop_pidfile "$DIR/switch-$s.pid"; done
for bin in "$HWSIM" "$AGENT" "$OOB"; do
  [ -x "$bin" ] || { log "no $bin: the out-of-band demo is not started"; exit 0; }
done

umask 077
mkdir -p "$DIR/creds" "$DIR/runner" "$DIR/bin"
# The switch trays' BMC password: made once, kept in the runner's credential file only.
[ -s "$DIR/bmc-password" ] || head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$DIR/bmc-password"
printf '{"user": "root", "password": "%s"}\n' "$(cat "$DIR/bmc-password")" >"$DIR/creds/bmc-tray-bmc"

log "starting prn-b01-p02's 9 switch-tray BMCs (kiln-hwsim bmc on 127.0.0.1-9:$PORT), logs $DIR/switch-N.log"
for s in 1 2 3 4 5 6 7 8 9; do
  rm -f "$DIR/switch-$s.port"
  nohup "$HWSIM" bmc --listen "127.0.0.$s:$PORT" --user root --password-file "$DIR/bmc-password" \
    --tray "$POD-s$s" --firmware BMC_Firmware=88.0002.1139 --firmware NVSwitch_Firmware=36.2501.0004 \
    --port-file "$DIR/switch-$s.port" >>"$DIR/switch-$s.log" 2>&1 </dev/null &
  echo $! >"$DIR/switch-$s.pid"
done
for s in 1 2 3 4 5 6 7 8 9; do
  for _ in $(seq 50); do [ -s "$DIR/switch-$s.port" ] && break; sleep 0.1; done
  [ -s "$DIR/switch-$s.port" ] || die "switch tray $s's BMC did not start (port $PORT taken?), see $DIR/switch-$s.log"
done

# The runner's token (shown once; the previous start's is revoked), in its state directory.
fresh_token agent "$RUNNER runner" "$DIR/runner/agent_token" "$RUNNER"
ln -sf "$OOB" "$DIR/bin/kiln-oob"
[ -s "$DIR/runner-boot-id" ] || cat /proc/sys/kernel/random/uuid >"$DIR/runner-boot-id"

log "starting the out-of-band runner $RUNNER (kiln-agent --runner), log $DIR/runner.log"
CREDENTIALS_DIRECTORY=$DIR/creds KILN_OOB_PLAIN_HTTP=1 nohup "$AGENT" run --url "$KILN_URL" --runner "$RUNNER" \
  --state-dir "$DIR/runner" --inventory-command true --boot-id-file "$DIR/runner-boot-id" \
  --path-prepend "$DIR/bin" --env-allow CREDENTIALS_DIRECTORY,KILN_OOB_PLAIN_HTTP --poll-wait 5 \
  >>"$DIR/runner.log" 2>&1 </dev/null &
echo $! >"$DIR/runner.pid"
sleep 1
kill -0 "$(cat "$DIR/runner.pid")" 2>/dev/null || die "the runner exited at once, see $DIR/runner.log"

# The pod's management block names its switch trays' BMCs and the runner (a re-import updates
# a known pod's block and nothing else).
cat >"$DIR/fleet.yaml" <<YAML
sites:
  - name: prn
    buildings:
      - name: prn-b01
        pods:
          - name: $POD
            platform: catalina
            management: {protocol: redfish, credential: tray-bmc, tray_bmc: "{host}-bmc.mgmt.prn.example", switch_bmc: "127.0.0.{tray}:$PORT", runner: $RUNNER}
YAML
curl -fsS -H "Authorization: Bearer $KILN_TOKEN" -H 'Content-Type: application/yaml' \
  --data-binary @"$DIR/fleet.yaml" "$KILN_URL/api/v1/fleet/import" >/dev/null \
  || die "re-importing $POD's management block failed"

# The switch-tray image (kiln-hwsim reads the component and version from its first line) and
# its bundle; a second start finds the bundle there already (200, unchanged).
printf 'KILN-HWSIM-FW NVSwitch_Firmware 36.2601.0001\n' >"$DIR/nvswitch-36.2601.0001.fwpkg"
head -c 200000 /dev/zero >>"$DIR/nvswitch-36.2601.0001.fwpkg"
chmod 0644 "$DIR/nvswitch-36.2601.0001.fwpkg"
sha=$(sha256sum "$DIR/nvswitch-36.2601.0001.fwpkg" | cut -d' ' -f1)
bundle="{\"name\":\"demo-nvswitch\",\"version\":\"36.2601.0001\",\"platforms\":[\"catalina\"],\"workflow\":\"switch-tray-firmware\",\"components\":[{\"kind\":\"nvswitch\",\"version\":\"36.2601.0001\",\"artifact\":\"$DIR/nvswitch-36.2601.0001.fwpkg\",\"sha256\":\"$sha\"}]}"
code=$(curl -sS -o "$DIR/bundle-answer.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $KILN_TOKEN" \
  -H 'Content-Type: application/json' --data "$bundle" "$KILN_URL/api/v1/bundles")
case "$code" in
  200|201) ;;  # created, or there already (unchanged)
  *) die "loading the switch-tray bundle failed ($code): $(cat "$DIR/bundle-answer.json")" ;;
esac
