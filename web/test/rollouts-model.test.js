// Pure helpers of the rollout views (node --test; `npm test` in web/).
import assert from 'node:assert/strict';
import test from 'node:test';
import {
  createBody,
  createGate,
  exclusionCounts,
  fmtEta,
  offeredVerbs,
  parseLabels,
  parseWaves,
  parseWindows,
  planDowngrades,
  planSummary,
  podSpans,
  podVerbs,
  policyBody,
  policyDefaults,
  refusedFields,
  rolloutFieldErrors,
  rolloutProgress,
  selectorBody,
  timelineRange,
  waitClass,
  waitingByClass,
} from '../src/rollouts-model.js';

test('policyBody sends nothing for the defaults and only the changed fields otherwise', () => {
  assert.deepEqual(policyBody(policyDefaults()), {});
  assert.deepEqual(policyBody({ ...policyDefaults(), max_concurrent_pods: '4', soak: '30s', waves: '5, 20, 100' }), {
    max_concurrent_pods: 4,
    soak: '30s',
    waves: [5, 20, 100],
  });
  assert.deepEqual(policyBody({ ...policyDefaults(), waves: '25%,100%' }).waves, ['25%', '100%']);
});

test('policyBody sends capacity_floor and failure_budget whole, keeping the parts still set', () => {
  assert.deepEqual(policyBody({ ...policyDefaults(), max_pods_down: '3' }).capacity_floor, { max_percent_down: 25, max_pods_down: 3 });
  assert.deepEqual(policyBody({ ...policyDefaults(), max_percent_down: '' }).capacity_floor, {});
  assert.deepEqual(policyBody({ ...policyDefaults(), failure_budget_percent: '10' }).failure_budget, { pods: 1, percent: 10 });
  // Not a number: sent as typed, so kilnd names the field in its 422.
  assert.equal(policyBody({ ...policyDefaults(), canary_pods: 'two' }).canary_pods, 'two');
});

test('policyBody sends maintenance windows as a list, split on semicolons or lines', () => {
  assert.equal(policyBody(policyDefaults()).windows, undefined);
  assert.deepEqual(policyBody({ ...policyDefaults(), windows: 'mon-fri  22:00-06:00; sat,sun 00:00-24:00\n' }).windows, [
    'mon-fri 22:00-06:00',
    'sat,sun 00:00-24:00',
  ]);
  assert.deepEqual(parseWindows(' ; \n'), []);
});

test('parseWaves keeps percentages as text and counts as numbers', () => {
  assert.deepEqual(parseWaves('10%, 50%  100%'), ['10%', '50%', '100%']);
  assert.deepEqual(parseWaves('1,x'), [1, 'x']);
});

test('selectorBody leaves empty lists out and parses labels', () => {
  assert.deepEqual(selectorBody({ sites: '', buildings: '', platforms: [], pods: '', labels: '' }), {});
  assert.deepEqual(selectorBody({ sites: 'prn', buildings: 'prn-b01, prn-b02', platforms: ['catalina'], pods: 'a\nb', labels: 'row=a, rack = 3' }), {
    sites: ['prn'],
    buildings: ['prn-b01', 'prn-b02'],
    platforms: ['catalina'],
    pods: ['a', 'b'],
    labels: { row: 'a', rack: '3' },
  });
  assert.deepEqual(parseLabels('gpu'), { gpu: '' });
});

test('rolloutFieldErrors maps kilnd paths onto the form fields', () => {
  const e = rolloutFieldErrors({
    fields: [
      { path: 'policy.waves[1]', message: 'bad wave' },
      { path: 'policy.capacity_floor.max_pods_down', message: 'bad floor' },
      { path: 'policy.failure_budget.percent', message: 'bad pct' },
      { path: 'selector.sites', message: 'bad sites' },
      { path: 'policy.windows[0]', message: 'bad window' },
    ],
  });
  assert.deepEqual(e, {
    waves: 'bad wave',
    max_pods_down: 'bad floor',
    failure_budget_percent: 'bad pct',
    'selector:sites': 'bad sites',
    windows: 'bad window',
  });
  assert.deepEqual(rolloutFieldErrors({ field: 'bundle' }, 'no bundle'), { bundle: 'no bundle' });
});

test('planSummary and exclusionCounts describe a dry run', () => {
  const plan = {
    eligible: 4,
    waves: [
      { index: 0, name: 'canary', pods: ['a'] },
      { index: 1, name: 'wave 1', pods: ['b'] },
      { index: 2, name: 'wave 2', pods: ['c', 'd'] },
    ],
    excluded: [
      { pod: 'e', reason: 'incompatible: platform clemente is not one of the bundle\'s' },
      { pod: 'f', reason: 'incompatible: platform clemente is not one of the bundle\'s' },
      { pod: 'g', reason: 'compliant' },
      { pod: 'h', reason: 'in rollout r-1' },
      { pod: 'i', reason: 'not in service (pod is down)' },
    ],
  };
  assert.equal(planSummary(plan), '4 eligible pods in 3 waves (1, 1, 2); 5 excluded');
  assert.deepEqual(exclusionCounts(plan.excluded), { incompatible: 2, compliant: 1, 'in another rollout': 1, 'not in service': 1 });
});

