// The console in headless Chromium against a real kilnd (ctest label `browser`):
// sign-in, the fleet heatmap (every pod a cell), filters, the pod panel, an operator's drain
// seen live, live updates made elsewhere, a viewer that is offered no mutating control;
// workflow runs (start from the host view, detail, list, cancel; kilnd's 422 and 409 in the
// form) and the quarantine view; then rollouts, fleet colour-by and reliability
// (rollouts-reliability.mjs).
// Screenshots of each view go to $KILN_BUILD_DIR/browser-artifacts/. Exits non-zero on failure.
import fs from 'node:fs';
import path from 'node:path';
import {
  ARTIFACTS,
  checkTools,
  cleanup,
  client,
  createDatabase,
  ensureWebBuilt,
  generateFleet,
  launchBrowser,
  log,
  ROOT,
  startKilnd,
  testPg,
} from './lib/harness.mjs';
import { adminViewTests } from './admin-views.mjs';
import { hostsViewTests } from './hosts-view.mjs';
import { liveWorkTests } from './live-work.mjs';
import { rolloutAndReliabilityTests } from './rollouts-reliability.mjs';
import { shiftTests } from './shift.mjs';

const WAIT = 15000;
const results = [];
let currentPage = null;

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
function assertEq(actual, expected, what) {
  if (actual !== expected) throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

// KILN_BROWSER_ONLY=REGEX runs only the tests whose names match (for work on one view; the
// tests that a matching one relies on for its state must match too).
const ONLY = process.env.KILN_BROWSER_ONLY ? new RegExp(process.env.KILN_BROWSER_ONLY) : null;

async function test(name, fn) {
  if (ONLY && !ONLY.test(name)) return;
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true, ms: Date.now() - t0 });
    console.log(`ok    ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push({ name, ok: false, ms: Date.now() - t0, error: e });
    console.log(`FAIL  ${name}\n      ${String(e.stack || e).split('\n').slice(0, 4).join('\n      ')}`);
    if (currentPage) {
      const file = path.join(ARTIFACTS, `FAILED-${name.replace(/[^a-z0-9]+/gi, '-')}.png`);
      await currentPage.screenshot({ path: file, fullPage: true }).catch(() => {});
      console.log(`      screenshot: ${file}`);
    }
  }
}

async function shot(page, name) {
  // The header is sticky: scrolled, it would be drawn over the middle of a full-page shot.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

async function signIn(page, url, token) {
  await page.goto(`${url}/`);
  await page.locator('#token').fill(token);
  await page.locator('button[type=submit]').click();
  await page.locator('[data-testid=role]').waitFor({ timeout: WAIT });
}

// Waits until the heatmap has loaded `n` pods (after filters).
async function waitForPods(page, n) {
  await page.waitForFunction(
    (want) => {
      const h = document.querySelector('[data-testid=heatmap]');
      return h && h.dataset.pods === String(want);
    },
    n,
    { timeout: WAIT },
  );
}

async function drawnCells(page) {
  return page.$$eval('canvas[data-cells]', (cs) => cs.reduce((n, c) => n + Number(c.dataset.cells), 0));
}

// Clicks the pod's cell: its index in its building (pods sorted by id) gives its position.
async function clickPod(page, pods, podId) {
  const pod = pods.find((p) => p.id === podId);
  const ids = pods.filter((p) => p.building === pod.building).map((p) => p.id).sort();
  const i = ids.indexOf(podId);
  const canvas = page.locator(`canvas[data-building="${pod.building}"]`);
  const box = await canvas.boundingBox();
  const d = await canvas.evaluate((c) => ({ ...c.dataset }));
  const size = Number(d.size);
  const gap = Number(d.gap);
  const cols = Number(d.cols);
  await page.mouse.click(box.x + gap + (i % cols) * (size + gap) + size / 2, box.y + gap + Math.floor(i / cols) * (size + gap) + size / 2);
}

async function main() {
  ensureWebBuilt();
  const kilnd = checkTools();
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  for (const f of fs.readdirSync(ARTIFACTS)) if (f.startsWith('FAILED-')) fs.rmSync(path.join(ARTIFACTS, f));
  const db = createDatabase(testPg());
  const srv = await startKilnd(kilnd, db, 'kilnd-browser-test');
  log(`kilnd at ${srv.url} (log: ${srv.logFile})`);
  const admin = client(srv.url, srv.adminToken);

  // The demo fleet (12 pods) and 1,200 generated pods: more than one 1,000-pod page.
  await admin.post('/fleet/import', fs.readFileSync(path.join(ROOT, 'deploy/demo/fleet.yaml'), 'utf8'), 'application/yaml');
  await admin.post('/fleet/import', generateFleet(1200 * 72, 'tst'), 'application/json');
  const pods = await admin.all('/pods');
  const buildings = new Set(pods.map((p) => p.building));
  log(`imported ${pods.length} pods in ${buildings.size} buildings`);
  const operatorToken = (await admin.post('/tokens', { role: 'operator', name: 'browser-operator' })).token;
  const viewerToken = (await admin.post('/tokens', { role: 'viewer', name: 'browser-viewer' })).token;

  const browser = await launchBrowser();
  const newPage = async () => {
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await ctx.newPage();
    page.on('pageerror', (e) => console.log(`      page error: ${e.message}`));
    currentPage = page;
    return page;
  };

  const page = await newPage();

  await test('sign-in refuses a token kilnd does not accept', async () => {
    await page.goto(`${srv.url}/`);
    await shot(page, '01-sign-in');
    await page.locator('#token').fill('not-a-token');
    await page.locator('button[type=submit]').click();
    const alert = page.locator('.signin [role=alert]');
    await alert.waitFor({ timeout: WAIT });
    assert((await alert.textContent()).includes('does not accept'), `unexpected message: ${await alert.textContent()}`);
  });

  await test('admin signs in and the header shows the role and a live indicator', async () => {
    await page.locator('#token').fill(srv.adminToken);
    await page.locator('button[type=submit]').click();
    await page.locator('[data-testid=role]').waitFor({ timeout: WAIT });
    assertEq((await page.locator('[data-testid=role]').textContent()).trim(), 'admin', 'role badge');
    await page.waitForFunction(() => document.querySelector('[data-testid=live] [role=status]')?.textContent === 'Live', null, { timeout: WAIT });
    const stored = await page.evaluate(() => sessionStorage.getItem('kiln.token'));
    assertEq(stored, srv.adminToken, 'token kept in sessionStorage');
  });

  await test('fleet heatmap draws one cell for every pod, grouped by building', async () => {
    await waitForPods(page, pods.length);
    assertEq(await drawnCells(page), pods.length, 'cells drawn');
    assertEq(await page.locator('canvas[data-building]').count(), buildings.size, 'one canvas per building');
    const summary = await page.locator('[data-testid=fleet-summary]').textContent();
    assert(summary.includes(pods.length.toLocaleString('en-US')), `summary "${summary}" names ${pods.length} pods`);
    // Every state in the legend has a text label and a short code, not only a colour.
    const legend = await page.locator('.legend button').allTextContents();
    for (const word of ['In service', 'Degraded', 'Maintenance', 'Incoming', 'Down', 'Retired'])
      assert(legend.some((t) => t.includes(word)), `legend has ${word}`);
    const label = await page.locator('canvas[data-building="prn-b01"]').getAttribute('aria-label');
    assert(/6 pods/.test(label), `building canvas has an accessible name: ${label}`);
    await shot(page, '02-fleet');
  });

  await test('filters narrow the heatmap like the API does', async () => {
    await page.locator('#f-site').selectOption('prn');
    await waitForPods(page, 12);
    assertEq(await drawnCells(page), 12, 'cells for site prn');
    await page.locator('#f-platform').selectOption('clemente');
    const clemente = pods.filter((p) => p.site === 'prn' && p.platform === 'clemente').length;
    await waitForPods(page, clemente);
    assertEq(await drawnCells(page), clemente, 'cells for prn clemente');
    await shot(page, '03-fleet-filtered');
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await waitForPods(page, pods.length);
    await page.locator('#f-label').fill('row=a');
    await page.locator('#f-label').press('Enter');
    const rowA = (await admin.all('/pods?label=row%3Da')).length;
    await waitForPods(page, rowA);
    assertEq(await drawnCells(page), rowA, 'cells for label row=a (as GET /pods?label=row=a)');
    await page.locator('#f-state').selectOption('degraded');
    await waitForPods(page, 0);
    await page.getByText('No pod matches these filters.').waitFor({ timeout: WAIT });
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await waitForPods(page, pods.length);
  });

  const podId = 'prn-b01-p02';
  const detail = await admin.get(`/pods/${podId}`);
  const host = detail.hosts.find((h) => !h.spare && h.state === 'available');

  await test('clicking a pod opens its panel with racks, hosts and component versions', async () => {
    await clickPod(page, pods, podId);
    const panel = page.locator('[data-testid=pod-panel]');
    await panel.locator('#pod-title', { hasText: podId }).waitFor({ timeout: WAIT });
    await panel.locator('[data-testid=pod-hosts] tbody tr').first().waitFor({ timeout: WAIT });
    assertEq(await panel.locator('[data-testid=pod-hosts] tbody tr').count(), detail.hosts.length, 'host rows');
    for (const h of detail.hosts.slice(0, 3)) await panel.locator(`tr[data-host="${h.id}"]`).waitFor({ timeout: WAIT });
    assertEq(await panel.locator('tbody tr .tag', { hasText: 'spare' }).count(), detail.spares.length, 'spares tagged');
    const text = await panel.textContent();
    for (const r of detail.rack_ids) assert(text.includes(r), `panel names rack ${r}`);
    const driver = Object.keys(detail.component_versions.driver)[0];
    assert(text.includes('driver') && text.includes(driver), `panel shows component versions (driver ${driver})`);
    assert(page.url().includes(`pod=${podId}`), 'the pod is in the URL');
    await shot(page, '04-pod-panel');
  });

  await test('an operator drains a host and sees its state change without a reload', async () => {
    const op = await newPage();
    await signIn(op, srv.url, operatorToken);
    assertEq((await op.locator('[data-testid=role]').textContent()).trim(), 'operator', 'role badge');
    await op.evaluate(() => (window.__noReload = 'still-here'));
    await op.goto(`${srv.url}/#/fleet?pod=${podId}`);
    await op.locator(`[data-testid=pod-panel] tr[data-host="${host.id}"] a`).click();
    await op.locator('h1 [data-testid=host-state][data-state=available]').waitFor({ timeout: WAIT });
    assertEq(await op.locator('[data-action=override]').count(), 0, 'override buttons for an operator');
    await shot(op, '05-host-operator');
    await op.locator('[data-action=drain]').click();
    await op.locator('[role=dialog]').waitFor({ timeout: WAIT });
    await op.locator('[data-confirm]').click(); // without a reason: refused in the dialog
    await op.locator('[role=dialog] [role=alert]', { hasText: 'reason is required' }).waitFor({ timeout: WAIT });
    await op.locator('#dlg-reason').fill('browser test: firmware prep');
    await shot(op, '06-drain-dialog');
    await op.locator('[data-confirm]').click();
    await op.locator('h1 [data-testid=host-state][data-state=draining]').waitFor({ timeout: WAIT });
    await op.locator('[data-testid=events] td', { hasText: 'browser test: firmware prep' }).waitFor({ timeout: WAIT });
    assertEq(await op.evaluate(() => window.__noReload), 'still-here', 'page was not reloaded');
    assertEq((await admin.get(`/hosts/${host.id}`)).state, 'draining', 'state in the API');
    await op.locator('[data-action=undrain]').waitFor({ timeout: WAIT });
    assertEq(await op.locator('[data-action=drain]').count(), 0, 'drain offered while draining');
    await shot(op, '07-host-drained');
    currentPage = op;

    // A change made elsewhere shows up by polling, still without a reload.
    await admin.post(`/hosts/${host.id}/actions`, { action: 'undrain', reason: 'browser test: elsewhere' });
    await op.locator('h1 [data-testid=host-state][data-state=available]').waitFor({ timeout: WAIT });
    assertEq(await op.evaluate(() => window.__noReload), 'still-here', 'page was not reloaded');
    await op.context().close();
    currentPage = page;
  });

  await test('an admin is offered the audited override', async () => {
    await page.goto(`${srv.url}/#/hosts/${host.id}`);
    await page.locator('h1 [data-testid=host-state]').waitFor({ timeout: WAIT });
    await page.locator('[data-action=override]').waitFor({ timeout: WAIT });
    await page.locator('[data-action=fail]').waitFor({ timeout: WAIT });
  });

  await test('a dialog keeps Tab inside, closes on Escape and gives focus back to its opener', async () => {
    await page.locator('[data-action=override]').first().focus();
    await page.keyboard.press('Enter');
    await page.locator('[role=dialog]').waitFor({ timeout: WAIT });
    for (const key of ['Tab', 'Tab', 'Tab', 'Tab', 'Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab']) {
      await page.keyboard.press(key);
      assert(await page.evaluate(() => !!document.activeElement.closest('[role=dialog]')), `focus stays in the dialog after ${key}`);
    }
    await page.keyboard.press('Escape');
    await page.locator('[role=dialog]').waitFor({ state: 'detached', timeout: WAIT });
    assertEq(await page.evaluate(() => document.activeElement.dataset.action), 'override', 'focus back on the opener');
  });

  await test('a viewer is offered no mutating control', async () => {
    const v = await newPage();
    await signIn(v, srv.url, viewerToken);
    assertEq((await v.locator('[data-testid=role]').textContent()).trim(), 'viewer', 'role badge');
    await waitForPods(v, pods.length);
    await v.goto(`${srv.url}/#/fleet?pod=${podId}`);
    await v.locator('[data-testid=pod-hosts] tbody tr').first().waitFor({ timeout: WAIT });
    assertEq(await v.locator('[data-action]').count(), 0, 'action controls in the pod panel');
    await v.goto(`${srv.url}/#/hosts/${host.id}`);
    await v.locator('h1 [data-testid=host-state]').waitFor({ timeout: WAIT });
    await v.locator('[data-testid=gpus] tbody tr').first().waitFor({ timeout: WAIT });
    assertEq(await v.locator('[data-action]').count(), 0, 'action buttons on the host view');
    assertEq(await v.locator('[data-testid=host-actions]').count(), 0, 'actions section on the host view');
    await shot(v, '08-host-viewer');
    await v.getByRole('button', { name: 'Sign out' }).click();
    await v.locator('#token').waitFor({ timeout: WAIT });
    assertEq(await v.evaluate(() => sessionStorage.getItem('kiln.token')), null, 'token removed at sign-out');
    await v.context().close();
    currentPage = page;
  });

  await test('a host that does not exist says so', async () => {
    await page.goto(`${srv.url}/#/hosts/no-such-host`);
    await page.locator('.error-box', { hasText: 'No such host' }).waitFor({ timeout: WAIT });
    await page.waitForTimeout(1500);
    assertEq(await page.locator('[data-testid=live] [role=status]').textContent(), 'Live', 'a 404 leaves the live indicator live');
    assert(await page.locator('[data-testid=live].live-ok').count(), 'live indicator stays green');
  });

  await test('an unknown console route says there is no such page, with a link home', async () => {
    await page.goto(`${srv.url}/#/no-such-view`);
    const nf = page.locator('[data-testid=not-found]');
    await nf.waitFor({ timeout: WAIT });
    assert((await nf.textContent()).includes('No such page'), 'no such page message');
    await nf.getByRole('link').click();
    await waitForPods(page, pods.length);
  });

  await test('the skip link is the first focusable element and moves focus to the main region', async () => {
    await page.reload();
    await waitForPods(page, pods.length);
    await page.keyboard.press('Tab');
    assertEq(await page.evaluate(() => document.activeElement.textContent), 'Skip to main content', 'first Tab stop');
    await page.keyboard.press('Enter');
    assertEq(await page.evaluate(() => document.activeElement.id), 'main', 'focus on main');
  });

  await test('"/" focuses the search, which finds a pod by id in any case', async () => {
    await page.keyboard.press('/');
    assertEq(await page.evaluate(() => document.activeElement.id), 'find', '"/" focuses the search box');
    await page.keyboard.type(podId.toUpperCase());
    await page.keyboard.press('Enter');
    await page.locator('[data-testid=pod-panel] #pod-title', { hasText: podId }).waitFor({ timeout: WAIT });
  });

  // Workflow runs. No agent runs in this test: a run stays running with its first step
  // dispatched, which is what the detail page shows until it is cancelled.
  const runHost = detail.hosts.filter((h) => !h.spare && h.state === 'available' && h.id !== host.id)[0];
  let runId = '';

  await test('the workflows of the repository are loaded', async () => {
    const names = (await admin.get('/workflows')).items.map((w) => w.name);
    for (const w of ['pre-job-health', 'l11-burn-in', 'quarantine-validation']) assert(names.includes(w), `workflow ${w} in ${names}`);
  });

  await test('an operator starts a pre-job check from the host view, sees it dispatched, and cancels it', async () => {
    const op = await newPage();
    await signIn(op, srv.url, operatorToken);
    await op.goto(`${srv.url}/#/hosts/${runHost.id}`);
    await op.locator('h1 [data-testid=host-state]').waitFor({ timeout: WAIT });
    await op.locator('[data-start-run=pre-job]').click();
    // The form, preselected: workflow, the host, and the workflow's declared params.
    await op.waitForFunction(() => document.querySelector('#run-workflow')?.value === 'pre-job-health', null, { timeout: WAIT });
    await op.locator('#param-expected_gpus').waitFor({ timeout: WAIT });
    assertEq(await op.locator('#run-hosts').inputValue(), runHost.id, 'hosts preselected');
    assertEq(await op.locator('#param-expected_gpus').inputValue(), '4', 'param default');
    for (const p of ['min_pcie_gen', 'min_pcie_width', 'expected_driver']) await op.locator(`#param-${p}`).waitFor({ timeout: WAIT });
    // kilnd's 422 is shown, at the form and at the field.
    await op.locator('#param-expected_gpus').fill('four');
    await op.locator('[data-testid=start-run-submit]').click();
    const err = op.locator('[data-testid=start-error]');
    await err.waitFor({ timeout: WAIT });
    const errText = await err.textContent();
    assert(errText.includes('422') && errText.includes('expected_gpus'), `422 shown: ${errText}`);
    await op.locator('[data-param=expected_gpus] [role=alert]').waitFor({ timeout: WAIT });
    await shot(op, '09-start-run-error');
    await op.locator('#param-expected_gpus').fill('4');
    await shot(op, '10-start-run');
    await op.locator('[data-testid=start-run-submit]').click();
    await op.waitForFunction(() => /#\/runs\/r-\d+$/.test(location.hash), null, { timeout: WAIT });
    runId = decodeURIComponent((await op.evaluate(() => location.hash)).split('/').pop());
    await op.locator('h1 [data-testid=run-state][data-state=running]').waitFor({ timeout: WAIT });
    const row = op.locator(`[data-testid=run-hosts] tr[data-host="${runHost.id}"]`);
    await row.waitFor({ timeout: WAIT });
    assertEq((await row.locator('[data-testid=current-step]').textContent()).trim(), 'gpu-state', 'current step');
    assertEq(await row.locator('[data-testid=host-run-status]').getAttribute('data-state'), 'running', 'host status');
    // One host: its (empty) step timeline is open and says what is dispatched.
    await op.locator('[data-testid=host-steps]', { hasText: 'gpu-state' }).waitFor({ timeout: WAIT });
    const api = await admin.get(`/workflow-runs/${runId}`);
    assertEq(api.workflow, 'pre-job-health', 'workflow in the API');
    assertEq(api.hosts[0].host, runHost.id, 'host in the API');
    assertEq(api.created_by !== '', true, 'created_by');
    await shot(op, '11-run-detail-running');

    // Listed, newest first, and found by the state and host filters.
    await op.goto(`${srv.url}/#/runs`);
    await op.locator(`[data-testid=runs] tr[data-run="${runId}"] [data-testid=run-state][data-state=running]`).waitFor({ timeout: WAIT });
    assertEq(await op.locator('[data-testid=runs] tbody tr').first().getAttribute('data-run'), runId, 'newest first');
    await op.locator('[data-testid=start-run]').waitFor({ timeout: WAIT });
    await op.locator('#r-state').selectOption('passed');
    await op.getByText('No run matches these filters.').waitFor({ timeout: WAIT });
    await op.locator('#r-state').selectOption('running');
    await op.locator(`[data-testid=runs] tr[data-run="${runId}"]`).waitFor({ timeout: WAIT });
    await op.locator('#r-host').fill(runHost.id);
    await op.locator('#r-host').press('Enter');
    await op.waitForFunction((h) => location.hash.includes(`host=${h}`), runHost.id, { timeout: WAIT });
    await op.locator(`[data-testid=runs] tr[data-run="${runId}"]`).waitFor({ timeout: WAIT });
    await shot(op, '12-runs-list');

    // The host view lists the host's runs.
    await op.goto(`${srv.url}/#/hosts/${runHost.id}`);
    await op.locator(`[data-testid=host-runs] tr[data-run="${runId}"]`).waitFor({ timeout: WAIT });

    // Cancel, with a confirmation.
    await op.goto(`${srv.url}/#/runs/${runId}`);
    await op.locator('[data-testid=cancel-run]').click();
    await op.locator('[role=dialog]', { hasText: `Cancel ${runId}?` }).waitFor({ timeout: WAIT });
    await shot(op, '13-cancel-dialog');
    await op.locator('[role=dialog] [data-confirm]').click();
    await op.locator('h1 [data-testid=run-state][data-state=cancelled]').waitFor({ timeout: WAIT });
    assertEq(await op.locator('[data-testid=cancel-run]').count(), 0, 'cancel offered for a cancelled run');
    const row2 = op.locator(`[data-testid=run-hosts] tr[data-host="${runHost.id}"] [data-testid=host-run-status]`);
    await op.waitForFunction(
      (h) => document.querySelector(`[data-testid=run-hosts] tr[data-host="${h}"] [data-testid=host-run-status]`)?.dataset.state === 'cancelled',
      runHost.id,
      { timeout: WAIT },
    );
    assertEq(await row2.textContent(), 'Cancelled', 'host row status text');
    assertEq((await admin.get(`/workflow-runs/${runId}`)).state, 'cancelled', 'state in the API');
    await shot(op, '14-run-cancelled');
    await op.context().close();
    currentPage = page;
  });

  await test('a burn-in of an in-service pod from the pod panel shows kilnd\'s 409', async () => {
    await page.goto(`${srv.url}/#/fleet?pod=${podId}`);
    await page.locator('[data-testid=pod-panel] [data-start-run=burn-in]').click();
    await page.waitForFunction(() => document.querySelector('#run-workflow')?.value === 'l11-burn-in', null, { timeout: WAIT });
    await page.locator('#run-pods').waitFor({ timeout: WAIT });
    assertEq(await page.locator('#run-pods').inputValue(), podId, 'pod preselected');
    assertEq(await page.locator('#run-hosts').count(), 0, 'no hosts field for a pod-scoped workflow');
    await page.locator('[data-testid=start-run-submit]').click();
    const err = page.locator('[data-testid=start-error]');
    await err.waitFor({ timeout: WAIT });
    const text = await err.textContent();
    assert(text.includes('409') && text.includes('burn-in takes incoming hardware'), `409 shown: ${text}`);
    assert(page.url().includes('/runs/new'), 'stays on the form');
  });

  // Quarantine: fail -> repair -> repair_complete (which starts a quarantine-validation run),
  // and a repeat offender repaired three times (admin override back to repair in between).
  const qPod = await admin.get('/pods/prn-b01-p03');
  const [qHost, qOffender] = qPod.hosts.filter((h) => !h.spare && h.state === 'available');
  const qRuns = {};

  await test('the quarantine view lists repaired hosts with repairs, last failure and validation run', async () => {
    await admin.post(`/hosts/${qHost.id}/actions`, { action: 'fail', reason: 'XID 79 on GPU 2 (browser test)' });
    await admin.post(`/hosts/${qHost.id}/actions`, { action: 'repair', reason: 'reseat tray' });
    const done = await admin.post(`/hosts/${qHost.id}/actions`, { action: 'repair_complete', reason: 'reseated' });
    assert(done.quarantine_run, `repair_complete started a validation run: ${JSON.stringify(done)}`);
    qRuns[qHost.id] = done.quarantine_run;
    await admin.post(`/hosts/${qOffender.id}/actions`, { action: 'fail', reason: 'XID 64 remap failure (browser test)' });
    await admin.post(`/hosts/${qOffender.id}/actions`, { action: 'repair', reason: 'RMA' });
    for (let i = 0; i < 3; i++) {
      if (i > 0) await admin.post(`/hosts/${qOffender.id}/actions`, { action: 'override', to: 'repair', reason: `repair again ${i}` });
      qRuns[qOffender.id] = (await admin.post(`/hosts/${qOffender.id}/actions`, { action: 'repair_complete', reason: `repaired ${i + 1}` })).quarantine_run;
    }
    const q = (await admin.get('/quarantine')).items;
    assertEq(q.find((x) => x.host === qOffender.id).repairs, 3, 'repairs in the API');

    await page.goto(`${srv.url}/#/quarantine`);
    const row = page.locator(`[data-testid=quarantine] tr[data-host="${qHost.id}"]`);
    await row.waitFor({ timeout: WAIT });
    assertEq((await row.locator('[data-testid=repairs]').textContent()).trim(), '1', 'repairs');
    assert((await row.textContent()).includes('XID 79 on GPU 2 (browser test)'), 'last failure shown');
    const link = row.locator(`[data-testid=validation-run] a[href="#/runs/${qRuns[qHost.id]}"]`);
    await link.waitFor({ timeout: WAIT });
    await row.locator('[data-testid=validation-run] [data-testid=run-state][data-state=running]').waitFor({ timeout: WAIT });
    await page.waitForFunction(
      (h) => document.querySelector(`[data-testid=quarantine] tr[data-host="${h}"] [data-testid=validation-progress]`)?.textContent.includes('pass 1 of 2'),
      qHost.id,
      { timeout: WAIT },
    );
    assert(/^\d+ s$/.test((await row.locator('[data-testid=time-in-quarantine]').textContent()).trim()), 'time in quarantine');
    const off = page.locator(`[data-testid=quarantine] tr[data-host="${qOffender.id}"]`);
    assertEq((await off.locator('[data-testid=repairs]').textContent()).trim(), '3 repeat offender', 'repeat offender tagged');
    assertEq(await row.locator('.tag', { hasText: 'repeat offender' }).count(), 0, 'one repair is no repeat offender');
    assert((await page.locator('[data-testid=quarantine-summary]').textContent()).includes('1 repeat offender'), 'summary');
    assert((await page.locator('[data-testid=quarantine-summary]').textContent()).startsWith('2 hosts'), 'summary count');
    await shot(page, '15-quarantine');
    // The link opens the validation run.
    await link.click();
    await page.locator(`[data-testid=run-hosts] tr[data-host="${qHost.id}"]`).waitFor({ timeout: WAIT });
    assert((await page.locator('h1').textContent()).includes('quarantine-validation'), 'validation run page');
    await shot(page, '16-validation-run');
  });

  // A finished run, driven by fake agents through the agent API: a two-step workflow of our
  // own on a whole pod (18 hosts), 3 hosts reporting 3 GPUs so the GPU-count check fails.
  const smokeYaml = [
    'name: ui-smoke',
    'version: "1"',
    'description: Browser-test workflow, a parsed check then a plain step.',
    'scope: host',
    'params:',
    '  expected_gpus: {type: int, default: 4, description: GPUs the host must show}',
    'steps:',
    '  - id: probe',
    '    run: [kiln-probe, --json]',
    '    timeout: 10s',
    '    parse: json',
    '    checks:',
    '      - name: GPU count',
    '        path: gpu_count',
    '        eq: "{{expected_gpus}}"',
    '  - id: settle',
    '    run: ["true"]',
    '    timeout: 5s',
    '',
  ].join('\n');

  await test('a finished run shows step timelines, checks, output tails, parsed values and the spares verdict', async () => {
    await admin.call('PUT', '/workflows/ui-smoke', smokeYaml, 'application/yaml');
    const smokePod = await admin.get('/pods/prn-b01-p04');
    assertEq(smokePod.hosts.length, 18, 'hosts of the pod');
    const bad = new Set(smokePod.hosts.slice(0, 3).map((h) => h.id));
    const run = await admin.post('/workflow-runs', { workflow: 'ui-smoke', pods: [smokePod.id] });
    const enroll = (await admin.post('/tokens', { role: 'enroll', name: 'browser-enroll' })).token;
    for (const h of smokePod.hosts) {
      const agent = client(srv.url, (await client(srv.url, enroll).post('/agents/register', { host: h.id, boot_id: 'boot-1' })).token);
      for (let guard = 0; guard < 10; guard++) {
        const work = await agent.call('GET', `/agents/${h.id}/work?wait=0&boot_id=boot-1`);
        if (!work) break; // 204: nothing more for this host
        const a = work.assignment || work;
        const gpus = bad.has(h.id) ? 3 : 4;
        const probe = a.step_id === 'probe';
        await agent.post(`/assignments/${a.id}/result`, {
          lease: a.lease,
          host: h.id,
          started: true,
          exit_code: 0,
          duration_ms: probe ? 1234 : 5,
          stdout_tail: probe ? `{"gpu_count": ${gpus}, "driver": "570.133.20"}\n` : '',
          stderr_tail: probe && gpus < 4 ? 'warning: GPU 3 not found on the PCIe bus\n' : '',
          parsed: probe ? { gpu_count: gpus, driver: '570.133.20' } : null,
          boot_id: 'boot-1',
        });
      }
    }
    for (let i = 0; i < 100 && (await admin.get(`/workflow-runs/${run.id}`)).state === 'running'; i++) await new Promise((r) => setTimeout(r, 200));
    const done = await admin.get(`/workflow-runs/${run.id}`);
    assertEq(done.state, 'failed', 'run verdict');
    assertEq(done.summary.healthy, 15, 'healthy hosts');

    await page.goto(`${srv.url}/#/runs/${run.id}`);
    await page.locator('h1 [data-testid=run-state][data-state=failed]').waitFor({ timeout: WAIT });
    const spares = page.locator(`[data-testid=run-pods] tr[data-pod="${smokePod.id}"] [data-testid=spares]`);
    await spares.waitFor({ timeout: WAIT });
    assert((await spares.textContent()).includes('spares cover: no (healthy GPUs 60/64)'), `spares: ${await spares.textContent()}`);
    assertEq(await page.locator('[data-testid=run-hosts] tbody tr[data-host]').count(), 18, 'host rows');
    const failed = [...bad][0];
    const row = page.locator(`[data-testid=run-hosts] tr[data-host="${failed}"]`);
    assertEq(await row.locator('[data-testid=host-run-status]').getAttribute('data-state'), 'failed', 'failed host status');
    assertEq((await row.locator('[data-testid=healthy]').textContent()).trim(), 'no', 'healthy column');
    await row.locator('button.expand').click();
    const steps = page.locator('[data-testid=host-steps]');
    const probeStep = steps.locator('li[data-step=probe][data-outcome=failed]');
    await probeStep.waitFor({ timeout: WAIT });
    const probeText = await probeStep.textContent();
    assert(probeText.includes('FAIL') && probeText.includes('GPU count'), `failed check shown: ${probeText}`);
    assert(probeText.includes('1.23 s') && probeText.includes('exit code 0') && probeText.includes('attempt 1'), `step facts: ${probeText}`);
    await probeStep.locator('details.output summary', { hasText: 'stderr' }).click();
    await probeStep.locator('details.output pre', { hasText: 'GPU 3 not found' }).waitFor({ timeout: WAIT });
    await probeStep.locator('details.output summary', { hasText: 'stdout' }).click();
    await steps.locator('details.parsed summary').click();
    await steps.locator('details.parsed pre', { hasText: '"gpu_count": 3' }).waitFor({ timeout: WAIT });
    // A healthy host ran both steps.
    const good = smokePod.hosts.find((h) => !bad.has(h.id)).id;
    await page.locator(`[data-testid=run-hosts] tr[data-host="${good}"] button.expand`).click();
    await page.locator(`#steps-${good} li[data-step=settle][data-outcome=passed]`).waitFor({ timeout: WAIT });
    await page.locator(`#steps-${good} li[data-step=probe][data-outcome=passed]`).waitFor({ timeout: WAIT });
    await shot(page, '19-run-finished');
    // The status filter shows the failed hosts only.
    await page.getByRole('button', { name: 'Failed (3)' }).click();
    assertEq(await page.locator('[data-testid=run-hosts] tbody tr[data-host]').count(), 3, 'failed rows');
  });

  await test('a viewer sees runs and the quarantine but no Start or Cancel control', async () => {
    const v = await newPage();
    await signIn(v, srv.url, viewerToken);
    await v.goto(`${srv.url}/#/runs`);
    await v.locator(`[data-testid=runs] tr[data-run="${runId}"]`).waitFor({ timeout: WAIT });
    assertEq(await v.locator('[data-testid=start-run]').count(), 0, 'Start run for a viewer');
    await v.goto(`${srv.url}/#/runs/${qRuns[qHost.id]}`);
    await v.locator('h1 [data-testid=run-state][data-state=running]').waitFor({ timeout: WAIT });
    await v.locator(`[data-testid=run-hosts] tr[data-host="${qHost.id}"]`).waitFor({ timeout: WAIT });
    assertEq(await v.locator('[data-testid=cancel-run]').count(), 0, 'Cancel for a viewer');
    await shot(v, '17-run-viewer');
    await v.goto(`${srv.url}/#/runs/new?workflow=pre-job-health&hosts=${runHost.id}`);
    await v.getByText('Starting runs needs the operator role').waitFor({ timeout: WAIT });
    assertEq(await v.locator('[data-testid=start-run-form]').count(), 0, 'start form for a viewer');
    await v.goto(`${srv.url}/#/fleet?pod=${podId}`);
    await v.locator('[data-testid=pod-hosts] tbody tr').first().waitFor({ timeout: WAIT });
    assertEq(await v.locator('[data-start-run]').count(), 0, 'run shortcuts in the pod panel');
    await v.goto(`${srv.url}/#/hosts/${runHost.id}`);
    await v.locator(`[data-testid=host-runs] tr[data-run="${runId}"]`).waitFor({ timeout: WAIT });
    assertEq(await v.locator('[data-start-run]').count(), 0, 'run shortcuts on the host view');
    await v.goto(`${srv.url}/#/quarantine`);
    await v.locator(`[data-testid=quarantine] tr[data-host="${qHost.id}"]`).waitFor({ timeout: WAIT });
    await v.goto(`${srv.url}/#/runs`);
    await v.locator(`[data-testid=runs] tr[data-run="${qRuns[qOffender.id]}"]`).waitFor({ timeout: WAIT });
    await shot(v, '18-runs-list-viewer');
    await v.context().close();
    currentPage = page;
  });

  await test('the run list pages with cursors, newest first', async () => {
    const before = (await admin.all('/workflow-runs')).length;
    for (let i = 0; i < 51 - before; i++) await admin.post('/workflow-runs', { workflow: 'pre-job-health', hosts: [runHost.id] });
    const newest = (await admin.get('/workflow-runs?limit=1')).items[0].id;
    await page.goto(`${srv.url}/#/runs`);
    await page.locator(`[data-testid=runs] tbody tr[data-run="${newest}"]`).waitFor({ timeout: WAIT });
    assertEq(await page.locator('[data-testid=runs] tbody tr').count(), 50, 'rows on page 1');
    assertEq(await page.locator(`[data-testid=runs] tr[data-run="${runId}"]`).count(), 0, 'the oldest run on page 1');
    await page.getByRole('button', { name: 'Older ›' }).click();
    await page.locator(`[data-testid=runs] tr[data-run="${runId}"]`).waitFor({ timeout: WAIT });
    assertEq(await page.locator('[data-testid=runs] tbody tr').count(), 1, 'rows on page 2');
    await page.getByRole('button', { name: '‹ Newer' }).click();
    await page.locator(`[data-testid=runs] tbody tr[data-run="${newest}"]`).waitFor({ timeout: WAIT });
  });

  // Rollouts, the fleet's colour-by switch and reliability (rollouts-reliability.mjs), then the
  // views of issue 18, each module with its own tests (they share this context).
  const ctx = {
    test,
    assert,
    assertEq,
    shot,
    newPage,
    setCurrentPage: (p) => (currentPage = p),
    WAIT,
    srv,
    admin,
    operatorToken,
    viewerToken,
    page,
  };
  await rolloutAndReliabilityTests(ctx);
  await hostsViewTests(ctx);
  await adminViewTests(ctx);
  await liveWorkTests(ctx);
  await shiftTests(ctx);
}

let fatal = null;
try {
  await main();
} catch (e) {
  fatal = e;
  console.log(`FAIL  set-up: ${e.stack || e}`);
}
await cleanup();
const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed + (fatal ? 1 : 0);
console.log(`\nbrowser console tests: screenshots in ${ARTIFACTS}`);
for (const r of results.filter((x) => !x.ok)) console.log(`  failed: ${r.name}: ${r.error.message.split('\n')[0]}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
