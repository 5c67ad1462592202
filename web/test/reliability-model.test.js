// Pure helpers of the reliability view (node --test; `npm test` in web/).
import assert from 'node:assert/strict';
import test from 'node:test';
import { fmtNumber, interruptionBody, isoSeconds, mtbiVerdict, newInterruptionId, rateVerdict, reportQuery, weeklyChart } from '../src/reliability-model.js';

const NOW = Date.parse('2026-12-02T10:30:45.123Z');

test('reportQuery counts a named window back from now and passes scope and threshold', () => {
  assert.deepEqual(reportQuery({}, NOW), { from: '2026-11-04T10:30:00Z' });
  assert.deepEqual(reportQuery({ window: '7', site: 'prn', lemon_threshold: '1', building: '' }, NOW), {
    from: '2026-11-25T10:30:00Z',
    site: 'prn',
    lemon_threshold: '1',
  });
  assert.deepEqual(reportQuery({ window: 'custom', from: '2026-10-01', to: '2026-11-01', platform: 'clemente' }, NOW), {
    from: '2026-10-01',
    to: '2026-11-01',
    platform: 'clemente',
  });
  assert.equal(isoSeconds(NOW), '2026-12-02T10:30:45Z');
});

test('verdicts say how far from the north star, lower rate and higher MTBI being better', () => {
  assert.deepEqual(rateVerdict(1.5, 2), { ok: true, text: 'at or below the north star of 2' });
  assert.deepEqual(rateVerdict(50, 2), { ok: false, text: '25× the north star of 2' });
  assert.equal(rateVerdict(null, 2).ok, null);
  assert.deepEqual(mtbiVerdict(48000, 3, 96000), { ok: false, text: '50% of the north star of 96,000' });
  assert.equal(mtbiVerdict(100000, 1, 96000).ok, true);
  assert.equal(mtbiVerdict(null, 0, 96000).ok, true);
});

test('fmtNumber keeps three significant digits below 100 and groups thousands', () => {
  assert.equal(fmtNumber(96000), '96,000');
  assert.equal(fmtNumber(1.23456), '1.23');
  assert.equal(fmtNumber(0.0004567), '0.000457');
  assert.equal(fmtNumber(null), '—');
  assert.equal(fmtNumber(0), '0');
});

test('weeklyChart puts the north star inside the scale and goes log over two decades', () => {
  const lin = weeklyChart(
    [
      { week: 'a', per_8k_gpus_per_day: 1 },
      { week: 'b', per_8k_gpus_per_day: 3 },
      { week: 'c', per_8k_gpus_per_day: null },
    ],
    { target: 2 },
  );
  assert.equal(lin.log, false);
  assert.ok(lin.targetY > lin.pad.t && lin.targetY < lin.h - lin.pad.b);
  assert.ok(lin.points[1].y < lin.targetY, 'above the north star is drawn higher');
  assert.ok(lin.points[0].y > lin.targetY);
  assert.equal(lin.points[2].y, null);
  const log = weeklyChart([{ week: 'a', per_8k_gpus_per_day: 1000 }, { week: 'b', per_8k_gpus_per_day: 1.5 }], { target: 2 });
  assert.equal(log.log, true);
  assert.equal(log.lo, 1);
  assert.equal(log.hi, 1000);
  assert.deepEqual(log.ticks.map((t) => Math.round(t.v)), [1, 10, 100, 1000]);
});

test('interruptionBody leaves empty fields out and splits hosts', () => {
  assert.deepEqual(interruptionBody({ id: ' i-1 ', at: '2026-12-02T10:00:00Z', cause: 'hbm', hosts: 'h1, h2', pod: '', job_gpus: '512' }), {
    id: 'i-1',
    at: '2026-12-02T10:00:00Z',
    cause: 'hbm',
    hosts: ['h1', 'h2'],
    job_gpus: 512,
  });
  assert.match(newInterruptionId(NOW, () => 0.5), /^console-20261202-103045-8000$/);
});