test('offeredVerbs follows the rollout state; rollback only when a pod was upgraded, failed or aborted', () => {
  const ids = (s, c) => offeredVerbs(s, c).map((v) => v.id);
  assert.deepEqual(ids('created', {}), ['start', 'abort']);
  assert.deepEqual(ids('running', {}), ['pause', 'abort']);
  assert.deepEqual(ids('paused', { succeeded: 0 }), ['resume', 'abort']);
  assert.deepEqual(ids('halted', { succeeded: 2 }), ['resume', 'abort', 'rollback']);
  assert.deepEqual(ids('aborting', {}), []);
  assert.deepEqual(ids('completed', { succeeded: 1 }), ['rollback']);
  // A failed or aborted pod may have flashed some hosts: rollback is offered too.
  assert.deepEqual(ids('halted', { succeeded: 0, failed: 2 }), ['resume', 'abort', 'rollback']);
  assert.deepEqual(ids('aborted', { succeeded: 0, aborted: 1 }), ['rollback']);
  assert.deepEqual(ids('aborted', { succeeded: 0, failed: 0, aborted: 0, pending: 3 }), []);
  assert.deepEqual(podVerbs('failed'), ['retry', 'skip']);
  assert.deepEqual(podVerbs('pending'), ['skip']);
  assert.deepEqual(podVerbs('upgrading'), []);
});

test('waitClass is the text before the colon', () => {
  assert.equal(waitClass('concurrency: 2 of max_concurrent_pods 2 in flight'), 'concurrency');
  assert.equal(waitClass('paused'), 'paused');
  assert.equal(waitClass('wave 2 starts after wave 0'), 'wave');
  assert.deepEqual(waitingByClass({ 'wave 1 starts after wave 0': 1, 'wave 2 starts after wave 0': 2, concurrency: 1 }), [
    { cls: 'wave', n: 3, texts: ['wave 1 starts after wave 0', 'wave 2 starts after wave 0'] },
    { cls: 'concurrency', n: 1, texts: [] },
  ]);
  assert.equal(waitClass(''), '');
});

test('rolloutProgress counts finished pods and names the rest', () => {
  const p = rolloutProgress({ total: 6, counts: { succeeded: 2, failed: 1, upgrading: 1, pending: 2 } });
  assert.equal(p.done, 3);
  assert.equal(p.inFlight, 1);
  assert.equal(p.text, '3 of 6 pods done · 2 succeeded, 1 failed, 1 in flight, 2 pending');
});

test('podSpans turns a pod\'s events into phase spans, the open one ending now', () => {
  const ev = [
    { id: 3, pod: 'p1', kind: 'validating', at_ms: 3000 },
    { id: 1, pod: 'p1', kind: 'admitted', at_ms: 1000 },
    { id: 2, pod: 'p1', kind: 'upgrading', at_ms: 2000 },
    { id: 9, pod: 'p2', kind: 'admitted', at_ms: 1500 },
  ];
  assert.deepEqual(podSpans({ pod: 'p1', phase: 'validating', started_at_ms: 1000 }, ev, 5000), [
    { phase: 'draining', from: 1000, to: 2000 },
    { phase: 'upgrading', from: 2000, to: 3000 },
    { phase: 'validating', from: 3000, to: 5000, open: true },
  ]);
  const done = [...ev, { id: 4, pod: 'p1', kind: 'succeeded', at_ms: 4000 }];
  const spans = podSpans({ pod: 'p1', phase: 'succeeded', started_at_ms: 1000, finished_at_ms: 4000 }, done, 9000);
  assert.deepEqual(spans[2], { phase: 'validating', from: 3000, to: 4000 });
  assert.deepEqual(spans[3], { phase: 'succeeded', from: 4000, to: 4000, mark: true });
  // Without events: one span from the timestamps.
  assert.deepEqual(podSpans({ pod: 'p3', phase: 'upgrading', started_at_ms: 100 }, [], 600), [{ phase: 'upgrading', from: 100, to: 600, open: true }]);
  assert.deepEqual(podSpans({ pod: 'p4', phase: 'pending' }, [], 600), []);
});

test('timelineRange spans the earliest start to now while the rollout runs', () => {
  const pods = [{ started_at_ms: 2000, finished_at_ms: 3000 }, { started_at_ms: 2500 }, {}];
  assert.deepEqual(timelineRange({ started_at_ms: 1500 }, pods, 9000), { from: 1500, to: 9000 });
  assert.deepEqual(timelineRange({ started_at_ms: 1500, finished_at_ms: 3000 }, [pods[0]], 9000), { from: 1500, to: 3000 });
  assert.equal(timelineRange({}, [{}], 9000), null);
});

