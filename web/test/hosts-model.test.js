// Issue 18: the hosts view's query and sort, paging, header shortcuts, search outcome, the
// running-validation check, and the heatmap's "in service, hosts out" class.
import assert from 'node:assert/strict';
import test from 'node:test';
import { classesOf, countClasses, HOSTS_OUT_CLASS, stateClass, styleFor } from '../src/colour-model.js';
import {
  ariaSort,
  hostsQuery,
  nextSort,
  pageBack,
  pageForward,
  parseSort,
  queryKey,
  runningValidation,
  searchOutcome,
  shortcutItems,
  SHORTCUT_STATES,
  sortParam,
  startsValidation,
} from '../src/hosts-model.js';
import { filterPods, heatmapPods } from '../src/model.js';

test('sort parses, prints and toggles; unknown sorts fall back to id', () => {
  assert.deepEqual(parseSort('-state_since'), { key: 'state_since', desc: true });
  assert.deepEqual(parseSort('pod'), { key: 'pod', desc: false });
  assert.deepEqual(parseSort('name'), { key: 'id', desc: false });
  assert.deepEqual(parseSort('--id'), { key: 'id', desc: false });
  assert.deepEqual(parseSort(undefined), { key: 'id', desc: false });
  assert.equal(sortParam({ key: 'id', desc: false }), '', 'the default stays out of the URL');
  assert.equal(sortParam({ key: 'id', desc: true }), '-id');
  assert.equal(sortParam({ key: 'reason', desc: false }), 'reason');
  assert.equal(sortParam({ key: 'bogus', desc: true }), '');
  assert.deepEqual(nextSort({ key: 'state', desc: false }, 'state'), { key: 'state', desc: true }, 'same column flips');
  assert.deepEqual(nextSort({ key: 'state', desc: true }, 'state'), { key: 'state', desc: false });
  assert.deepEqual(nextSort({ key: 'state', desc: true }, 'pod'), { key: 'pod', desc: false }, 'a new column starts ascending');
  assert.deepEqual(nextSort({ key: 'id', desc: false }, 'state_since'), { key: 'state_since', desc: true }, 'since starts newest first');
  assert.equal(ariaSort({ key: 'pod', desc: true }, 'pod'), 'descending');
  assert.equal(ariaSort({ key: 'pod', desc: false }, 'pod'), 'ascending');
  assert.equal(ariaSort({ key: 'pod', desc: false }, 'state'), 'none');
});

test('hostsQuery keeps the filters given, trimmed, and a sort other than the default', () => {
  assert.deepEqual(hostsQuery({ state: 'failed', reason: '  xid ', pod: '', colour: 'x', sort: '-state_since' }), {
    state: 'failed',
    reason: 'xid',
    sort: '-state_since',
  });
  assert.deepEqual(hostsQuery({ sort: 'id', label: 'row=a', id_prefix: 'PRN-B01' }), { label: 'row=a', id_prefix: 'PRN-B01' });
  assert.deepEqual(hostsQuery({}), {});
  assert.notEqual(queryKey(hostsQuery({ state: 'failed' })), queryKey(hostsQuery({ state: 'repair' })));
  assert.notEqual(queryKey(hostsQuery({ sort: 'pod' })), queryKey(hostsQuery({ sort: '-pod' })), 'a new sort restarts paging');
  assert.equal(queryKey(hostsQuery({ reason: 'x ' })), queryKey(hostsQuery({ reason: 'x' })));
});

test('keyset paging keeps a stack of cursors', () => {
  let stack = [''];
  stack = pageForward(stack, 'c1');
  stack = pageForward(stack, 'c2');
  assert.deepEqual(stack, ['', 'c1', 'c2']);
  assert.deepEqual(pageForward(stack, null), stack, 'no next page: stay');
  stack = pageBack(stack);
  assert.deepEqual(stack, ['', 'c1']);
  assert.deepEqual(pageBack(pageBack(stack)), [''], 'never before the first page');
});

