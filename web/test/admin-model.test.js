// Pure helpers of the admin and shift views (node --test).
import assert from 'node:assert/strict';
import test from 'node:test';
import {
  actorLabel,
  auditParams,
  auditTargetHref,
  capacityParams,
  capacityPlatforms,
  detailsText,
  fmtPercent,
  hasUnknownIds,
  nameActorsIn,
  tokenBody,
  visibleTokens,
  workflowChange,
} from '../src/admin-model.js';

const names = new Map([
  ['3f9a1c2b7d4e', 'sre-alice'],
  ['0a1b2c3d4e5f', 'bootstrap admin'],
]);

test('actorLabel names tokens and leaves system actors as they are', () => {
  assert.equal(actorLabel('3f9a1c2b7d4e', names), 'sre-alice');
  assert.equal(actorLabel('system', names), 'system');
  assert.equal(actorLabel('agent:prn-b01-p0001-h01', names), 'agent:prn-b01-p0001-h01');
  assert.equal(actorLabel('ffffffffffff', names), 'ffffffffffff', 'an unknown id stays');
  assert.equal(actorLabel('3f9a1c2b7d4e', null), '3f9a1c2b7d4e');
  assert.equal(actorLabel('', names), '');
});

test('nameActorsIn replaces known token ids in event messages', () => {
  assert.equal(nameActorsIn('aborted by 3f9a1c2b7d4e: bad NIC', names), 'aborted by sre-alice: bad NIC');
  assert.equal(nameActorsIn('rolled back by ro-9 (0a1b2c3d4e5f)', names), 'rolled back by ro-9 (bootstrap admin)');
  assert.equal(nameActorsIn('started by ffffffffffff', names), 'started by ffffffffffff');
  assert.equal(nameActorsIn('hash 3f9a1c2b7d4e00 is longer', names), 'hash 3f9a1c2b7d4e00 is longer', 'whole words only');
  assert.equal(nameActorsIn(undefined, names), '');
});

test('hasUnknownIds spots a token id the names do not know', () => {
  assert.equal(hasUnknownIds(['paused by 3f9a1c2b7d4e', 'system'], names), false);
  assert.equal(hasUnknownIds(['paused by 123456abcdef'], names), true);
  assert.equal(hasUnknownIds([null, ''], names), false);
});

test('auditParams trims, checks the action and sends times as UTC', () => {
  const { params, errors } = auditParams({ action: ' rollout. ', actor: '', target: 'ro-3', since: '2026-12-02T10:00Z' });
  assert.deepEqual(errors, {});
  assert.deepEqual(params, { action: 'rollout.', target: 'ro-3', since: '2026-12-02T10:00:00.000Z' });
  assert.equal(auditParams({ action: 'rollout%' }).errors.action !== undefined, true);
  assert.equal(auditParams({ action: '.x' }).errors.action !== undefined, true);
  assert.equal(auditParams({ since: 'tomorrow-ish' }).errors.since, 'not a time');
  assert.equal(auditParams({ since: '2026-12-02T10:00Z', until: '2026-12-02T09:00Z' }).errors.until, 'must be after since');
});

test('workflowChange reads a workflow.put record: hashes, source and the diff line by line', () => {
  const c = workflowChange({
    hash: 'h2',
    source: 'api',
    previous_hash: 'h1',
    diff: '--- w@h1\n+++ w@h2\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n',
    diff_truncated: true,
    lines_added: 1,
    lines_removed: 1,
  });
  assert.equal(c.from, 'h1');
  assert.equal(c.to, 'h2');
  assert.equal(c.source, 'api');
  assert.equal(c.truncated, true);
  assert.deepEqual(
    c.lines.map((l) => l.kind),
    ['file', 'file', 'hunk', 'same', 'remove', 'add'],
  );
  assert.equal(c.lines[4].text, '-b');
  // A new workflow, and a record written before diffs were kept.
  const created = workflowChange({ hash: 'h1', source: 'workflows/w.yaml', previous_hash: null, diff: '--- /dev/null\n+++ w@h1\n@@ -0,0 +1,1 @@\n+a\n' });
  assert.equal(created.from, null);
  assert.equal(created.added, 1);
  assert.equal(created.removed, 0);
  const old = workflowChange({ hash: 'h1', source: 'api' });
  assert.deepEqual(old.lines, []);
  assert.equal(old.truncated, false);
});

