// Issue 18, live work: step-level run progress, live output buffers and the rollout link
// (pure helpers of runs-model.js).
import assert from 'node:assert/strict';
import test from 'node:test';
import { appendLiveOutput, hostStepStates, liveOutputQuery, podsText, rolloutText, stepProgress, stepProgressText } from '../src/runs-model.js';

const steps = ['inventory', 'flash', 'reboot', 'verify'];
const rec = (step, outcome, pass = 1) => ({ step, outcome, pass });

test('a host on its second step has the first done, the second running and the rest pending', () => {
  const h = { status: 'running', pass: 1, current_step: 'flash', steps: [rec('inventory', 'passed')] };
  assert.deepEqual(hostStepStates(h, steps), ['done', 'running', 'pending', 'pending']);
});

test('a retried step is running again, a failed host has its failed step and the rest not run', () => {
  const retry = { status: 'running', pass: 1, current_step: 'flash', steps: [rec('inventory', 'passed'), rec('flash', 'failed')] };
  assert.deepEqual(hostStepStates(retry, steps), ['done', 'running', 'pending', 'pending']);
  const failed = { status: 'failed', pass: 1, current_step: '', steps: [rec('inventory', 'passed'), rec('flash', 'failed')] };
  assert.deepEqual(hostStepStates(failed, steps), ['done', 'failed', 'notrun', 'notrun']);
  const cancelled = { status: 'cancelled', pass: 1, current_step: '', steps: [] };
  assert.deepEqual(hostStepStates(cancelled, steps), ['notrun', 'notrun', 'notrun', 'notrun']);
});

test('a passed host did every step, also one its when-condition skipped; earlier passes do not count', () => {
  assert.deepEqual(hostStepStates({ status: 'passed', pass: 1, current_step: '', steps: [rec('inventory', 'passed')] }, steps), ['done', 'done', 'done', 'done']);
  const pass2 = { status: 'running', pass: 2, current_step: 'inventory', steps: steps.map((s) => rec(s, 'passed', 1)) };
  assert.deepEqual(hostStepStates(pass2, steps), ['running', 'pending', 'pending', 'pending']);
});

test('a run of 18 hosts all on their first step is 18 of 72 host-steps running, not a full bar', () => {
  const run = { steps, hosts: Array.from({ length: 18 }, (_, i) => ({ host: `h${i}`, status: 'running', pass: 1, current_step: 'inventory', steps: [] })) };
  const sp = stepProgress(run);
  assert.deepEqual(sp.total, { hosts: 18, steps: 4, units: 72, done: 0, failed: 0, notrun: 0, running: 18, pending: 54 });
  assert.deepEqual(sp.steps[0], { step: 'inventory', done: 0, failed: 0, notrun: 0, running: 18, pending: 0 });
  assert.deepEqual(sp.steps[1], { step: 'flash', done: 0, failed: 0, notrun: 0, running: 0, pending: 18 });
  assert.equal(stepProgressText(sp), '0 of 72 host-steps done · 18 running · 54 pending (18 hosts × 4 steps)');
  assert.equal(stepProgressText(stepProgress({ steps: [], hosts: [] })), '');
});

test('live output appends what follows, says what kilnd no longer keeps, and starts over after a loss', () => {
  let b = appendLiveOutput(null, { offset: 0, end: 6, data: 'line1\n' });
  assert.deepEqual(b, { text: 'line1\n', end: 6 });
  assert.equal(liveOutputQuery(b, null), '?stdout_since=6&stderr_since=0');
  b = appendLiveOutput(b, { offset: 6, end: 12, data: 'line2\n' });
  assert.deepEqual(b, { text: 'line1\nline2\n', end: 12 });
  b = appendLiveOutput(b, { offset: 12, end: 12, data: '' });
  assert.equal(b.text, 'line1\nline2\n');
  const gap = appendLiveOutput(b, { offset: 100, end: 104, data: 'tail' });
  assert.equal(gap.text, 'line1\nline2\n\n[… 88 bytes not kept …]\ntail');
  assert.equal(gap.end, 104);
  const first = appendLiveOutput(null, { offset: 40, end: 44, data: 'tail' });
  assert.equal(first.text, '[… the first 40 bytes are not kept …]\ntail');
  const lost = appendLiveOutput(b, { offset: 0, end: 3, data: 'new' });
  assert.deepEqual(lost, { text: 'new', end: 3 });
  assert.equal(appendLiveOutput({ text: '', end: 0 }, { offset: 0, end: 10, data: '0123456789' }, 4).text, '6789');
});

test('a run links to its rollout; the list shows the rollout pod or the first pods', () => {
  const ro = { id: 'ro-3', pod: 'prn-b01-p02', phase: 'upgrade', attempt: 1 };
  assert.equal(rolloutText(ro), 'ro-3: upgrade of pod prn-b01-p02');
  assert.equal(rolloutText({ ...ro, phase: 'validate', attempt: 2 }), 'ro-3: validation of pod prn-b01-p02 (attempt 2)');
  assert.equal(rolloutText(null), '');
  assert.equal(podsText({ rollout: ro, pods: ['x'] }), 'prn-b01-p02');
  assert.equal(podsText({ rollout: null, pods: ['a', 'b'] }), 'a, b');
  assert.equal(podsText({ rollout: null, pods: ['a', 'b', 'c', 'd'] }), 'a, b, c +more');
  assert.equal(podsText({}), '');
});
