#!/usr/bin/env python3
"""Run one firmware rollout through kilnd's REST API: plan, create, start, watch.

Standard library only (Python 3.11). Exit codes:
  0  the rollout completed and no pod failed (or --dry-run printed the plan)
  1  the rollout halted, was aborted, completed with failed pods, or --timeout passed
  2  bad usage, or kilnd refused a request (4xx: its error code and message are printed)
  3  kilnd could not be reached (or kept answering 5xx) after retries

  kiln_rollout.py --url http://127.0.0.1:8080 --token-file .kiln/admin-token \\
      --bundle gb200-fw-2026.12@1.0.0 --pods prn-b01-p02,prn-b01-p04 \\
      --policy-json '{"canary_pods": 1, "waves": ["100%"], "soak": "0s"}'
"""
import argparse
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
ENDED = {"completed", "halted", "aborting", "aborted"}  # as `kilnctl rollout watch`: aborting ends it
RETRY_STATUSES = {502, 503, 504}


class ApiError(Exception):
    """kilnd answered with an error body: {"error": {"code", "message", "details"}}."""

    def __init__(self, status, body):
        err = body.get("error", {}) if isinstance(body, dict) else {}
        self.status = status
        self.code = err.get("code", f"http_{status}")
        self.message = err.get("message", "")
        self.details = err.get("details", {}) or {}
        super().__init__(f"HTTP {status} {self.code}: {self.message}")


class Unreachable(Exception):
    """No answer (or only 5xx) from kilnd after every retry."""


class KilnClient:
    """One method per REST operation this script uses (api/openapi.yaml)."""

    def __init__(self, url, token, retries=5, backoff_s=1.0, timeout_s=30.0, ca_file=None):
        self.url = url.rstrip("/")
        self.token = token
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.tls = ssl.create_default_context(cafile=ca_file) if self.url.startswith("https:") else None
        self.replayed = False  # the last answer was a replay of an earlier Idempotency-Key's

    def _call(self, method, path, body=None, headers=None, retry=False):
        """Sends one request; retries connection errors and 502/503/504 only when `retry`
        (GETs, and a POST that carries an Idempotency-Key). Returns the decoded JSON body."""
        data = None if body is None else json.dumps(body).encode()
        hdrs = {"Authorization": f"Bearer {self.token}", "Accept": "application/json", **(headers or {})}
        if data is not None:
            hdrs["Content-Type"] = "application/json"
        attempts = self.retries + 1 if retry else 1
        problem = ""
        for attempt in range(attempts):
            if attempt:
                time.sleep(min(self.backoff_s * 2 ** (attempt - 1), 30))
            req = urllib.request.Request(self.url + path, data=data, headers=hdrs, method=method)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s, context=self.tls) as resp:
                    self.replayed = resp.headers.get("Idempotent-Replayed") == "true"
                    return json.loads(resp.read() or b"null")
            except urllib.error.HTTPError as e:
                try:
                    err = json.loads(e.read())
                except ValueError:
                    err = {}
                if e.code < 500:
                    raise ApiError(e.code, err) from None
                problem = f"HTTP {e.code}"
                if e.code not in RETRY_STATUSES:
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
                problem = str(getattr(e, "reason", e))
            if attempt + 1 < attempts:
                print(f"kiln: {method} {path}: {problem} (retrying)", file=sys.stderr)
        raise Unreachable(f"{method} {self.url}{path}: {problem}")

    def plan_rollout(self, bundle, selector, policy):
        """POST /rollouts with dry_run: the waves and the excluded pods; writes nothing."""
        body = {"bundle": bundle, "selector": selector, "policy": policy, "dry_run": True}
        return self._call("POST", "/api/v1/rollouts", body, retry=True)

    def create_rollout(self, bundle, selector, policy, idempotency_key):
        """POST /rollouts: a new rollout in state created. The same key answers the same rollout."""
        body = {"bundle": bundle, "selector": selector, "policy": policy}
        return self._call("POST", "/api/v1/rollouts", body, {"Idempotency-Key": idempotency_key}, retry=True)

    def start_rollout(self, rollout_id, reason=None):
        """POST /rollouts/{id}/start: created -> running (409 in any other state). Not retried."""
        return self._call("POST", f"/api/v1/rollouts/{q(rollout_id)}/start", {"reason": reason} if reason else None)

    def get_rollout(self, rollout_id):
        return self._call("GET", f"/api/v1/rollouts/{q(rollout_id)}", retry=True)

    def list_rollout_pods(self, rollout_id):
        """Every pod of the rollout (phase, wave, message), following next_cursor pages."""
        items, cursor = [], None
        while True:
            path = f"/api/v1/rollouts/{q(rollout_id)}/pods" + (f"?cursor={q(cursor)}" if cursor else "")
            page = self._call("GET", path, retry=True)
            items += page.get("items", [])
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def list_rollout_events(self, rollout_id):
        """The rollout's decisions, newest first: {id, at_ms, pod, kind, message}."""
        return self._call("GET", f"/api/v1/rollouts/{q(rollout_id)}/events", retry=True).get("items", [])


def q(s):
    return urllib.parse.quote(str(s), safe="")


def print_plan(plan):
    p = plan.get("plan", {})
    print(f"plan: {p.get('eligible', 0)} pods need {plan.get('bundle', {}).get('id', '?')}")
    for wave in p.get("waves", []):
        print(f"  {wave.get('name')}: {', '.join(wave.get('pods', [])) or '-'}")
    for ex in p.get("excluded", []):
        print(f"  excluded {ex.get('pod')}: {ex.get('reason')}")


