// Issue 18 browser tests: reliability caveats and configured targets, platforms from the fleet, the rollback dialog, inert dialog backgrounds, product copy.
// ctx: see console.test.mjs (test, assert, assertEq, shot, newPage, setCurrentPage, WAIT, srv,
// admin, operatorToken, viewerToken, page).
//
// Most of these run on a kilnd of their own (a fresh database, the demo fleet imported just
// now, targets from a config file) so that its history, targets and rollouts are known here.
// The rollback tests need rollouts whose pods succeeded; with no agent in these tests nothing
// ever finishes, so two finished rollouts are written into that database directly (the state
// kilnd itself leaves after two upgrades of the same pods), and everything else goes through
// the API and the console.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkTools, client, createDatabase, onCleanup, ROOT, startKilnd, testPg } from './lib/harness.mjs';

const TARGETS_YAML = ['# kilnd settings of the issue 18 browser tests', 'reliability_target: 0.5', 'pod_p90_target: 10800', ''].join('\n');

const nicBundle = (version, nic) =>
  [
    `name: shift-nic`,
    `version: "${version}"`,
    'platforms: [catalina]',
    'workflow: firmware-upgrade',
    'components:',
    '  - kind: nic',
    `    version: ${nic}`,
    `    artifact: https://firmware.example/cx7/fw-ConnectX7-rel-${nic.replace(/\./g, '_')}-MCX755106AS-HEA_Ax.bin`,
    '    sha256: 9f2c4b1e7a3d5c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60',
    '',
  ].join('\n');

