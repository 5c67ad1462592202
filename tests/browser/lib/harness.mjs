// Test harness for the console: a throwaway database on the PostgreSQL of deploy/test.sh
// (KILN_TEST_PG) or a private one, a real kilnd serving web/dist, the API, fleet files, and
// Debian's Chromium through playwright-core. Everything started here is stopped by cleanup().
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const BUILD = path.resolve(process.env.KILN_BUILD_DIR || path.join(ROOT, 'build'));
export const ARTIFACTS = path.join(BUILD, 'browser-artifacts');
export const WEB_DIST = path.join(ROOT, 'web', 'dist');
export const CHROMIUM = process.env.KILN_CHROMIUM || '/usr/bin/chromium';

const cleanups = [];
export function onCleanup(fn) {
  cleanups.push(fn);
}
export async function cleanup() {
  while (cleanups.length) {
    const fn = cleanups.pop();
    try {
      await fn();
    } catch (e) {
      console.error(`cleanup: ${e.message}`);
    }
  }
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, async () => {
    await cleanup();
    process.exit(130);
  });
}

export function log(msg) {
  process.stderr.write(`[browser] ${msg}\n`);
}

export function die(msg) {
  process.stderr.write(`[browser] error: ${msg}\n`);
  process.exit(2);
}

// Builds web/dist when its sources changed (deploy/lib/web-build.sh is fast when nothing did).
export function ensureWebBuilt() {
  const script = path.join(ROOT, 'deploy', 'lib', 'web-build.sh');
  if (process.env.KILN_SKIP_WEB_BUILD !== '1' && fs.existsSync(script)) {
    execFileSync('bash', [script], { stdio: ['ignore', 'inherit', 'inherit'] });
  }
  if (!fs.existsSync(path.join(WEB_DIST, 'index.html'))) die(`${WEB_DIST}/index.html is missing: run deploy/lib/web-build.sh`);
}

export function checkTools() {
  const kilnd = path.join(BUILD, 'orchestrator', 'kilnd', 'kilnd');
  if (!fs.existsSync(kilnd)) die(`${kilnd} is missing: build kilnd first (KILN_BUILD_DIR picks the build dir)`);
  if (!fs.existsSync(CHROMIUM)) die(`${CHROMIUM} is missing: run deploy/lib/browser-deps.sh (apt-get install chromium)`);
  return kilnd;
}

