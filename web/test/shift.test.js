// Issue 18, a shift's worth of console: honest reliability coverage, kilnd's targets,
// platforms from the fleet, the rollback preview, the downgrade mark, inert dialog backgrounds.
import assert from 'node:assert/strict';
import test from 'node:test';
import { inertOutside } from '../src/a11y.js';
import { heatmapPlatforms, platformOptions } from '../src/model.js';
import { coverage, fmtSpan, mtbiVerdict, rateVerdict } from '../src/reliability-model.js';
import { downgradeMark, p90Verdict, rollbackPods, rollbackPreview, versionChanges } from '../src/rollouts-model.js';

test('a 28-day window over 3 hours of history is not judged, and says over what span it is', () => {
  const r = { days: 28, covered_days: 3 / 24, history_start: '2026-12-06T01:00:00Z', per_8k_gpus_per_day: 214 };
  const cov = coverage(r);
  assert.equal(cov.partial, true);
  assert.equal(cov.short, true);
  assert.match(cov.text, /history starts 2026-12-06T01:00:00Z/);
  assert.match(cov.text, /28-day window holds only 3 h of it/);
  const v = rateVerdict(r.per_8k_gpus_per_day, 2, cov);
  assert.equal(v.ok, null, 'not a red verdict on 3 hours');
  assert.doesNotMatch(v.text, /×/, 'no ratio as if the window were covered');
  assert.match(v.text, /over 3 h of history only: not judged against the north star of 2/);
  assert.equal(mtbiVerdict(450, 1, 96000, cov).ok, null);
  // Ten days of a 28-day window: judged, with the span said.
  const ten = coverage({ days: 28, covered_days: 10, history_start: '2026-11-26T00:00:00Z' });
  assert.equal(ten.partial, true);
  assert.equal(ten.short, false);
  assert.deepEqual(rateVerdict(6, 2, ten), { ok: false, text: '3× the north star of 2 (over 10 days of history, not 28 days)' });
  // A covered window: as before.
  const full = coverage({ days: 28, covered_days: 28, history_start: '2026-01-01T00:00:00Z' });
  assert.equal(full.partial, false);
  assert.equal(full.text, '');
  assert.deepEqual(rateVerdict(6, 2, full), { ok: false, text: '3× the north star of 2' });
  // No history in scope at all; a window before the history.
  assert.match(coverage({ days: 7, covered_days: 0, history_start: null }).text, /No host in this scope has been in service/);
  assert.match(coverage({ days: 7, covered_days: 0, history_start: '2026-12-06T01:00:00Z' }, (t) => `<${t}>`).text, /starts <2026-12-06T01:00:00Z>, after this window/);
});

test('fmtSpan words a span of days', () => {
  assert.equal(fmtSpan(30 / 86400), '30 s');
  assert.equal(fmtSpan(25 / 1440), '25 min');
  assert.equal(fmtSpan(3 / 24 + 5 / 1440), '3 h 5 min');
  assert.equal(fmtSpan(3.5), '3.5 days');
});

test('the verdicts use the target they are given (kilnd configures it)', () => {
  assert.deepEqual(rateVerdict(0.4, 0.5), { ok: true, text: 'at or below the north star of 0.5' });
  assert.deepEqual(mtbiVerdict(192000, 2, 384000), { ok: false, text: '50% of the north star of 384,000' });
});

test('platforms come from the fleet: the heatmap column, plus a chosen one the fleet lacks', () => {
  const doc = { columns: ['id', 'site', 'building', 'platform'], rows: [['a', 's', 'b', 'vera'], ['b', 's', 'b', 'catalina'], ['c', 's', 'b', 'vera']] };
  assert.deepEqual(heatmapPlatforms(doc), ['catalina', 'vera']);
  assert.deepEqual(heatmapPlatforms({ columns: ['id'], rows: [['a']] }), []);
  assert.deepEqual(heatmapPlatforms(null), []);
  assert.deepEqual(platformOptions(['catalina', 'vera'], 'clemente'), ['catalina', 'vera', 'clemente']);
  assert.deepEqual(platformOptions(['catalina'], ['catalina', 'x']), ['catalina', 'x']);
  assert.deepEqual(platformOptions(['catalina'], ''), ['catalina']);
});

test('the P90 against kilnd\'s target', () => {
  assert.equal(p90Verdict(3600, 0, 7200), null);
  assert.equal(p90Verdict(3600, 2, undefined), null);
  assert.deepEqual(p90Verdict(3600, 2, 7200), { ok: true, text: 'within the target of 2 h' });
  assert.deepEqual(p90Verdict(10800, 2, 7200), { ok: false, text: '1 h over the target of 2 h' });
});