export async function shiftTests(ctx) {
  const { test, assert, assertEq, shot, newPage, setCurrentPage, WAIT, page } = ctx;

  // ---- a kilnd of our own: fresh database, targets from a config file
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-shift.'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const configFile = path.join(dir, 'kilnd.yaml');
  fs.writeFileSync(configFile, TARGETS_YAML);
  const db = createDatabase(testPg(), 'kiln_shift');
  const srv = await startKilnd(checkTools(), db, 'kilnd-shift', ['--config', configFile]);
  const admin = client(srv.url, srv.adminToken);
  const psql = (sql) => execFileSync('psql', [db, '-v', 'ON_ERROR_STOP=1', '-qtAc', sql], { encoding: 'utf8' }).trim();
  await admin.post('/fleet/import', fs.readFileSync(path.join(ROOT, 'deploy/demo/fleet.yaml'), 'utf8'), 'application/yaml');
  const operatorToken = (await admin.post('/tokens', { role: 'operator', name: 'shift-operator' })).token;

  const openAs = async (token, hash, base = srv.url) => {
    const p = await newPage();
    await p.context().addInitScript((t) => sessionStorage.setItem('kiln.token', t), token);
    await p.goto(`${base}/#${hash}`);
    await p.locator('[data-testid=role]').waitFor({ timeout: WAIT });
    return p;
  };
  const done = async (p) => {
    await p.context().close();
    setCurrentPage(page);
  };

  await test('shift: on a fresh fleet the reliability view says how little history the window holds and does not judge the rate', async () => {
    const host = (await admin.get('/pods/prn-b01-p05')).hosts.find((h) => !h.spare);
    await admin.post('/interruptions', { id: 'shift-1', at: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'), cause: 'hbm', hosts: [host.id] });
    const report = await admin.get('/reliability');
    assert(report.history_start && report.covered_days < 1, `the API says the history is short: ${report.history_start}, ${report.covered_days} days`);
    assert(report.per_8k_gpus_per_day > report.north_star.per_8k_gpus_per_day * 10, `a huge rate over minutes: ${report.per_8k_gpus_per_day}`);
    const op = await openAs(operatorToken, '/reliability');
    const caveat = op.locator('[data-testid=coverage-caveat]');
    await caveat.waitFor({ timeout: WAIT });
    const text = await caveat.textContent();
    assert(/history starts/.test(text) && /28-day window holds only \d+ (s|min)/.test(text), `caveat: ${text}`);
    assert(text.includes('too short to judge'), `caveat says it is not judged: ${text}`);
    await op.waitForFunction(() => document.querySelector('[data-testid=interruptions] .big-value')?.textContent.trim() === '1', null, { timeout: WAIT });
    const rate = op.locator('[data-testid=rate]');
    assertEq(await rate.getAttribute('data-ok'), 'null', 'the rate is neither good nor bad');
    const rateText = await rate.textContent();
    assert(!rateText.includes('×'), `no ratio to the north star as if 28 days were covered: ${rateText}`);
    assert(/over \d+ (s|min)/.test(rateText) && rateText.includes('not judged'), `the rate says over what span: ${rateText}`);
    assertEq(await op.locator('[data-testid=mtbi]').getAttribute('data-ok'), 'null', 'MTBI not judged either');
    await shot(op, '80-reliability-short-history');
    await done(op);
  });

  await test('shift: the targets come from kilnd\'s configuration (reliability and the rollout P90)', async () => {
    const targets = await admin.get('/targets');
    assertEq(targets.reliability.per_8k_gpus_per_day, 0.5, 'GET /targets from the config file');
    assertEq(targets.rollouts.pod_p90_s, 10800, 'pod_p90_target from the config file');
    const op = await openAs(operatorToken, '/reliability');
    await op.locator('[data-testid=rate] .verdict').waitFor({ timeout: WAIT });
    const rate = await op.locator('[data-testid=rate]').textContent();
    assert(rate.includes('north star of 0.5') && !rate.includes('north star of 2'), `rate against the configured target: ${rate}`);
    const mtbi = await op.locator('[data-testid=mtbi]').textContent();
    assert(mtbi.includes('384,000'), `MTBI against 8,000 x 24 / 0.5 = 384,000: ${mtbi}`);
    const line = await op.locator('.north-star-label').textContent();
    assertEq(line.trim(), 'north star 0.5', 'the chart line');
    await shot(op, '81-reliability-configured-target');
    await done(op);
  });

  await test('shift: platform menus list the fleet\'s platforms, and follow the fleet', async () => {
    const options = async (p, sel) => p.$$eval(`${sel} option`, (os) => os.map((o) => o.value).filter(Boolean));
    let op = await openAs(operatorToken, '/reliability');
    await op.waitForFunction(() => document.querySelectorAll('#rel-platform option').length > 1, null, { timeout: WAIT });
    assertEq((await options(op, '#rel-platform')).join(), 'catalina,clemente', 'reliability: the demo fleet\'s platforms only');
    await done(op);
    // A san_miguel pod joins the fleet: the menus offer it.
    await admin.post('/fleet/import', {
      sites: [{ name: 'shm', buildings: [{ name: 'shm-b01', pods: [{ name: 'shm-b01-p01', platform: 'san_miguel' }] }] }],
    });
    op = await openAs(operatorToken, '/reliability');
    await op.waitForFunction(() => document.querySelectorAll('#rel-platform option').length > 3, null, { timeout: WAIT });
    assertEq((await options(op, '#rel-platform')).join(), 'catalina,clemente,san_miguel', 'reliability after the import');
    await op.goto(`${srv.url}/#/rollouts/new`);
    await op.locator('input[name=platform][value=san_miguel]').waitFor({ timeout: WAIT });
    const boxes = await op.$$eval('input[name=platform]', (bs) => bs.map((b) => b.value));
    assertEq(boxes.join(), 'catalina,clemente,san_miguel', 'new rollout: a checkbox per fleet platform');
    await op.goto(`${srv.url}/#/fleet`);
    await op.waitForFunction(() => document.querySelectorAll('#f-platform option').length > 3, null, { timeout: WAIT });
    assertEq((await options(op, '#f-platform')).join(), 'catalina,clemente,san_miguel', 'fleet filter');
    await shot(op, '82-platforms-from-fleet');
    await done(op);
  });

  // Two finished upgrades of the same two pods: shift-nic 1.0.0 (nic 28.44.1000), then 2.0.0
  // (28.45.1000). The demo's catalina pods run 28.43.2026.
  const b1 = await admin.post('/bundles', nicBundle('1.0.0', '28.44.1000'), 'application/yaml');
  const b2 = await admin.post('/bundles', nicBundle('2.0.0', '28.45.1000'), 'application/yaml');
  const rolledPods = ['prn-b01-p01', 'prn-b01-p02'];
  const finish = (rollout, nic, startedAgo, finishedAgo) =>
    psql(
      `BEGIN;` +
        `UPDATE rollouts SET state = 'completed', started_at = now() - interval '${startedAgo}', finished_at = now() - interval '${finishedAgo}' WHERE id = '${rollout}';` +
        `UPDATE rollout_pods SET phase = 'succeeded', started_at = now() - interval '${startedAgo}', finished_at = now() - interval '${finishedAgo}' WHERE rollout_id = '${rollout}';` +
        `UPDATE components SET version = '${nic}' WHERE kind = 'nic' AND pod_id IN (${rolledPods.map((p) => `'${p}'`).join(',')});` +
        `COMMIT;`,
    );
  const r1 = (await admin.post('/rollouts', { bundle: b1.id, selector: { pods: rolledPods } })).id;
  finish(r1, '28.44.1000', '3 hours', '150 minutes');
  const r2 = (await admin.post('/rollouts', { bundle: b2.id, selector: { pods: rolledPods } })).id;
  finish(r2, '28.45.1000', '1 hour', '30 minutes');

  await test('shift: Roll back… names the bundle and the versions it returns to, shows the dry run, and the background is inert', async () => {
    const op = await openAs(operatorToken, `/rollouts/${r2}`);
    await op.locator('[data-verb=rollback]').click();
    const dialog = op.locator('[role=dialog]');
    await dialog.locator('[data-testid=rollback-dry-run]').waitFor({ timeout: WAIT });
    const what = await dialog.locator('[data-testid=rollback-what]').textContent();
    assert(what.includes('shift-nic@2.0.0') && what.includes('on 2 pods'), `what is rolled back: ${what}`);
    assertEq((await dialog.locator('[data-testid=rollback-bundle]').textContent()).trim(), 'shift-nic@1.0.0', 'the bundle it returns to');
    const nic = dialog.locator('[data-testid=rollback-versions] tr[data-kind=nic]');
    const row = await nic.textContent();
    assert(row.includes('28.45.1000') && row.includes('28.44.1000'), `nic now and after: ${row}`);
    // The dry run is kilnd's plan of that rollout (POST /rollouts dry_run).
    const dry = await admin.post('/rollouts', { bundle: b1.id, selector: { pods: rolledPods }, dry_run: true });
    const dryText = await dialog.locator('[data-testid=rollback-dry-run]').textContent();
    for (const w of dry.plan.waves) for (const pod of w.pods) assert(dryText.includes(pod), `dry run lists ${pod}: ${dryText}`);
    assertEq(await dialog.locator('[data-testid=rollback-expected-refusal]').count(), 0, 'no refusal expected');
    // The page behind is inert: outside the dialog nothing takes focus; the dialog itself is live.
    const inert = await op.evaluate(() => {
      const dlg = document.querySelector('[role=dialog]');
      const behind = document.querySelector('[data-verb=rollback]');
      behind.focus();
      return {
        dialogInert: !!dlg.closest('[inert]'),
        behindInert: !!behind.closest('[inert]'),
        headerInert: !!document.querySelector('header')?.closest('[inert]'),
        behindFocused: document.activeElement === behind,
      };
    });
    assertEq(inert.dialogInert, false, 'the dialog is not inert');
    assertEq(inert.behindInert, true, 'the rollout page behind is inert');
    assertEq(inert.behindFocused, false, 'a button behind the dialog cannot take focus');
    // Tab stays in the dialog (the focus trap), Escape closes it and the page is live again.
    await dialog.locator('#rollback-reason').focus();
    for (let i = 0; i < 6; i++) await op.keyboard.press('Tab');
    assert(await op.evaluate(() => !!document.activeElement.closest('[role=dialog]')), 'Tab stays inside the dialog');
    await shot(op, '83-rollback-dialog');
    await op.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached', timeout: WAIT });
    assertEq(await op.evaluate(() => document.querySelectorAll('[inert]').length), 0, 'nothing is inert once the dialog is closed');
    // The page's own copy: the P90 target from kilnd, nothing about how it was built.
    const main = await op.locator('main').textContent();
    assert(!/seed/i.test(main), 'no development copy on the rollout page');
    const target = await op.locator('[data-testid=p90-target]').textContent();
    assert(target.includes('Target P90: 3 h'), `P90 target from pod_p90_target 10800: ${target}`);
    await done(op);
  });

  await test('shift: rolling back an older rollout that a later one changed shows kilnd\'s refusal', async () => {
    const op = await openAs(operatorToken, `/rollouts/${r1}`);
    await op.locator('[data-verb=rollback]').click();
    const dialog = op.locator('[role=dialog]');
    const expected = dialog.locator('[data-testid=rollback-expected-refusal]');
    await expected.waitFor({ timeout: WAIT });
    assert((await expected.textContent()).includes(`changed again by rollout ${r2}`), 'the preview expects the refusal');
    await dialog.locator('[data-confirm]').click();
    const refused = dialog.locator('[data-testid=rollback-refused]');
    await refused.waitFor({ timeout: WAIT });
    const text = await refused.textContent();
    assert(text.includes('kilnd refused the rollback') && text.includes(`roll back ${r2} first`) && text.includes('409'), `kilnd's message: ${text}`);
    assertEq(await dialog.locator('[data-testid=rollback-refused-link]').getAttribute('href'), `#/rollouts/${encodeURIComponent(r2)}`, 'a link to the later rollout');
    assertEq((await admin.get(`/rollouts?limit=100`)).items.filter((r) => r.id !== r1 && r.id !== r2).length, 0, 'nothing was created');
    await shot(op, '84-rollback-refused');
    await done(op);
  });

  await test('shift: a confirmed rollback opens the new rollout, marked as a rollback; a downgrade shows its reason', async () => {
    const op = await openAs(operatorToken, `/rollouts/${r2}`);
    await op.locator('[data-verb=rollback]').click();
    const dialog = op.locator('[role=dialog]');
    await dialog.locator('[data-testid=rollback-dry-run]').waitFor({ timeout: WAIT });
    await dialog.locator('#rollback-reason').fill('CX7 28.45 drops links, INC-5120');
    await dialog.locator('[data-confirm]').click();
    await op.waitForFunction((old) => /#\/rollouts\/[^/]+$/.test(location.hash) && !location.hash.endsWith(`/${old}`), r2, { timeout: WAIT });
    const back = decodeURIComponent(op.url().split('#/rollouts/')[1]);
    assertEq((await admin.get(`/rollouts/${back}`)).rollback_of, r2, 'the new rollout rolls back r2');
    const mark = op.locator('[data-testid=downgrade-mark]');
    await mark.waitFor({ timeout: WAIT });
    assert((await mark.textContent()).includes(`rolls back ${r2}`), 'the rollback is marked');
    await shot(op, '85-rollback-created');
    // A downgrade created on purpose: its page carries the reason of its created event.
    const older = await admin.post('/bundles', nicBundle('0.9.0', '28.40.1000'), 'application/yaml');
    const reason = 'NIC 28.43 resets under load, INC-5121';
    const down = await admin.post('/rollouts', { bundle: older.id, selector: { pods: ['prn-b01-p04'] }, allow_downgrade: true, reason });
    await op.goto(`${srv.url}/#/rollouts/${down.id}`);
    await op.locator('[data-testid=downgrade-mark-reason]').waitFor({ timeout: WAIT });
    assertEq((await op.locator('[data-testid=downgrade-mark-reason]').textContent()).trim(), reason, 'the downgrade reason');
    assertEq(await op.locator('[data-testid=downgrade-mark]').getAttribute('data-pods'), '1', 'one pod goes back');
    await shot(op, '86-downgrade-marked');
    await done(op);
  });

  await test('shift: a host action dialog makes the page behind it inert', async () => {
    const host = (await admin.get('/pods/prn-b01-p06')).hosts.find((h) => !h.spare && h.state === 'available');
    const op = await openAs(operatorToken, `/hosts/${host.id}`);
    await op.locator('[data-action=drain]').click();
    const dialog = op.locator('[role=dialog]');
    await dialog.waitFor({ timeout: WAIT });
    const r = await op.evaluate(() => {
      const behind = document.querySelector('[data-action=drain]');
      behind.focus();
      return {
        inert: !!behind.closest('[inert]'),
        focused: document.activeElement === behind,
        dialogInert: !!document.querySelector('[role=dialog]').closest('[inert]'),
        inDialog: !!document.activeElement.closest('[role=dialog]'),
      };
    });
    assertEq(r.inert, true, 'the host page behind is inert');
    assertEq(r.focused, false, 'its buttons take no focus');
    assertEq(r.dialogInert, false, 'the dialog is live');
    await shot(op, '87-host-dialog-inert');
    await op.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached', timeout: WAIT });
    assertEq(await op.evaluate(() => document.querySelectorAll('[inert]').length), 0, 'the page is live again');
    assert(await op.evaluate(() => document.activeElement?.dataset?.action === 'drain'), 'focus back on the opener');
    await done(op);
  });
}
