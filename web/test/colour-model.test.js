// The fleet's "colour by" classes (node --test; `npm test` in web/).
import assert from 'node:assert/strict';
import test from 'node:test';
import {
  classesOf,
  classSummary,
  complianceClass,
  complianceCountsText,
  complianceMap,
  countClasses,
  downgradedComponents,
  hasReasons,
  healthClass,
  styleFor,
} from '../src/colour-model.js';

test('healthClass compares healthy GPUs with the 64 a slice needs and the 72 of a pod', () => {
  assert.equal(healthClass(72).id, 'h:full');
  assert.equal(healthClass(68).id, 'h:spares');
  assert.equal(healthClass(64).id, 'h:spares');
  assert.equal(healthClass(60).id, 'h:short');
  assert.equal(healthClass(0).id, 'h:none');
  assert.equal(healthClass(undefined).id, 'h:none');
});

test('every class of every mode has a label, a short code and a pattern', () => {
  for (const mode of ['state', 'compliance', 'health']) {
    const ids = new Set();
    for (const c of classesOf(mode)) {
      assert.ok(c.label && c.short && c.pattern && c.color, `${mode} ${c.id}`);
      ids.add(c.id);
    }
    assert.equal(ids.size, classesOf(mode).length);
  }
});

test('styleFor(compliance) reads the bundle answer; a pod it does not name is not reported', () => {
  const m = complianceMap({ pods: [{ pod: 'a', state: 'compliant', reasons: [] }, { pod: 'b', state: 'needs_upgrade', reasons: ['driver 1 -> 2'] }] });
  const style = styleFor('compliance', m);
  assert.equal(style({ id: 'a' }).id, 'c:compliant');
  assert.equal(style({ id: 'b' }).id, 'c:needs_upgrade');
  assert.equal(style({ id: 'z' }).id, 'c:unknown');
  assert.equal(styleFor('compliance', null)({ id: 'a' }).id, 'c:unknown');
  const counts = countClasses([{ id: 'a' }, { id: 'b' }, { id: 'b' }], style);
  assert.deepEqual(counts, { 'c:compliant': 1, 'c:needs_upgrade': 2 });
  assert.equal(classSummary(counts, classesOf('compliance')), '1 compliant, 2 needs upgrade');
  assert.equal(classSummary({ 'h:full': 5, 'h:spares': 1 }, classesOf('health')), '5 fully healthy, 1 on spares');
  assert.equal(styleFor('state', null)({ state: 'down' }).id, 'down');
  assert.equal(styleFor('health', null)({ healthy_gpus: 72 }).id, 'h:full');
});

test('needs_downgrade is its own compliance class, never folded into needs_upgrade', () => {
  const classes = classesOf('compliance');
  const down = classes.find((c) => c.id === 'c:needs_downgrade');
  const up = classes.find((c) => c.id === 'c:needs_upgrade');
  assert.ok(down, 'a needs_downgrade class');
  assert.equal(down.label, 'Needs downgrade');
  // Distinct colour, pattern and code from every other compliance class.
  for (const c of classes.filter((x) => x !== down)) {
    assert.notEqual(down.color, c.color, c.id);
    assert.notEqual(down.pattern, c.pattern, c.id);
    assert.notEqual(down.short, c.short, c.id);
  }
  const m = complianceMap({
    pods: [
      { pod: 'a', state: 'needs_upgrade', reasons: ['driver 1 -> 2'] },
      { pod: 'b', state: 'needs_downgrade', reasons: ['nic 28.45.1200 -> 28.44.1036 (older)'] },
    ],
  });
  const style = styleFor('compliance', m);
  assert.equal(style({ id: 'b' }).id, 'c:needs_downgrade');
  assert.equal(complianceClass(m.get('b')), down);
  assert.notEqual(complianceClass(m.get('a')), down);
  assert.equal(complianceClass(m.get('a')), up);
  assert.ok(hasReasons(down) && hasReasons(up) && !hasReasons(classes[0]));
  const counts = countClasses([{ id: 'a' }, { id: 'b' }, { id: 'b' }], style);
  assert.deepEqual(counts, { 'c:needs_upgrade': 1, 'c:needs_downgrade': 2 });
  assert.equal(classSummary(counts, classes), '1 needs upgrade, 2 needs downgrade');
});

test('complianceCountsText lists needs_downgrade (and any key it does not know) from kilnd counts', () => {
  assert.equal(complianceCountsText({ compliant: 3, needs_upgrade: 0, needs_downgrade: 8, incompatible: 1 }), '3 compliant, 8 needs downgrade, 1 incompatible');
  assert.equal(complianceCountsText({ compliant: 1, needs_repair: 2 }), '1 compliant, 2 needs repair');
  assert.equal(complianceCountsText(null), '');
});

test('downgradedComponents names the components the bundle would move back', () => {
  const entry = {
    pod: 'b',
    state: 'needs_downgrade',
    components: [
      { kind: 'nic', version: '28.44.1036', current: [{ version: '28.45.1200', targets: 18, bundle_is: 'older' }] },
      { kind: 'driver', version: '580.65.06', current: [{ version: '570.1', targets: 18, bundle_is: 'newer' }] },
      { kind: 'bios', version: '1.2', current: [{ version: '1.2', targets: 18, bundle_is: 'same' }] },
    ],
  };
  assert.deepEqual(downgradedComponents(entry), [{ kind: 'nic', version: '28.44.1036', from: ['28.45.1200'] }]);
  assert.deepEqual(downgradedComponents({ state: 'needs_upgrade', reasons: [] }), []);
  assert.deepEqual(downgradedComponents(null), []);
});