test('auditTargetHref links the objects the console has pages for', () => {
  assert.equal(auditTargetHref('host.drain', 'prn-b01-p0001-h01'), '#/hosts/prn-b01-p0001-h01');
  assert.equal(auditTargetHref('rollout.pod.retry', 'ro-3/prn-b01-p0001'), '#/rollouts/ro-3');
  assert.equal(auditTargetHref('run.create', 'run-8'), '#/runs/run-8');
  assert.equal(auditTargetHref('bundle.create', 'b-2'), '#/bundles/b-2');
  assert.equal(auditTargetHref('token.create', '3f9a1c2b7d4e'), null);
  assert.equal(auditTargetHref('fleet.import', 'fleet'), null);
});

test('detailsText is one short line', () => {
  assert.equal(detailsText({ from: 'running', reason: 'Xid 79', empty: '' }), 'from=running reason=Xid 79');
  assert.equal(detailsText({ pods: 3, flags: { a: 1 } }), 'pods=3 flags={"a":1}');
  assert.equal(detailsText(null), '');
});

test('capacityParams checks the inputs and sends the reserve as a fraction', () => {
  assert.deepEqual(capacityParams({ active_gpus: '32768', reserve_percent: '2', platform: 'clemente' }), {
    params: { active_gpus: 32768, reserve_fraction: 0.02, platform: 'clemente' },
    errors: {},
  });
  assert.deepEqual(capacityParams({ active_gpus: '64', reserve_percent: '' }).params, { active_gpus: 64 });
  assert.ok(capacityParams({ active_gpus: '0' }).errors.active_gpus);
  assert.ok(capacityParams({ active_gpus: '1.5' }).errors.active_gpus);
  assert.ok(capacityParams({ active_gpus: '100000001' }).errors.active_gpus);
  assert.ok(capacityParams({ active_gpus: '64', reserve_percent: '101' }).errors.reserve_percent);
  assert.ok(capacityParams({ active_gpus: '64', platform: 'hopper' }, ['catalina', 'clemente']).errors.platform);
  // Until kilnd has said which platforms it plans for, it judges the platform itself.
  assert.deepEqual(capacityParams({ active_gpus: '64', platform: 'hopper' }).params, { active_gpus: 64, platform: 'hopper' });
  assert.deepEqual(capacityPlatforms(['clemente'], ['catalina', 'clemente', 'san_miguel'], 'clemente'), ['catalina', 'clemente', 'san_miguel']);
  assert.deepEqual(capacityPlatforms([], null, 'hopper'), ['hopper']);
  assert.equal(capacityParams({ active_gpus: '64', reserve_percent: '1.5' }).params.reserve_fraction, 0.015);
});

test('fmtPercent', () => {
  assert.equal(fmtPercent(0.1298), '13.0 %');
  assert.equal(fmtPercent(undefined), '—');
});

test('tokenBody binds only agent tokens to a host', () => {
  assert.deepEqual(tokenBody({ name: ' ci ', role: 'operator' }), { body: { role: 'operator', name: 'ci' } });
  assert.deepEqual(tokenBody({ name: 'a', role: 'agent', host: 'h1' }), { body: { role: 'agent', name: 'a', host: 'h1' } });
  assert.ok(tokenBody({ name: 'a', role: 'agent' }).errors.host);
  assert.ok(tokenBody({ name: 'a', role: 'viewer', host: 'h1' }).errors.host);
  assert.ok(tokenBody({ name: '', role: 'viewer' }).errors.name);
});

test('visibleTokens hides agents unless asked and puts revoked ones last', () => {
  const t = [
    { id: 'a', role: 'viewer', created_at: '2026-01-02T00:00:00Z', revoked_at: '2026-01-05T00:00:00Z' },
    { id: 'b', role: 'agent', created_at: '2026-01-01T00:00:00Z', revoked_at: null },
    { id: 'c', role: 'admin', created_at: '2026-01-03T00:00:00Z', revoked_at: null },
  ];
  assert.deepEqual(visibleTokens(t).map((x) => x.id), ['c', 'a']);
  assert.deepEqual(visibleTokens(t, { showAgents: true }).map((x) => x.id), ['b', 'c', 'a']);
  assert.deepEqual(visibleTokens(t, { showRevoked: false }).map((x) => x.id), ['c']);
});
