// Pure helpers of the console (node --test; `npm test` in web/).
import assert from 'node:assert/strict';
import test from 'node:test';
import { cellAt, cellMetrics, columnsFor } from '../src/heatmap.js';
import { filterPods, groupPods, heatmapPods, offeredActions, POD_STATES, stateSummary } from '../src/model.js';
import { href, parseHash } from '../src/route.js';

const pods = [
  { id: 's1-b02-p0002', site: 's1', building: 's1-b02', platform: 'clemente', state: 'degraded', labels: { row: 'a' } },
  { id: 's1-b01-p0002', site: 's1', building: 's1-b01', platform: 'catalina', state: 'in_service', labels: { row: 'b' } },
  { id: 's1-b01-p0001', site: 's1', building: 's1-b01', platform: 'clemente', state: 'in_service', labels: { row: 'a' } },
  { id: 's0-b01-p0001', site: 's0', building: 's0-b01', platform: 'catalina', state: 'down', labels: {} },
];

test('filterPods matches every filter and label key=value or key alone', () => {
  assert.equal(filterPods(pods, {}).length, 4);
  assert.deepEqual(filterPods(pods, { site: 's1', platform: 'clemente' }).map((p) => p.id), ['s1-b02-p0002', 's1-b01-p0001']);
  assert.equal(filterPods(pods, { label: 'row=a' }).length, 2);
  assert.equal(filterPods(pods, { label: 'row' }).length, 3);
  assert.equal(filterPods(pods, { state: 'down', building: 's0-b01' }).length, 1);
  assert.equal(filterPods(pods, { state: 'retired' }).length, 0);
});

test('groupPods sorts sites, buildings and pods by id', () => {
  const g = groupPods(pods);
  assert.deepEqual(g.map((s) => s.site), ['s0', 's1']);
  assert.deepEqual(g[1].buildings.map((b) => b.id), ['s1-b01', 's1-b02']);
  assert.deepEqual(g[1].buildings[0].pods.map((p) => p.id), ['s1-b01-p0001', 's1-b01-p0002']);
  assert.equal(g[1].pods, 3);
});

test('every pod state has a label, a short code and a pattern of its own', () => {
  assert.equal(new Set(POD_STATES.map((s) => s.short)).size, POD_STATES.length);
  assert.equal(new Set(POD_STATES.map((s) => s.pattern)).size, POD_STATES.length);
  assert.equal(stateSummary({ in_service: 2, degraded: 1 }), '2 in service, 1 degraded');
});

test('viewers are offered no action; operators only what the state allows; allocate never', () => {
  assert.deepEqual(offeredActions('viewer', ['drain', 'fail']), []);
  // Every action the state allows, in the API's order; the override has its own control.
  assert.deepEqual(offeredActions('operator', ['allocate', 'drain', 'fail', 'quarantine', 'retire', 'override']).map((a) => a.id), [
    'allocate',
    'drain',
    'fail',
    'quarantine',
    'retire',
  ]);
  const unknown = offeredActions('admin', ['reseat_tray']);
  assert.equal(unknown.length, 1, 'an action the console does not know is still offered');
  assert.equal(unknown[0].label, 'Reseat tray');
});

test('cellAt maps points to cells and gaps to nothing', () => {
  const m = cellMetrics(10000);
  const cols = columnsFor(288, m);
  assert.equal(cols, 24);
  const step = m.size + m.gap;
  assert.equal(cellAt(m.gap + 1, m.gap + 1, 288, cols, m), 0);
  assert.equal(cellAt(m.gap + step * 3 + 1, m.gap + step * 2 + 1, 288, cols, m), 51);
  assert.equal(cellAt(m.gap + m.size + 1, m.gap + 1, 288, cols, m), -1);
  assert.equal(cellAt(m.gap + 1, m.gap + step * 12 + 1, 288, cols, m), -1);
});

test('hash routes round-trip their parameters', () => {
  const r = parseHash(href('/fleet', { site: 'prn', label: 'row=a', pod: '' }));
  assert.equal(r.path, '/fleet');
  assert.deepEqual(r.params, { site: 'prn', label: 'row=a' });
  assert.deepEqual(parseHash('#/hosts/h%2F1').segments, ['hosts', 'h/1']);
});

test('heatmapPods turns the heatmap rows into pods by column name, labels never null', () => {
  const doc = {
    count: 2,
    columns: ['id', 'state', 'site', 'building', 'platform', 'healthy_gpus', 'labels'],
    rows: [
      ['s0-b01-p0001', 'down', 's0', 's0-b01', 'catalina', 8, null],
      ['s1-b01-p0001', 'in_service', 's1', 's1-b01', 'clemente', 64, { row: 'a' }],
    ],
  };
  const out = heatmapPods(doc);
  assert.equal(out.length, 2);
  assert.deepEqual(out[0], { id: 's0-b01-p0001', state: 'down', site: 's0', building: 's0-b01', platform: 'catalina', healthy_gpus: 8, labels: {} });
  assert.equal(out[1].labels.row, 'a');
  assert.equal(filterPods(out, { label: 'row=a' }).length, 1);
  assert.deepEqual(heatmapPods({}), []);
});