def watch(client, rollout_id, interval_s, timeout_s):
    """Polls until the rollout ends; prints each pod's phase change once. Returns the last view."""
    deadline = time.monotonic() + timeout_s if timeout_s else None
    phases = {}
    while True:
        rollout = client.get_rollout(rollout_id)
        for pod in client.list_rollout_pods(rollout_id):
            name, phase = pod.get("pod"), pod.get("phase")
            if phases.get(name) != phase:
                why = pod.get("message") or pod.get("waiting_reason") or ""
                print(f"{time.strftime('%H:%M:%S')} {name}: {phases.get(name, 'new')} -> {phase}"
                      + (f" ({why})" if why and phase in ("pending", "failed") else ""), flush=True)
                phases[name] = phase
        if rollout.get("state") in ENDED:
            return rollout, False
        if deadline and time.monotonic() >= deadline:
            return rollout, True
        time.sleep(interval_s)


def report_failure(client, rollout):
    rid, state = rollout.get("id"), rollout.get("state")
    reason = rollout.get("halt_reason") or ""
    print(f"rollout {rid} {state}" + (f": {reason}" if reason else ""), file=sys.stderr)
    seen = set()
    for event in reversed(client.list_rollout_events(rid)):  # oldest first
        if event.get("kind") == "failed" and event.get("pod") not in seen:
            seen.add(event.get("pod"))
            print(f"  FAILED {event.get('pod')}: {event.get('message')}", file=sys.stderr)


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Plan, create, start and watch a Kiln rollout.")
    ap.add_argument("--url", default=os.environ.get("KILN_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--token-file", help="file holding an operator token (default: $KILN_TOKEN)")
    ap.add_argument("--ca-file", help="CA bundle for an https:// kilnd with a private CA")
    ap.add_argument("--bundle", required=True, help="bundle id (b-3) or name@version")
    sel = ap.add_mutually_exclusive_group()
    sel.add_argument("--selector-json", help='e.g. {"buildings": ["prn-b01"], "labels": {"row": "a"}}')
    sel.add_argument("--pods", help="comma-separated pod ids")
    ap.add_argument("--policy-json", default="{}", help='e.g. {"canary_pods": 1, "soak": "5m"}')
    ap.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    ap.add_argument("--timeout", type=float, default=0, help="stop watching after S seconds (0: never)")
    ap.add_argument("--interval", type=float, default=5, help="seconds between polls (default 5)")
    ap.add_argument("--retries", type=int, default=5, help="retries of a request kilnd did not answer (default 5)")
    ap.add_argument("--idempotency-key", default=None, help="reuse to retry a create safely (default: a new uuid4)")
    args = ap.parse_args(argv)
    try:
        args.selector = json.loads(args.selector_json) if args.selector_json else {}
        args.policy = json.loads(args.policy_json)
    except ValueError as e:
        ap.error(f"--selector-json/--policy-json: {e}")
    if args.pods:
        args.selector = {"pods": [p for p in args.pods.split(",") if p]}
    if not isinstance(args.selector, dict) or not isinstance(args.policy, dict):
        ap.error("--selector-json and --policy-json must be JSON objects")
    if args.token_file:
        with open(args.token_file, encoding="utf-8") as f:
            args.token = f.read().strip()
    else:
        args.token = os.environ.get("KILN_TOKEN", "").strip()
    if not args.token:
        ap.error("no token: give --token-file or set KILN_TOKEN")
    return args


def main(argv=None):
    try:
        args = parse_args(argv)  # argparse exits 2 on bad usage
    except OSError as e:
        print(f"kiln: {e}", file=sys.stderr)
        return EXIT_USAGE
    client = KilnClient(args.url, args.token, retries=args.retries, ca_file=args.ca_file)
    try:
        print_plan(client.plan_rollout(args.bundle, args.selector, args.policy))
        if args.dry_run:
            return EXIT_OK
        key = args.idempotency_key or str(uuid.uuid4())
        rollout = client.create_rollout(args.bundle, args.selector, args.policy, key)
        rid = rollout["id"]
        how = "replayed: created earlier with" if client.replayed else "created with"
        print(f"created rollout {rid} ({rollout.get('state')}; {how} Idempotency-Key {key})", flush=True)
        if rollout.get("state") == "created":  # a repeated key may answer a rollout already started
            rollout = client.start_rollout(rid)
            print(f"started rollout {rid}", flush=True)
        rollout, timed_out = watch(client, rid, args.interval, args.timeout)
        failed = rollout.get("counts", {}).get("failed", 0)
        if timed_out:
            print(f"timeout: {rid} is still {rollout.get('state')}; the rollout goes on", file=sys.stderr)
            return EXIT_FAILED
        if rollout.get("state") == "completed" and failed == 0:
            print(f"rollout {rid} completed: {rollout.get('counts', {}).get('succeeded', 0)} pods succeeded")
            return EXIT_OK
        report_failure(client, rollout)
        return EXIT_FAILED
    except ApiError as e:
        print(f"kiln: HTTP {e.status} {e.code}: {e.message}", file=sys.stderr)
        for key, value in e.details.items():  # fields: every bad field; state, pod...: the conflict
            if key == "field" and "fields" in e.details:
                continue
            for item in value if key == "fields" else [{"path": key, "message": value}]:
                print(f"  {item.get('path')}: {item.get('message')}", file=sys.stderr)
        return EXIT_USAGE
    except Unreachable as e:
        print(f"kiln: kilnd unreachable: {e}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except KeyboardInterrupt:
        print("kiln: interrupted; a started rollout goes on", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
