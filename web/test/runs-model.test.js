// Pure helpers of the workflow-run and quarantine views (node --test).
import assert from 'node:assert/strict';
import test from 'node:test';
import {
  fieldErrors,
  fillTemplate,
  fmtDuration,
  fmtSeconds,
  paramFields,
  parseIdList,
  progressText,
  repeatCount,
  sparesText,
  startBody,
  validationText,
} from '../src/runs-model.js';

// As GET /workflows/pre-job-health returns them.
const preJobParams = {
  expected_gpus: { type: 'int', default: 4, description: 'GPUs' },
  expected_driver: { type: 'string', default: '', description: 'driver' },
  strict: { type: 'bool', default: false },
  ticket: { type: 'string' },
};

test('parseIdList splits on commas and white space and drops duplicates', () => {
  assert.deepEqual(parseIdList(' a, b\nc  a,,\t'), ['a', 'b', 'c']);
  assert.deepEqual(parseIdList(''), []);
  assert.deepEqual(parseIdList(undefined), []);
});

test('durations read as the two largest units', () => {
  assert.equal(fmtDuration(850), '850 ms');
  assert.equal(fmtDuration(1234), '1.23 s');
  assert.equal(fmtDuration(12345), '12.3 s');
  assert.equal(fmtDuration(250000), '4 min 10 s');
  assert.equal(fmtDuration(null), '');
  assert.equal(fmtSeconds(45), '45 s');
  assert.equal(fmtSeconds(7500), '2 h 5 min');
  assert.equal(fmtSeconds(3600), '1 h');
  assert.equal(fmtSeconds(3 * 86400 + 4 * 3600 + 59), '3 d 4 h');
});

test('paramFields lists declared params with defaults as text; no default means required', () => {
  const f = paramFields(preJobParams);
  assert.deepEqual(f.map((x) => x.name), ['expected_driver', 'expected_gpus', 'strict', 'ticket']);
  assert.equal(f.find((x) => x.name === 'expected_gpus').default, '4');
  assert.equal(f.find((x) => x.name === 'strict').default, 'false');
  assert.equal(f.find((x) => x.name === 'ticket').required, true);
  assert.equal(f.find((x) => x.name === 'expected_driver').required, false);
});

test('startBody sends only changed params, and pods only for a pod-scoped workflow', () => {
  const fields = paramFields(preJobParams);
  const values = { expected_gpus: '4', expected_driver: ' 570.1 ', strict: 'false', ticket: 'OPS-1' };
  assert.deepEqual(startBody({ workflow: 'pre-job-health', scope: 'host', hostsText: 'h1, h2', podsText: '', fields, values }), {
    workflow: 'pre-job-health',
    hosts: ['h1', 'h2'],
    params: { expected_driver: '570.1', ticket: 'OPS-1' },
  });
  assert.deepEqual(startBody({ workflow: 'l11-burn-in', scope: 'pod', hostsText: 'h1', podsText: 'p1\np2', fields: [], values: {} }), {
    workflow: 'l11-burn-in',
    pods: ['p1', 'p2'],
  });
  // An emptied field is left to kilnd: its default, or its 422 "required (no default)".
  const body = startBody({ workflow: 'w', scope: 'host', hostsText: 'h', podsText: '', fields, values: { expected_gpus: '', ticket: '' } });
  assert.equal(body.params, undefined);
});

test('fieldErrors maps kilnd field paths to the form fields', () => {
  const e = fieldErrors({
    fields: [
      { path: 'params.params.expected_gpus', message: 'expected an int' },
      { path: 'hosts', message: 'give hosts or pods' },
      { path: 'hosts', message: 'second message is dropped' },
    ],
  });
  assert.deepEqual(e, { 'param:expected_gpus': 'expected an int', hosts: 'give hosts or pods' });
  assert.deepEqual(fieldErrors({ field: 'workflow' }, "no workflow 'x'"), { workflow: "no workflow 'x'" });
  assert.deepEqual(fieldErrors(undefined), {});
});

test('repeatCount resolves a literal, a param of the run, or the param default', () => {
  const spec = { repeat: '{{passes}}', params: { passes: { type: 'int', default: 2 } } };
  assert.equal(repeatCount(spec, { passes: '3' }), 3);
  assert.equal(repeatCount(spec, {}), 2);
  assert.equal(repeatCount({ repeat: 1 }, {}), 1);
  assert.equal(repeatCount(null, {}), null);
});

test('sparesText says whether the spares cover and with how many healthy GPUs', () => {
  assert.equal(sparesText({ hosts: 18, healthy_gpus: 68, spares_cover: true }), 'spares cover: yes (healthy GPUs 68/64)');
  assert.equal(sparesText({ hosts: 18, healthy_gpus: 60, spares_cover: false }), 'spares cover: no (healthy GPUs 60/64)');
  assert.match(sparesText({ hosts: 1, healthy_gpus: 4, spares_cover: null }), /^spares cover: unknown, the run covered 1 of 18 hosts/);
});

test('progress and validation texts', () => {
  assert.equal(progressText({ hosts: 3, passed: 1, failed: 1, running: 1, cancelled: 0 }), '2 of 3 hosts done · 1 passed, 1 failed, 1 running');
  assert.equal(validationText({ pass: 1, step_index: 2, status: 'running' }, 2, 7), 'pass 1 of 2 · step 3 of 7 · running');
  assert.equal(validationText({ pass: 2, step_index: 0, status: 'passed' }, null, 7), 'pass 2 · passed');
  assert.equal(validationText(null, 2, 7), '');
});

test('fillTemplate shows a workflow text with the form values, else the defaults, never raw braces', () => {
  const fields = paramFields({ passes: { type: 'int', default: 2 }, soak: { type: 'duration', default: '30m' }, note: { type: 'string' } });
  assert.equal(fillTemplate('{{passes}}', fields, {}), '2');
  assert.equal(fillTemplate('{{ passes }}', fields, { passes: '3' }), '3');
  assert.equal(fillTemplate('must pass {{passes}} times, {{soak}} apart', fields, { passes: ' ' }), 'must pass 2 times, 30m apart');
  // No default and no value, or a name the workflow does not declare: the bare name.
  assert.equal(fillTemplate('{{note}} and {{other}}', fields, {}), 'note and other');
  assert.equal(fillTemplate('no placeholder', fields, {}), 'no placeholder');
  assert.equal(fillTemplate(undefined, fields, {}), '');
});
