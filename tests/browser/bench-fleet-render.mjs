// Render benchmark of the fleet view (not a test): imports a 1,000,000-GPU fleet (13,889
// pods) into a throwaway database, loads the console in headless Chromium and prints
//   - time to first full render (navigation -> every cell drawn and painted), split into
//     fetching the pods (one GET /api/v1/fleet/heatmap) and drawing them;
//   - time for a filter change (select -> cells redrawn and painted), several filters;
//   - time of a poll that brings no change.
// Target: under 1 s for a filter change and for the render once the pods are in.
//   node tests/browser/bench-fleet-render.mjs [--gpus 1000000] [--runs 3]
// Uses KILN_TEST_PG when set, else a private throwaway PostgreSQL; kilnd from KILN_BUILD_DIR.
// KILN_BENCH_URL + KILN_BENCH_TOKEN (admin) measure a running kilnd instead (no import).
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
  startKilnd,
  testPg,
} from './lib/harness.mjs';

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const GPUS = arg('gpus', 1000000);
const RUNS = arg('runs', 3);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x) => `${Math.round(x)} ms`;

// In the page: resolves after the heatmap committed a render newer than `seq` and the
// browser painted it (two animation frames).
const AFTER_RENDER = `(seq) => new Promise((resolve) => {
  const check = () => {
    const h = document.querySelector('[data-testid=heatmap]');
    if (h && Number(h.dataset.renderSeq || 0) > seq)
      requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now())));
    else setTimeout(check, 1);
  };
  check();
})`;

async function main() {
  ensureWebBuilt();
  let srv;
  let admin;
  if (process.env.KILN_BENCH_URL) {
    srv = { url: process.env.KILN_BENCH_URL, adminToken: process.env.KILN_BENCH_TOKEN };
    admin = client(srv.url, srv.adminToken);
  } else {
    const kilnd = checkTools();
    const db = createDatabase(testPg(), 'kiln_bench');
    srv = await startKilnd(kilnd, db, 'kilnd-bench');
    admin = client(srv.url, srv.adminToken);
    let t = Date.now();
    const fleet = generateFleet(GPUS);
    log(`generated the ${GPUS.toLocaleString('en-US')}-GPU fleet file (${(fleet.length / 1e6).toFixed(1)} MB) in ${Date.now() - t} ms`);
    t = Date.now();
    const imported = await admin.post('/fleet/import', fleet, 'application/json');
    log(`imported ${imported.pods_created} pods, ${imported.hosts_created} hosts in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }
  const sites = await admin.get('/sites');
  const total = sites.items.reduce((n, s) => n + s.pods, 0);

  const browser = await launchBrowser();
  const ctx = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  await ctx.addInitScript((token) => sessionStorage.setItem('kiln.token', token), srv.adminToken);
  const page = await ctx.newPage();
  page.on('pageerror', (e) => log(`page error: ${e.message}`));

  const loads = [];
  for (let run = 0; run < RUNS; run++) {
    await page.goto(`${srv.url}/#/fleet`);
    await page.waitForFunction((n) => document.querySelector('[data-testid=heatmap]')?.dataset.pods === String(n), total, {
      timeout: 120000,
      polling: 5,
    });
    const painted = await page.evaluate(`(${AFTER_RENDER})(0)`);
    const p = await page.evaluate(() => ({ ...window.__kilnPerf }));
    const cells = await page.$$eval('canvas[data-cells]', (cs) => cs.reduce((n, c) => n + Number(c.dataset.cells), 0));
    if (cells !== total) throw new Error(`drew ${cells} cells for ${total} pods`);
    loads.push({
      total: painted,
      fetch: p.fetchEnd - p.fetchStart,
      render: painted - p.fetchEnd,
      boot: p.fetchStart,
      commit: p.firstCommitMs,
    });
  }
  await page.screenshot({ path: path.join(ARTIFACTS, 'bench-fleet-1M.png') });
  const heap = await page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize : 0));
  const canvases = await page.locator('canvas[data-cells]').count();

  // Filter changes: each one is a select change, timed in the page up to the next paint.
  const filters = [
    ['#f-state', 'in_service'],
    ['#f-state', ''],
    ['#f-platform', 'clemente'],
    ['#f-platform', ''],
    ['#f-site', 'site02'],
    ['#f-site', ''],
  ];
  const filterTimes = [];
  for (let run = 0; run < RUNS; run++) {
    for (const [sel, value] of filters) {
      const dt = await page.evaluate(
        async ([sel, value, after]) => {
          const h = document.querySelector('[data-testid=heatmap]');
          const seq = Number(h.dataset.renderSeq || 0);
          const el = document.querySelector(sel);
          const t0 = performance.now();
          el.value = value;
          el.dispatchEvent(new Event('change', { bubbles: true }));
          const t1 = await eval(after)(seq);
          return t1 - t0;
        },
        [sel, value, AFTER_RENDER],
      );
      filterTimes.push({ filter: `${sel.slice(3)}=${value || 'all'}`, ms: dt });
    }
  }

  // A poll with no change: the fleet view re-fetches every page; buildings are memoized.
  const pollMs = await page.evaluate(async () => {
    const t0 = performance.now();
    const h = document.querySelector('[data-testid=heatmap]');
    const seq = Number(h.dataset.renderSeq || 0);
    await new Promise((resolve) => {
      const check = () => (Number(h.dataset.renderSeq || 0) > seq ? resolve() : setTimeout(check, 5));
      check();
    });
    return { wait: performance.now() - t0, commit: window.__kilnPerf.lastCommitMs };
  });

  console.log(`\nfleet render benchmark: ${total.toLocaleString('en-US')} pods (${(total * 72).toLocaleString('en-US')} GPUs), ${canvases} building canvases, Chromium headless, ${RUNS} runs`);
  console.log(`  first full render (navigation -> painted), median: ${ms(median(loads.map((l) => l.total)))}  [runs: ${loads.map((l) => ms(l.total)).join(', ')}]`);
  console.log(`    app start before the first request:          ${ms(median(loads.map((l) => l.boot)))}`);
  console.log(`    fetching the pods (GET /fleet/heatmap):      ${ms(median(loads.map((l) => l.fetch)))}`);
  console.log(`    grouping + drawing + paint:                  ${ms(median(loads.map((l) => l.render)))} (Preact render + canvas drawing: ${ms(median(loads.map((l) => l.commit)))})`);
  const byFilter = {};
  for (const f of filterTimes) (byFilter[f.filter] = byFilter[f.filter] || []).push(f.ms);
  console.log(`  filter change (select -> painted), median of all: ${ms(median(filterTimes.map((f) => f.ms)))}, max ${ms(Math.max(...filterTimes.map((f) => f.ms)))}`);
  for (const [k, v] of Object.entries(byFilter)) console.log(`    ${k.padEnd(22)} ${ms(median(v))}`);
  console.log(`  a poll that changed nothing: ${ms(pollMs.commit)} on the main thread after its last page (came ${ms(pollMs.wait)} later)`);
  console.log(`  JS heap after load: ${(heap / 1e6).toFixed(1)} MB`);
}

let code = 0;
try {
  await main();
} catch (e) {
  console.error(`bench failed: ${e.stack || e}`);
  code = 1;
}
await cleanup();
process.exit(code);