// The PostgreSQL server: KILN_TEST_PG (deploy/test.sh), or a private throwaway cluster made
// with deploy/lib/common.sh (as a standalone run or the benchmark).
export function testPg() {
  if (process.env.KILN_TEST_PG) return process.env.KILN_TEST_PG;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-browser-pg.'));
  const port = 40000 + Math.floor(Math.random() * 20000);
  const common = path.join(ROOT, 'deploy', 'lib', 'common.sh');
  log(`KILN_TEST_PG is not set: starting a throwaway PostgreSQL in ${dir}`);
  execFileSync('bash', ['-c', `source "${common}" && pg_up "$1" "$2" off`, 'pg', dir, String(port)], { stdio: 'inherit' });
  onCleanup(() => {
    execFileSync('bash', ['-c', `source "${common}" && pg_down "$1"`, 'pg', dir], { stdio: 'inherit' });
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return `host=${dir}/run port=${port} user=kiln`;
}

function psql(server, dbname, sql) {
  return execFileSync('psql', [`${server} dbname=${dbname}`, '-v', 'ON_ERROR_STOP=1', '-qtAc', sql], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

// A fresh database on the server; dropped at cleanup. Returns the libpq URL.
export function createDatabase(server, prefix = 'kiln_browser') {
  const name = `${prefix}_${crypto.randomBytes(4).toString('hex')}`;
  psql(server, 'postgres', `CREATE DATABASE ${name}`);
  onCleanup(() => psql(server, 'postgres', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  return `${server} dbname=${name}`;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Starts kilnd on a free loopback port serving web/dist with the repository's workflows
// (and `extraArgs`, e.g. ['--config', FILE]); returns {url, adminToken, logFile}.
export async function startKilnd(kilnd, databaseUrl, name = 'kilnd', extraArgs = []) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-browser-kilnd.'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  const tokenFile = path.join(dir, 'admin-token');
  const port = await freePort();
  const logFile = path.join(ARTIFACTS, `${name}.log`);
  const out = fs.openSync(logFile, 'w');
  const child = spawn(
    kilnd,
    [
      '--listen',
      `127.0.0.1:${port}`,
      '--database-url',
      databaseUrl,
      '--admin-token-file',
      tokenFile,
      '--web-root',
      WEB_DIST,
      // The repository's workflows (pre-job-health, l11-burn-in, quarantine-validation, ...).
      '--workflows-dir',
      path.join(ROOT, 'workflows'),
      ...extraArgs,
    ],
    { stdio: ['ignore', out, out] },
  );
  let exited = null;
  child.on('exit', (code, sig) => (exited = { code, sig }));
  onCleanup(async () => {
    if (exited) return;
    child.kill('SIGTERM');
    const done = new Promise((r) => child.once('exit', r));
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    await done;
    clearTimeout(t);
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30000;
  for (;;) {
    if (exited) die(`kilnd exited (${JSON.stringify(exited)}) before it answered, see ${logFile}`);
    try {
      const r = await fetch(`${url}/healthz`);
      if (r.ok && fs.existsSync(tokenFile)) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) die(`kilnd did not answer ${url}/healthz within 30 s, see ${logFile}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, adminToken: fs.readFileSync(tokenFile, 'utf8').trim(), logFile };
}

// A small REST client for set-up and cross-checks.
export function client(url, token) {
  const call = async (method, p, body, contentType = 'application/json') => {
    const init = { method, headers: { Authorization: `Bearer ${token}` } };
    if (body !== undefined) {
      init.headers['Content-Type'] = contentType;
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
    }
    const r = await fetch(`${url}/api/v1${p}`, init);
    const text = await r.text();
    const data = text ? JSON.parse(text) : null;
    if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text.slice(0, 300)}`);
    return data;
  };
  return {
    call,
    get: (p) => call('GET', p),
    post: (p, body, type) => call('POST', p, body, type),
    async all(p) {
      const items = [];
      let cursor = '';
      for (;;) {
        const sep = p.includes('?') ? '&' : '?';
        const page = await call('GET', `${p}${sep}limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        items.push(...page.items);
        if (!page.next_cursor) return items;
        cursor = page.next_cursor;
      }
    },
  };
}

// The fleet shape of core::generateFleet (orchestrator/core/fleet_generator.cc): sites of 8
// buildings of 288 pods, every 2nd pod clemente, labels row=a..h. kilnctl's output when built.
export function generateFleet(gpus, sitePrefix = 'site') {
  const kilnctl = path.join(BUILD, 'cli', 'kilnctl');
  if (sitePrefix === 'site' && fs.existsSync(kilnctl)) {
    try {
      return execFileSync(kilnctl, ['fleet', 'generate', '--gpus', String(gpus)], { encoding: 'utf8', maxBuffer: 1 << 30 });
    } catch (e) {
      log(`kilnctl fleet generate failed (${e.message.split('\n')[0]}); generating in node`);
    }
  }
  const pods = Math.ceil(gpus / 72);
  const fleet = {
    versions: {
      gpu_vbios: '97.00.82.00.0F',
      hmc_bundle: 'GB200-P4059-0301-1.3.1',
      nic: '28.43.1014',
      bmc: '25.04-1',
      sbios: '2.4.0',
      driver: '570.133.20',
      nvswitch: '1.3.0',
    },
    sites: [],
  };
  const pad = (n, w) => String(n).padStart(w, '0');
  let made = 0;
  for (let s = 1; made < pods; s++) {
    const site = { name: `${sitePrefix}${pad(s, 2)}`, buildings: [] };
    for (let b = 1; b <= 8 && made < pods; b++) {
      const building = { name: `${site.name}-b${pad(b, 2)}`, pods: [] };
      for (let p = 1; p <= 288 && made < pods; p++, made++) {
        building.pods.push({
          name: `${building.name}-p${pad(p, 4)}`,
          platform: made % 2 === 0 ? 'clemente' : 'catalina',
          labels: { row: String.fromCharCode(97 + Math.floor((p - 1) / 36)) },
        });
      }
      site.buildings.push(building);
    }
    fleet.sites.push(site);
  }
  return JSON.stringify(fleet);
}

// Chromium with the flags docs/DEPENDENCIES.md asks for; playwright-core gives it a fresh profile.
export async function launchBrowser() {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  onCleanup(() => browser.close());
  return browser;
}