test('fmtEta prints the two largest units', () => {
  assert.equal(fmtEta(null), '—');
  assert.equal(fmtEta(42.4), '42 s');
  assert.equal(fmtEta(7200 + 300), '2 h 5 min');
  assert.equal(fmtEta(600), '10 min');
  assert.equal(fmtEta(86400 * 2 + 3600), '2 d 1 h');
});

// A dry run of an older bundle after the fleet moved on (issue 18).
const downgradeAnswer = {
  plan: {
    eligible: 3,
    waves: [{ index: 0, name: 'canary', pods: ['p1'] }, { index: 1, name: 'wave 1', pods: ['p2', 'p3'] }],
    excluded: [],
    downgrades: [
      { pod: 'p1', reasons: ['nic 28.45.1200 -> 28.44.1036 (older)'] },
      { pod: 'p2', reasons: ['nic 28.45.1200 -> 28.44.1036 (older)'] },
    ],
  },
  warnings: ['2 pods would move to older versions (2 pods: p1: nic 28.45.1200 -> 28.44.1036 (older), ...)'],
};

test('planDowngrades reads plan.downgrades and warnings; an answer without them has none', () => {
  const d = planDowngrades(downgradeAnswer);
  assert.equal(d.count, 2);
  assert.deepEqual(d.pods[0], { pod: 'p1', reasons: ['nic 28.45.1200 -> 28.44.1036 (older)'] });
  assert.equal(d.warnings.length, 1);
  assert.deepEqual(planDowngrades({ plan: { eligible: 1, waves: [], excluded: [] } }), { pods: [], warnings: [], count: 0 });
  assert.equal(planDowngrades(null).count, 0);
});

test('createGate: without downgrades the form behaves as before', () => {
  const g = createGate({ plan: { eligible: 4, downgrades: [] } }, { allow: false, reason: '' });
  assert.deepEqual(
    { enabled: g.enabled, create: g.createLabel, start: g.startLabel, n: g.downgrades },
    { enabled: true, create: 'Create (start later)', start: 'Create and start', n: 0 },
  );
  assert.equal(createGate({ plan: { eligible: 0 } }, {}).enabled, false);
});

test('createGate: a downgrade needs "Allow downgrade" AND a reason, and is labelled as one', () => {
  const no = createGate(downgradeAnswer, { allow: false, reason: 'INC-1' });
  assert.equal(no.enabled, false);
  assert.match(no.why, /Allow downgrade/);
  const noReason = createGate(downgradeAnswer, { allow: true, reason: '   ' });
  assert.equal(noReason.enabled, false);
  assert.match(noReason.why, /reason/);
  const yes = createGate(downgradeAnswer, { allow: true, reason: 'NIC 28.45 drops links' });
  assert.equal(yes.enabled, true);
  assert.equal(yes.why, '');
  assert.equal(yes.downgrades, 2);
  assert.match(yes.startLabel, /^Downgrade 2 pods, upgrade 1 now/);
  assert.doesNotMatch(yes.startLabel, /upgrade 2|Create and start$/);
  const all = createGate({ plan: { eligible: 1, downgrades: [{ pod: 'p1', reasons: [] }] } }, { allow: true, reason: 'x' });
  assert.match(all.createLabel, /^Downgrade 1 pod \(create, start later\)$/);
});

test('createBody sends allow_downgrade and the trimmed reason only for a plan with downgrades', () => {
  const body = { bundle: 'b1', selector: {}, policy: {} };
  assert.deepEqual(createBody(body, { start: true, downgrades: 0, allow: true, reason: 'x' }), { ...body, start: true });
  assert.deepEqual(createBody(body, { start: false, downgrades: 2, allow: true, reason: ' INC-4411 ' }), {
    ...body,
    start: false,
    allow_downgrade: true,
    reason: 'INC-4411',
  });
  assert.deepEqual(createBody(body, { start: false, downgrades: 2, allow: false, reason: 'x' }), { ...body, start: false });
});

test('refusedFields lists every field of a refused create, allow_downgrade included', () => {
  const details = { fields: [{ path: 'allow_downgrade', message: '8 pods: set allow_downgrade: true with a reason, or roll back' }], downgrade_pods: '8' };
  assert.deepEqual(refusedFields(details), [{ path: 'allow_downgrade', message: '8 pods: set allow_downgrade: true with a reason, or roll back' }]);
  assert.deepEqual(refusedFields({ field: 'reason' }), [{ path: 'reason', message: '' }]);
  assert.deepEqual(refusedFields(undefined), []);
});