test('header shortcuts: failed, repair, quarantine and draining with counts and links', () => {
  assert.deepEqual(SHORTCUT_STATES, ['failed', 'repair', 'quarantine', 'draining']);
  const items = shortcutItems({ by_state: { failed: 3, repair: 1, quarantine: 0, available: 99 } });
  assert.deepEqual(
    items.map((i) => [i.state, i.count, i.href]),
    [
      ['failed', 3, '#/hosts?state=failed'],
      ['repair', 1, '#/hosts?state=repair'],
      ['quarantine', 0, '#/hosts?state=quarantine'],
      ['draining', 0, '#/hosts?state=draining'],
    ],
  );
  assert.equal(items[0].label, 'Failed');
  assert.ok(shortcutItems(null).every((i) => i.count === null), 'null while loading');
});

test('search opens a picked pod, an exact host or a single match, else lists pods then hosts', () => {
  const hosts = [{ id: 'prn-b01-p0002-h01', state: 'failed' }, { id: 'prn-b01-p0002-h02', state: 'available' }];
  assert.deepEqual(searchOutcome('PRN-B01-P02', 'prn-b01-p02', [{ id: 'prn-b01-p02' }], []), { open: { kind: 'pod', id: 'prn-b01-p02' } });
  assert.deepEqual(searchOutcome('PRN-B01-P0002-H02', '', [], hosts), { open: { kind: 'host', id: 'prn-b01-p0002-h02' } });
  assert.deepEqual(searchOutcome('prn-b01-p0002-h0', '', [], hosts.slice(0, 1)), { open: { kind: 'host', id: 'prn-b01-p0002-h01', state: 'failed' } });
  assert.deepEqual(searchOutcome('nothing', '', [], []), { none: true });
  const out = searchOutcome('prn-b01-p0002', '', [{ id: 'prn-b01-p0002' }, { id: 'prn-b01-p00020' }], hosts);
  assert.deepEqual(
    out.list.map((m) => `${m.kind}:${m.id}`),
    ['pod:prn-b01-p0002', 'pod:prn-b01-p00020', 'host:prn-b01-p0002-h01', 'host:prn-b01-p0002-h02'],
  );
  assert.equal(out.list[2].state, 'failed');
});

test('a running quarantine validation is found among a host’s runs', () => {
  assert.equal(runningValidation([]), null);
  assert.equal(runningValidation([{ id: 'r1', workflow: 'quarantine-validation', state: 'passed' }]), null);
  assert.equal(runningValidation([{ id: 'r2', workflow: 'pre-job-health', state: 'running' }]), null);
  assert.equal(
    runningValidation([
      { id: 'r3', workflow: 'pre-job-health', state: 'running' },
      { id: 'r4', workflow: 'quarantine-validation', state: 'running' },
    ]).id,
    'r4',
  );
  assert.equal(startsValidation('quarantine'), true);
  assert.equal(startsValidation('repair_complete'), true);
  assert.equal(startsValidation('drain'), false);
});

test('an in-service pod with hosts out has its own class in state mode, in the legend and counts', () => {
  const doc = {
    count: 3,
    columns: ['id', 'site', 'building', 'platform', 'state', 'healthy_gpus', 'labels', 'hosts_out'],
    rows: [
      ['a', 's', 'b', 'clemente', 'in_service', 72, null, 0],
      ['b', 's', 'b', 'clemente', 'in_service', 68, null, 1],
      ['c', 's', 'b', 'clemente', 'degraded', 60, null, 3],
    ],
  };
  const pods = heatmapPods(doc);
  assert.equal(pods[1].hosts_out, 1);
  assert.equal(stateClass(pods[0]).id, 'in_service');
  assert.equal(stateClass(pods[1]), HOSTS_OUT_CLASS);
  assert.equal(stateClass(pods[2]).id, 'degraded', 'a degraded pod already shows its missing hosts');
  assert.equal(stateClass({ state: 'in_service' }).id, 'in_service', 'an answer without the column: as before');
  assert.equal(styleFor('state', null), stateClass);
  assert.ok(classesOf('state').includes(HOSTS_OUT_CLASS), 'in the legend');
  assert.notEqual(HOSTS_OUT_CLASS.color, classesOf('state')[0].color);
  assert.notEqual(HOSTS_OUT_CLASS.pattern, classesOf('state')[0].pattern);
  assert.deepEqual(countClasses(pods, stateClass), { in_service: 1, in_service_hosts_out: 1, degraded: 1 });
  assert.deepEqual(
    filterPods(pods, { out: '1' }).map((p) => p.id),
    ['b', 'c'],
    'the legend entry filters pods with hosts out',
  );
});
