// The console in headless Chromium against a real kilnd (ctest label `browser`):
// sign-in, the fleet heatmap (every pod a cell), filters, the pod panel, an operator's drain
// seen live, live updates made elsewhere, and a viewer that is offered no mutating control.
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

const WAIT = 15000;
const results = [];
let currentPage = null;

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
function assertEq(actual, expected, what) {
  if (actual !== expected) throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

async function test(name, fn) {
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
    assert(text.includes('driver') && text.includes('570.133.20'), 'panel shows component versions');
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
  });
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
