// Issue 18 pieces of the console shell: live status, dialog focus trap, "/" shortcut, id search.
import assert from 'node:assert/strict';
import test from 'node:test';
import { isSearchShortcut, trapTab } from '../src/a11y.js';
import { FAILS_BEFORE_DOWN, isOutage, nextLiveStatus } from '../src/live.js';
import { findIds, pickFound } from '../src/model.js';

test('a 4xx answer keeps the live indicator green; only repeated outages turn it red', () => {
  let s = { lastOk: 0, error: null, fails: 0 };
  s = nextLiveStatus(s, true, null, 1000);
  assert.deepEqual(s, { lastOk: 1000, error: null, fails: 0 });
  s = nextLiveStatus(s, false, { status: 404, message: 'No such pod' }, 2000);
  assert.equal(s.error, null, 'a 404 is an answer');
  assert.equal(s.lastOk, 2000);
  assert.equal(isOutage({ status: 409 }), false);
  assert.equal(isOutage({ status: 503 }), true);
  assert.equal(isOutage({ status: 0 }), true);
  assert.equal(isOutage(new TypeError('x')), true);
  for (let i = 1; i < FAILS_BEFORE_DOWN; i++) {
    s = nextLiveStatus(s, false, { status: 0, message: 'kilnd does not answer' }, 3000 + i);
    assert.equal(s.error, null, `${i} failed polls are not an outage yet`);
    assert.equal(s.lastOk, 2000);
  }
  s = nextLiveStatus(s, false, { status: 502, message: 'Bad gateway' }, 5000);
  assert.equal(s.error, 'Bad gateway');
  assert.equal(s.fails, FAILS_BEFORE_DOWN);
  s = nextLiveStatus(s, true, null, 6000);
  assert.deepEqual(s, { lastOk: 6000, error: null, fails: 0 });
});

test('trapTab wraps Tab and Shift+Tab inside a dialog', () => {
  assert.equal(trapTab(3, 2, false), 0, 'Tab on the last goes to the first');
  assert.equal(trapTab(3, 0, true), 2, 'Shift+Tab on the first goes to the last');
  assert.equal(trapTab(3, 1, false), -1, 'in the middle the browser moves on');
  assert.equal(trapTab(3, 1, true), -1);
  assert.equal(trapTab(3, -1, false), 0, 'focus outside comes back in');
  assert.equal(trapTab(3, -1, true), 2);
  assert.equal(trapTab(1, 0, false), 0);
  assert.equal(trapTab(0, -1, false), -1);
});

test('"/" focuses the search box unless typing in a field', () => {
  assert.equal(isSearchShortcut({ key: '/', target: { tagName: 'BODY' } }), true);
  assert.equal(isSearchShortcut({ key: '/', target: { tagName: 'canvas' } }), true);
  assert.equal(isSearchShortcut({ key: '/', target: { tagName: 'INPUT' } }), false);
  assert.equal(isSearchShortcut({ key: '/', target: { tagName: 'TEXTAREA' } }), false);
  assert.equal(isSearchShortcut({ key: '/', target: { tagName: 'SELECT' } }), false);
  assert.equal(isSearchShortcut({ key: '/', target: { tagName: 'DIV', isContentEditable: true } }), false);
  assert.equal(isSearchShortcut({ key: '/', ctrlKey: true, target: { tagName: 'BODY' } }), false);
  assert.equal(isSearchShortcut({ key: 'a', target: { tagName: 'BODY' } }), false);
});

test('findIds matches prefixes, any case, numbers as numbers', () => {
  const pods = ['prn-b01-p0002', 'prn-b01-p0005', 'prn-b01-p0050', 'prn-b02-p0005', 'prn-b01-p0001', 'ash-b01-p0002'].map((id) => ({ id }));
  const ids = (q) => findIds(pods, q).map((f) => f.id);
  assert.deepEqual(ids('PRN-B01-P02'), ['prn-b01-p0002']);
  assert.deepEqual(ids('prn-b01-p0002'), ['prn-b01-p0002']);
  assert.equal(pickFound(findIds(pods, 'PRN-B01-P02')), 'prn-b01-p0002');
  assert.deepEqual(ids('p05'), ['prn-b01-p0005', 'prn-b02-p0005', 'prn-b01-p0050'], 'exact tails first, then prefixes');
  assert.equal(pickFound(findIds(pods, 'p05')), '', 'two pods end in p0005: show the list');
  assert.equal(pickFound(findIds(pods, 'b02-p5')), 'prn-b02-p0005');
  assert.deepEqual(ids('PRN-B02'), ['prn-b02-p0005']);
  assert.deepEqual(ids('prn-b01-p00'), ['prn-b01-p0001', 'prn-b01-p0002', 'prn-b01-p0005', 'prn-b01-p0050']);
  assert.equal(pickFound(findIds(pods, 'prn-b01-p00')), '');
  assert.deepEqual(ids('ash'), ['ash-b01-p0002']);
  assert.equal(pickFound(findIds(pods, 'ASH')), 'ash-b01-p0002');
  assert.deepEqual(ids('zzz'), []);
  assert.deepEqual(ids('  '), []);
  assert.equal(findIds(pods, 'prn', 2).length, 2);
});