test('a downgrade is marked with the reason from its created event; a rollback names what it rolls back', () => {
  const view = { plan: { downgrades: [{ pod: 'p1', reasons: ['nic 28.43 -> 28.40 (older)'] }] }, rollback_of: null };
  const events = [
    { kind: 'admitted', pod: 'p1', message: 'x' },
    { kind: 'created', pod: '', message: 'rollout of bundle b-2 over 1 pods by t-1, a downgrade allowed because: NIC 28.43 drops links, INC-1' },
  ];
  assert.deepEqual(downgradeMark(view, events), { pods: 1, reason: 'NIC 28.43 drops links, INC-1', rollback_of: null });
  assert.equal(downgradeMark({ plan: { downgrades: [] }, rollback_of: null }, events), null);
  assert.deepEqual(downgradeMark({ plan: { downgrades: [] }, rollback_of: 'ro-1' }, []), { pods: 0, reason: '', rollback_of: 'ro-1' });
});

test('rollbackPreview: the previous bundle of each pod, a later rollout, pods with none', () => {
  const pod = (p, phase, extra = {}) => ({ pod: p, phase, run_id: null, started_at_ms: null, finished_at_ms: null, ...extra });
  const r1 = { id: 'ro-1', bundle: 'b-1', created_at_ms: 100, pods: [pod('a', 'succeeded', { finished_at_ms: 200 }), pod('b', 'succeeded', { finished_at_ms: 210 })] };
  const r0 = { id: 'ro-0', bundle: 'b-0', created_at_ms: 10, pods: [pod('a', 'succeeded', { finished_at_ms: 50 })] };
  const view = { id: 'ro-2', created_at_ms: 300 };
  const pods = [
    pod('a', 'succeeded', { run_id: 'r-1', started_at_ms: 400, finished_at_ms: 500 }),
    pod('b', 'aborted', { run_id: 'r-2', started_at_ms: 410 }),
    pod('c', 'aborted'),
  ];
  assert.deepEqual(rollbackPods(pods), { changed: ['a'], touched: ['b'] });
  const pre = rollbackPreview(view, pods, [r1, r0]);
  assert.equal(pre.bundle, 'b-1', 'the newest succeeded bundle before ro-2 started');
  assert.deepEqual(pre.pods, ['a', 'b']);
  assert.equal(pre.refusal, '');
  // A later rollout changed pod a: kilnd refuses, naming it.
  const r3 = { id: 'ro-3', bundle: 'b-3', created_at_ms: 600, pods: [pod('a', 'upgrading', { run_id: 'r-9' })] };
  const later = rollbackPreview(view, pods, [r1, r0, r3]);
  assert.deepEqual(later.later, { pod: 'a', rollout: 'ro-3' });
  assert.match(later.refusal, /changed again by rollout ro-3 after ro-2: roll back ro-3 first/);
  // No earlier bundle for a changed pod.
  const none = rollbackPreview(view, pods, [r3].map((r) => ({ ...r, created_at_ms: 1 })));
  assert.deepEqual(none.unknown, ['a'], 'a changed pod without an earlier bundle: kilnd refuses');
  assert.deepEqual(none.left, ['b'], 'a part-upgraded one: left out');
  assert.equal(none.asked, 2);
  assert.match(none.refusal, /no earlier bundle is known for pod a/);
  // Pods from two bundles.
  const two = rollbackPreview(view, pods, [r0, { ...r1, pods: [r1.pods[1]] }]);
  assert.deepEqual(two.bundles, ['b-0', 'b-1']);
  assert.match(two.refusal, /2 different bundles/);
  assert.match(rollbackPreview(view, [pod('c', 'aborted')], [r1]).refusal, /changed no pod/);
});

test('versionChanges pairs the components of two bundles by kind', () => {
  const now = { components: [{ kind: 'nic', version: '28.45' }, { kind: 'driver', version: '580' }] };
  const back = { components: [{ kind: 'nic', version: '28.44' }, { kind: 'bmc', version: '25.01' }] };
  assert.deepEqual(versionChanges(now, back), [
    { kind: 'nic', from: '28.45', to: '28.44' },
    { kind: 'driver', from: '580', to: null },
    { kind: 'bmc', from: null, to: '25.01' },
  ]);
});

test('inertOutside: every sibling of the dialog and its ancestors up to the root, none already inert', () => {
  const el = (name, children = []) => {
    const n = { name, children, parentElement: null, inert: false };
    for (const c of children) c.parentElement = n;
    return n;
  };
  const dialog = el('dialog');
  const backdrop = el('backdrop', [dialog]);
  const rows = el('rows');
  const header = el('header');
  const nav = el('nav');
  nav.inert = true;
  const main = el('main', [rows, backdrop]);
  const app = el('app', [header, nav, main]);
  const body = el('body', [app, el('script')]);
  const names = (list) => list.map((n) => n.name);
  assert.deepEqual(names(inertOutside(dialog, body)), ['rows', 'header', 'script']);
  assert.deepEqual(names(inertOutside(dialog, app)), ['rows', 'header']);
  assert.deepEqual(inertOutside(null, body), []);
});
