// Pure helpers of the bundle views (node --test).
import assert from 'node:assert/strict';
import test from 'node:test';
import { compareVersions, complianceSummary, compliancePods, diffBundles, versionRelation } from '../src/bundles-model.js';

test('compareVersions follows kilnd: numeric runs as numbers, the rest byte by byte', () => {
  // The examples of orchestrator/rollouts/bundle.h.
  assert.ok(compareVersions('570.133.20', '580.65.06') < 0);
  assert.ok(compareVersions('1.9', '1.10') < 0);
  assert.ok(compareVersions('25.04-1', '25.04-2') < 0);
  assert.equal(compareVersions('580.65.06', '580.65.06'), 0);
  assert.equal(compareVersions('1.007', '1.7'), 0, 'leading zeros are ignored');
  assert.equal(compareVersions('0', '00'), 0);
  assert.ok(compareVersions('1.2', '1.2.1') < 0, 'a prefix is older');
  assert.ok(compareVersions('1.2a', '1.2') > 0);
  assert.ok(compareVersions('GB200-P4059-0301-1.10.0', 'GB200-P4059-0301-1.9.9') > 0);
  assert.ok(compareVersions('28.45.1200', '28.44.1036') > 0);
  assert.ok(compareVersions('B', 'a') < 0, 'text compares by byte: upper case first');
  assert.ok(compareVersions('1.x', '1.5') > 0, "a letter sorts after a digit ('x' > '5')");
  // kilnd compares signed chars: a non-ASCII byte sorts before any ASCII one.
  assert.ok(compareVersions('1.é', '1.a') < 0);
  for (const [a, b] of [['1.9', '1.10'], ['2026.11', '2026.2'], ['v3', 'v12']]) {
    assert.equal(Math.sign(compareVersions(a, b)), -Math.sign(compareVersions(b, a)), `${a} vs ${b} is antisymmetric`);
  }
});

test('versionRelation says where B stands against A', () => {
  assert.equal(versionRelation('1.9', '1.10'), 'newer');
  assert.equal(versionRelation('1.10', '1.9'), 'older');
  assert.equal(versionRelation('01.2', '1.2'), 'same');
});

test('diffBundles compares per component kind, with kinds only in one bundle', () => {
  const comp = (kind, version) => ({ kind, version, artifact: `/a/${kind}`, sha256: 'x' });
  const a = {
    platforms: ['catalina', 'clemente'],
    workflow: 'firmware-upgrade',
    components: [comp('driver', '570.133.20'), comp('nic', '28.45.1200'), comp('bmc', '25.04-1'), comp('gpu_vbios', '97.00.0A')],
    prerequisites: [{ kind: 'bmc', min_version: '24.1' }],
  };
  const b = {
    platforms: ['clemente', 'san_miguel'],
    workflow: 'firmware-upgrade-v2',
    components: [comp('driver', '580.65.06'), comp('nic', '28.44.1036'), comp('bmc', '25.04-1'), comp('sbios', '1.2')],
    prerequisites: [{ kind: 'bmc', min_version: '25.1' }],
  };
  const d = diffBundles(a, b);
  assert.deepEqual(
    d.rows.map((r) => [r.kind, r.a, r.b, r.relation]),
    [
      ['bmc', '25.04-1', '25.04-1', 'same'],
      ['driver', '570.133.20', '580.65.06', 'newer'],
      ['gpu_vbios', '97.00.0A', null, 'only_a'],
      ['nic', '28.45.1200', '28.44.1036', 'older'],
      ['sbios', null, '1.2', 'only_b'],
    ],
  );
  assert.deepEqual(d.counts, { newer: 1, same: 1, older: 1, only_a: 1, only_b: 1 });
  assert.deepEqual(d.prerequisites, [{ kind: 'bmc', a: '24.1', b: '25.1', relation: 'newer' }]);
  assert.deepEqual(d.platforms, { both: ['clemente'], onlyA: ['catalina'], onlyB: ['san_miguel'] });
  assert.equal(d.workflow.same, false);
  // A bundle against itself: everything the same.
  const self = diffBundles(a, a);
  assert.ok(self.rows.every((r) => r.relation === 'same'));
});

test('complianceSummary counts pods and words needs_downgrade', () => {
  assert.equal(complianceSummary({ compliant: 3, needs_upgrade: 8, needs_downgrade: 1, incompatible: 0 }), '12 pods: 3 compliant, 8 need an upgrade, 1 needs a downgrade');
  assert.equal(complianceSummary({ compliant: 0, needs_upgrade: 0, needs_downgrade: 0, incompatible: 0 }), '0 pods');
  assert.equal(complianceSummary({ compliant: 1 }), '1 pod: 1 compliant');
});

test('compliancePods filters by state and puts the worst first', () => {
  const pods = [
    { pod: 'p2', state: 'compliant' },
    { pod: 'p1', state: 'needs_downgrade' },
    { pod: 'p3', state: 'needs_upgrade' },
    { pod: 'p0', state: 'needs_upgrade' },
  ];
  assert.deepEqual(compliancePods(pods, '').map((p) => p.pod), ['p1', 'p0', 'p3', 'p2']);
  assert.deepEqual(compliancePods(pods, 'needs_upgrade').map((p) => p.pod), ['p0', 'p3']);
  assert.equal(pods[0].pod, 'p2', 'the input is not reordered');
});
