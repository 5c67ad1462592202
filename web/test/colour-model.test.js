// The fleet's "colour by" classes (node --test; `npm test` in web/).
import assert from 'node:assert/strict';
import test from 'node:test';
import { classesOf, classSummary, complianceMap, countClasses, healthClass, styleFor } from '../src/colour-model.js';

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
