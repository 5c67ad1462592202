// Pure helpers of the bundle views: version comparison, the diff of two bundles, compliance
// summaries. No DOM here (node --test).

const utf8 = new TextEncoder();

// kilnd's version order, mirrored from compareVersions in orchestrator/rollouts/bundle.cc (the
// rule compliance and rollout plans use): versions are compared by runs; two digit runs
// compare as numbers (leading zeros ignored, so "1.9" < "1.10" and "007" = "7"), anything else
// byte by byte; when one string is a prefix of the other the longer one is newer. C++ compares
// `char`, which is signed here, so bytes of non-ASCII UTF-8 sort before ASCII: we compare the
// same bytes as signed values so even those cases agree with kilnd. <0, 0, >0.
export function compareVersions(a, b) {
  const x = utf8.encode(String(a));
  const y = utf8.encode(String(b));
  const digit = (c) => c >= 48 && c <= 57;
  const signed = (c) => (c >= 128 ? c - 256 : c);
  let i = 0;
  let j = 0;
  while (i < x.length && j < y.length) {
    if (digit(x[i]) && digit(y[j])) {
      let ei = i;
      let ej = j;
      while (ei < x.length && digit(x[ei])) ei++;
      while (ej < y.length && digit(y[ej])) ej++;
      // Leading zeros off: then the longer run is the bigger number, equal lengths compare as text.
      while (i < ei && x[i] === 48) i++;
      while (j < ej && y[j] === 48) j++;
      const la = ei - i;
      const lb = ej - j;
      if (la !== lb) return la < lb ? -1 : 1;
      for (let k = 0; k < la; k++) if (x[i + k] !== y[j + k]) return x[i + k] < y[j + k] ? -1 : 1;
      i = ei;
      j = ej;
    } else {
      if (x[i] !== y[j]) return signed(x[i]) < signed(y[j]) ? -1 : 1;
      i++;
      j++;
    }
  }
  if (i < x.length) return 1;
  if (j < y.length) return -1;
  return 0;
}

// Where version `b` stands against `a`: 'newer', 'same' or 'older' (kilnd's bundle_is words).
export function versionRelation(a, b) {
  const c = compareVersions(b, a);
  return c > 0 ? 'newer' : c === 0 ? 'same' : 'older';
}

// The diff of two bundles, per component kind (and per prerequisite kind): rows
// {kind, a, b, relation} in kind order, where relation says what B's version is against A's:
// 'newer' | 'same' | 'older', or 'only_a' / 'only_b' when one bundle has no such component.
// Also {platforms: {onlyA, onlyB, both}, workflow: {a, b, same}} and counts per relation.
export function diffBundles(a, b) {
  const rows = diffKinds(a.components || [], b.components || [], 'version');
  const prerequisites = diffKinds(a.prerequisites || [], b.prerequisites || [], 'min_version');
  const pa = new Set(a.platforms || []);
  const pb = new Set(b.platforms || []);
  const counts = { newer: 0, same: 0, older: 0, only_a: 0, only_b: 0 };
  for (const r of rows) counts[r.relation]++;
  return {
    rows,
    prerequisites,
    counts,
    platforms: {
      both: [...pa].filter((p) => pb.has(p)).sort(),
      onlyA: [...pa].filter((p) => !pb.has(p)).sort(),
      onlyB: [...pb].filter((p) => !pa.has(p)).sort(),
    },
    workflow: { a: a.workflow, b: b.workflow, same: a.workflow === b.workflow },
  };
}

function diffKinds(listA, listB, field) {
  const byKind = (list) => new Map(list.map((c) => [c.kind, c[field]]));
  const ma = byKind(listA);
  const mb = byKind(listB);
  const kinds = [...new Set([...ma.keys(), ...mb.keys()])].sort();
  return kinds.map((kind) => {
    const va = ma.has(kind) ? ma.get(kind) : null;
    const vb = mb.has(kind) ? mb.get(kind) : null;
    const relation = va === null ? 'only_b' : vb === null ? 'only_a' : versionRelation(va, vb);
    return { kind, a: va, b: vb, relation };
  });
}

export const RELATION_TEXT = {
  newer: 'B is newer',
  same: 'same',
  older: 'B is older',
  only_a: 'only in A',
  only_b: 'only in B',
};

// Compliance states (api/openapi.yaml Compliance.pods[].state), worst last, with chip tones.
export const COMPLIANCE_STATES = [
  { id: 'compliant', label: 'Compliant', tone: 'good' },
  { id: 'needs_upgrade', label: 'Needs upgrade', tone: 'work' },
  { id: 'needs_downgrade', label: 'Needs downgrade', tone: 'warn' },
  { id: 'incompatible', label: 'Incompatible', tone: 'off' },
];
export function complianceState(id) {
  return COMPLIANCE_STATES.find((s) => s.id === id) || { id, label: id || 'unknown', tone: 'off' };
}

// "12 pods: 3 compliant, 8 need an upgrade, 1 needs a downgrade" from counts.
export function complianceSummary(counts) {
  const c = counts || {};
  const total = COMPLIANCE_STATES.reduce((n, s) => n + (c[s.id] || 0), 0);
  const parts = [];
  if (c.compliant) parts.push(`${c.compliant} compliant`);
  if (c.needs_upgrade) parts.push(`${c.needs_upgrade} need${c.needs_upgrade === 1 ? 's' : ''} an upgrade`);
  if (c.needs_downgrade) parts.push(`${c.needs_downgrade} need${c.needs_downgrade === 1 ? 's' : ''} a downgrade`);
  if (c.incompatible) parts.push(`${c.incompatible} incompatible`);
  return `${total} pod${total === 1 ? '' : 's'}${parts.length ? `: ${parts.join(', ')}` : ''}`;
}

// The pods of a compliance answer whose state is `state` ('' = all), worst first, then by id.
export function compliancePods(pods, state) {
  const rank = new Map(COMPLIANCE_STATES.map((s, i) => [s.id, i]));
  return (pods || [])
    .filter((p) => !state || p.state === state)
    .slice()
    .sort((x, y) => (rank.get(y.state) ?? 9) - (rank.get(x.state) ?? 9) || (x.pod < y.pod ? -1 : x.pod > y.pod ? 1 : 0));
}
