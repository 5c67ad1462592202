// What a fleet heatmap cell shows ("colour by"): the pod's state, its compliance with a chosen
// bundle (GET /bundles/{id}/compliance), or its health (healthy GPUs against the 64 a slice
// needs). Every class has a label, a two-letter code and a pattern as well as a colour, like
// the pod states of model.js, so nothing depends on colour alone. Pure: `npm test` covers it.

import { POD_STATES, podState } from './model.js';

export const COLOUR_MODES = [
  { id: 'state', label: 'State' },
  { id: 'compliance', label: 'Compliance' },
  { id: 'health', label: 'Health' },
];

// Compliance classes (rollout_service.cc compliance(): compliant | needs_upgrade |
// needs_downgrade | incompatible). needs_downgrade (some component would go back to an OLDER
// version than the pod runs) is its own class, never folded into needs_upgrade (issue 18).
export const COMPLIANCE_CLASSES = [
  { id: 'c:compliant', label: 'Compliant', short: 'OK', color: '#2e7d32', ink: '#ffffff', pattern: 'solid' },
  { id: 'c:needs_upgrade', label: 'Needs upgrade', short: 'UP', color: '#f2b705', ink: '#1a1a1a', pattern: 'stripes' },
  { id: 'c:needs_downgrade', label: 'Needs downgrade', short: 'DN', color: '#8e24aa', ink: '#ffffff', pattern: 'slash' },
  { id: 'c:incompatible', label: 'Incompatible', short: 'IX', color: '#6b6b6b', ink: '#ffffff', pattern: 'cross' },
  { id: 'c:unknown', label: 'Not reported', short: '??', color: '#bdbdbd', ink: '#1a1a1a', pattern: 'dots' },
];

// An NVL72 pod has 72 GPUs, of which a slice (the NVLink domain a job gets) needs 64: the 8
// others are spares (docs/FACTS.md; runs-model.js sparesText).
export const POD_GPUS = 72;
export const SLICE_GPUS = 64;
export const HEALTH_CLASSES = [
  { id: 'h:full', label: `All ${POD_GPUS} GPUs healthy`, noun: 'fully healthy', short: '72', color: '#2e7d32', ink: '#ffffff', pattern: 'solid' },
  { id: 'h:spares', label: `Spares in use (${SLICE_GPUS}–${POD_GPUS - 1})`, noun: 'on spares', short: 'SP', color: '#7cb342', ink: '#1a1a1a', pattern: 'bars' },
  { id: 'h:short', label: `Below ${SLICE_GPUS}: no slice`, noun: `below ${SLICE_GPUS} GPUs`, short: '<64', color: '#c62828', ink: '#ffffff', pattern: 'cross' },
  { id: 'h:none', label: 'No healthy GPU', noun: 'without a healthy GPU', short: '0', color: '#1b1f24', ink: '#ffffff', pattern: 'slash' },
];
const BY_ID = new Map([...COMPLIANCE_CLASSES, ...HEALTH_CLASSES].map((c) => [c.id, c]));

// State mode: a pod whose spares cover its missing hosts stays "in service", yet an SRE wants
// to see the failed host in it (issue 18). Such a pod (hosts_out > 0: hosts draining, in
// maintenance, validating, failed, in repair or quarantine; GET /fleet/heatmap) gets its own
// class: orange with a white corner notch, next to "In service" in the legend.
export const HOSTS_OUT_CLASS = {
  id: 'in_service_hosts_out',
  label: 'In service, hosts out',
  noun: 'in service with hosts out',
  short: 'HO',
  color: '#d9480f',
  ink: '#ffffff',
  pattern: 'notch',
};
export const STATE_CLASSES = [POD_STATES[0], HOSTS_OUT_CLASS, ...POD_STATES.slice(1)];

// A pod's class in state mode: its state, or HOSTS_OUT_CLASS for an in-service pod with hosts out.
export function stateClass(p) {
  if (p.state === 'in_service' && Number(p.hosts_out || 0) > 0) return HOSTS_OUT_CLASS;
  return podState(p.state);
}

export function healthClass(healthyGpus) {
  const n = Number(healthyGpus || 0);
  if (n >= POD_GPUS) return BY_ID.get('h:full');
  if (n >= SLICE_GPUS) return BY_ID.get('h:spares');
  if (n > 0) return BY_ID.get('h:short');
  return BY_ID.get('h:none');
}

export function complianceClass(entry) {
  return BY_ID.get(`c:${entry ? entry.state : 'unknown'}`) || BY_ID.get('c:unknown');
}

// The legend classes of a mode.
export function classesOf(mode) {
  if (mode === 'compliance') return COMPLIANCE_CLASSES;
  if (mode === 'health') return HEALTH_CLASSES;
  return STATE_CLASSES;
}

// (pod) -> cell style {id, label, short, color, ink, pattern} for the mode. compliance: Map
// pod id -> {state, reasons} (null while loading: every pod "not reported").
export function styleFor(mode, compliance) {
  if (mode === 'compliance') return (p) => complianceClass(compliance ? compliance.get(p.id) : null);
  if (mode === 'health') return (p) => healthClass(p.healthy_gpus);
  return stateClass;
}

// {class id -> count} of pods under a style function.
export function countClasses(pods, style) {
  const out = {};
  for (const p of pods) {
    const id = style(p).id;
    out[id] = (out[id] || 0) + 1;
  }
  return out;
}

// "3 compliant, 2 needs upgrade", "280 fully healthy, 8 on spares" in legend order.
export function classSummary(counts, classes) {
  return classes
    .filter((c) => counts[c.id])
    .map((c) => `${counts[c.id]} ${c.noun || c.label.toLowerCase()}`)
    .join(', ');
}

// Does a compliance class carry reasons worth naming (what would change, or why it cannot)?
export function hasReasons(cls) {
  return cls.id === 'c:needs_upgrade' || cls.id === 'c:needs_downgrade' || cls.id === 'c:incompatible';
}

// The components of a compliance entry that the bundle would move back (bundle_is "older"):
// [{kind, version (the bundle's), from: [versions the pods run now]}].
export function downgradedComponents(entry) {
  const out = [];
  for (const c of (entry && entry.components) || []) {
    const from = (c.current || []).filter((v) => v.bundle_is === 'older').map((v) => v.version);
    if (from.length) out.push({ kind: c.kind, version: c.version, from });
  }
  return out;
}

// The answer's counts (pods or hosts) as "3 compliant, 8 needs downgrade" in legend order;
// every key kilnd sends, including needs_downgrade, and any key this console does not know.
export function complianceCountsText(counts) {
  const c = counts || {};
  const known = COMPLIANCE_CLASSES.map((k) => k.id.slice(2));
  const parts = COMPLIANCE_CLASSES.filter((k) => c[k.id.slice(2)]).map((k) => `${c[k.id.slice(2)]} ${k.label.toLowerCase()}`);
  for (const [k, n] of Object.entries(c)) if (n && !known.includes(k)) parts.push(`${n} ${k.replace(/_/g, ' ')}`);
  return parts.join(', ');
}

// The compliance answer as Map pod id -> {state, reasons}.
export function complianceMap(answer) {
  const m = new Map();
  for (const p of (answer && answer.pods) || []) m.set(p.pod, p);
  return m;
}
