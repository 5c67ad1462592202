// Issue 18 browser tests: live step output and step-level run progress, runs linked to rollouts.
// A real kiln-agent (with kiln-hwsim shims, time-scaled, as tests/e2e runs them) serves one
// host of the generated fleet: a run's flash step prints progress for several seconds, and the
// console shows it while the step runs. A rollout on another pod (no agent there: its upgrade
// run waits on its first step) shows the step-level bar and the run -> rollout link.
// ctx: see console.test.mjs (test, assert, assertEq, shot, newPage, setCurrentPage, WAIT, srv,
// admin, operatorToken, viewerToken, page).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ARTIFACTS, BUILD, log, onCleanup } from './lib/harness.mjs';

const AGENT = path.join(BUILD, 'agents', 'agent', 'kiln-agent');
const HWSIM = path.join(BUILD, 'agents', 'sim', 'kiln-hwsim');
// ~150 s of nominal flash time at 0.06: about 9 s, a progress line every ~0.8 s.
const TIME_SCALE = '0.06';

const LIVE_WORKFLOW = `name: live-work-demo
version: "1"
description: Issue 18 browser test, a tray flash that prints its progress for several seconds.
scope: host
steps:
  - id: inventory-before
    run: [kiln-inventory]
    timeout: 1m
    parse: json
  - id: flash-tray
    run: [nvfwupd, update_fw, -p, nvfw_GB200-P4975_0004_250301.1.0_custom_prod-signed.fwpkg, -y]
    timeout: 5m
  - id: inventory-after
    run: [kiln-inventory]
    timeout: 1m
`;

// Starts kiln-agent for `host` with its own kiln-hwsim state; stopped at cleanup.
function startAgent(srvUrl, host, enrollToken) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-live-work.'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'bin'));
  execFileSync(HWSIM, ['install-shims', path.join(dir, 'bin')], { env: { PATH: '/usr/bin:/bin' } });
  const enroll = path.join(dir, 'enroll-token');
  fs.writeFileSync(enroll, `${enrollToken}\n`, { mode: 0o600 });
  const logFile = path.join(ARTIFACTS, 'live-work-agent.log');
  const out = fs.openSync(logFile, 'w');
  const env = { PATH: '/usr/bin:/bin', KILN_HWSIM_DIR: path.join(dir, 'hwsim'), KILN_HWSIM_HOST: host, KILN_HWSIM_TIME_SCALE: TIME_SCALE };
  const child = spawn(
    AGENT,
    ['run', '--url', srvUrl, '--host', host, '--state-dir', path.join(dir, 'agent'), '--enroll-token-file', enroll,
      '--path-prepend', path.join(dir, 'bin'), '--env-allow', 'KILN_HWSIM_DIR,KILN_HWSIM_HOST,KILN_HWSIM_TIME_SCALE',
      '--poll-wait', '5', '--stop-grace', '2', '--log-level', 'info'],
    { env, stdio: ['ignore', out, out] },
  );
  let exited = false;
  child.on('exit', () => (exited = true));
  onCleanup(async () => {
    if (exited) return;
    child.kill('SIGTERM');
    const done = new Promise((r) => child.once('exit', r));
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    await done;
    clearTimeout(t);
  });
  log(`kiln-agent for ${host} (log: ${logFile})`);
  return { logFile, running: () => !exited };
}

async function until(what, fn, ms = 30000, every = 200) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

export async function liveWorkTests(ctx) {
  const { test, assert, assertEq, shot, newPage, setCurrentPage, WAIT, srv, admin, operatorToken, page } = ctx;
  if (!fs.existsSync(AGENT) || !fs.existsSync(HWSIM)) {
    await test('live work: kiln-agent and kiln-hwsim are built', async () => {
      throw new Error(`build kiln-agent and kiln-hwsim first (${AGENT}, ${HWSIM})`);
    });
    return;
  }
  // Pods of the generated fleet far from the ones other modules pick.
  const tst = (await admin.all('/pods')).filter((p) => p.id.startsWith('tst')).sort((a, b) => (a.id < b.id ? -1 : 1));
  const agentPod = tst[tst.length - 7];
  const rolloutPod = tst[tst.length - 9];
  const agentHost = (await admin.get(`/pods/${agentPod.id}`)).hosts.find((h) => !h.spare && h.state === 'available');

  let runId = '';
  let assignment = '';

  await test('live work: a running step\'s output appears in the console before the step ends', async () => {
    assert(agentHost, `an available host in ${agentPod.id}`);
    await admin.call('PUT', '/workflows/live-work-demo', LIVE_WORKFLOW, 'application/yaml');
    const enroll = (await admin.post('/tokens', { role: 'enroll', name: 'live-work-agent' })).token;
    const agent = startAgent(srv.url, agentHost.id, enroll);
    const run = await admin.post('/workflow-runs', { workflow: 'live-work-demo', hosts: [agentHost.id] });
    runId = run.id;

    const op = await newPage();
    await op.goto(`${srv.url}/`);
    await op.locator('#token').fill(operatorToken);
    await op.locator('button[type=submit]').click();
    await op.locator('[data-testid=role]').waitFor({ timeout: WAIT });
    await op.goto(`${srv.url}/#/runs/${runId}`);
    // One host: its step timeline is open; the flash's progress streams into it.
    const stdout = op.locator('[data-testid=live-output] [data-testid=live-stdout]');
    await op.waitForFunction(
      () => /PercentComplete: [1-9]0/.test(document.querySelector('[data-testid=live-stdout]')?.textContent || ''),
      null,
      { timeout: 40000 },
    );
    const seen = await stdout.textContent();
    // At that moment the step still runs: kilnd has not had its result.
    const view = await admin.get(`/workflow-runs/${runId}`);
    const h = view.hosts[0];
    assertEq(h.status, 'running', 'host status while output shows');
    assertEq(h.current_step, 'flash-tray', 'current step while output shows');
    assignment = h.assignment;
    assert(assignment && assignment.includes(agentHost.id), `the run names the current assignment: ${assignment}`);
    const live = await admin.get(`/assignments/${encodeURIComponent(assignment)}/output`);
    assertEq(live.state, 'dispatched', 'assignment state while its output shows');
    assert(!seen.includes('Firmware update successful'), `output seen before the end: ${seen}`);
    assertEq(await op.locator('[data-testid=live-output]').getAttribute('data-assignment'), assignment, 'panel reads that assignment');
    // Step-level progress: the first step done, the flash running, the last pending.
    const row = (s) => op.locator(`[data-testid=step-table] tr[data-step="${s}"]`);
    await op.waitForFunction(() => document.querySelector('[data-testid=step-table] tr[data-step="flash-tray"]')?.dataset.running === '1', null, {
      timeout: WAIT,
    });
    assertEq(await row('inventory-before').getAttribute('data-done'), '1', 'inventory-before done');
    assertEq(await row('inventory-after').getAttribute('data-pending'), '1', 'inventory-after pending');
    const text = await op.locator('[data-testid=step-progress-text]').textContent();
    assert(text.startsWith('1 of 3 host-steps done · 1 running · 1 pending'), `step progress text: ${text}`);
    await shot(op, '70-live-output-running');

    // More output arrives while the step runs: the panel grows without a reload.
    await op.waitForFunction((n) => (document.querySelector('[data-testid=live-stdout]')?.textContent || '').length > n, seen.length, { timeout: 20000 });

    // The run ends; the step's tail (the report) says how long the flash really took.
    await op.locator('h1 [data-testid=run-state][data-state=passed]').waitFor({ timeout: 60000 });
    const done = await admin.get(`/workflow-runs/${runId}`);
    const flash = done.hosts[0].steps.find((s) => s.step === 'flash-tray');
    const m = /Overall Time Taken: (\d+):(\d\d):(\d\d)/.exec(flash.stdout_tail || '');
    assert(m, `flash tail names its time: ${flash.stdout_tail}`);
    const took = Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]);
    assert(took < 60 && Math.abs(took * 1000 - flash.duration_ms) <= 2000, `measured ${took} s, the agent measured ${flash.duration_ms} ms (not the nominal ~150 s)`);
    await op.waitForFunction(() => document.querySelector('[data-testid=step-table] tr[data-step="inventory-after"]')?.dataset.done === '1', null, {
      timeout: WAIT,
    });
    assertEq(await op.locator('[data-testid=step-bar] [data-seg=done]').count(), 1, 'the bar is all done');
    assertEq(await op.locator('[data-testid=live-output]').count(), 0, 'no live panel once the step is over');
    await shot(op, '71-live-output-finished');
    assert(agent.running(), 'the agent still runs');
    await op.context().close();
    setCurrentPage(page);
  });

  await test('live work: a rollout\'s run shows step-level progress and links to its rollout, which the list shows', async () => {
    const hosts = (await admin.get(`/pods/${rolloutPod.id}`)).hosts;
    const bundle = await admin.post(
      '/bundles',
      {
        name: 'live-work-driver',
        version: '1.0.0',
        platforms: [rolloutPod.platform],
        workflow: 'firmware-upgrade',
        components: [
          {
            kind: 'driver',
            version: '580.65.06',
            artifact: 'https://firmware.example/driver/NVIDIA-Linux-aarch64-580.65.06.run',
            sha256: '9f2c4b1e7a3d5c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60',
          },
        ],
      },
    );
    const policy = { canary_pods: 1, waves: ['100%'], soak: '0s', max_concurrent_pods: 1, capacity_floor: { max_percent_down: 100 }, failure_budget: { pods: 1 } };
    const ro = await admin.post('/rollouts', { bundle: bundle.id, selector: { pods: [rolloutPod.id] }, policy, start: true });
    const run = await until('the rollout to start its upgrade run', async () => {
      const items = (await admin.get(`/rollouts/${ro.id}/pods`)).items;
      return items.length && items[0].run_id ? items[0].run_id : '';
    });
    const view = await admin.get(`/workflow-runs/${run}`);
    assertEq(view.rollout && view.rollout.id, ro.id, 'the run answer names its rollout');
    const n = view.hosts.length;
    assert(n > 1, `the upgrade runs on the pod's hosts: ${n}`);

    const op = await newPage();
    await op.goto(`${srv.url}/`);
    await op.locator('#token').fill(operatorToken);
    await op.locator('button[type=submit]').click();
    await op.locator('[data-testid=role]').waitFor({ timeout: WAIT });
    await op.goto(`${srv.url}/#/runs/${run}`);
    const link = op.locator('[data-testid=run-rollout-link]');
    await link.waitFor({ timeout: WAIT });
    assertEq(await link.getAttribute('href'), `#/rollouts/${ro.id}`, 'rollout link');
    assert((await link.textContent()).includes(rolloutPod.id), 'the link names the pod');
    // No agent on this pod: every host waits on the first step; the bar shows that share, the
    // other steps pending, not a full "running" bar at "0 of N hosts done".
    const first = view.steps[0];
    await op.waitForFunction(
      ([s, want]) => document.querySelector(`[data-testid=step-table] tr[data-step="${s}"]`)?.dataset.running === String(want),
      [first, n],
      { timeout: WAIT },
    );
    assertEq(await op.locator(`[data-testid=step-table] tr[data-step="${view.steps[1]}"]`).getAttribute('data-pending'), String(n), 'second step pending on every host');
    const seg = await op.locator('[data-testid=step-bar] [data-seg=running]').evaluate((e) => parseFloat(e.style.width));
    assert(Math.abs(seg - 100 / view.steps.length) < 0.5, `running share of the bar ${seg}% = 1/${view.steps.length}`);
    assertEq(await op.locator('[data-testid=step-bar] [data-seg=pending]').count(), 1, 'a pending share');
    await shot(op, '72-run-step-progress-rollout-link');

    await link.click();
    await op.waitForFunction((id) => location.hash === `#/rollouts/${id}`, ro.id, { timeout: WAIT });
    await op.locator('h1', { hasText: ro.id }).waitFor({ timeout: WAIT });

    // The runs list: pod and rollout columns.
    await op.goto(`${srv.url}/#/runs?workflow=firmware-upgrade`);
    const row = op.locator(`[data-testid=runs] tr[data-run="${run}"]`);
    await row.waitFor({ timeout: WAIT });
    assertEq((await row.locator('[data-testid=run-pods]').textContent()).trim(), rolloutPod.id, 'pod column');
    assertEq((await row.locator('[data-testid=run-rollout] a').textContent()).trim(), ro.id, 'rollout column');
    assertEq(await row.locator('[data-testid=run-rollout] a').getAttribute('href'), `#/rollouts/${ro.id}`, 'rollout column link');
    await op.goto(`${srv.url}/#/runs?workflow=live-work-demo`);
    if (runId) {
      const manual = op.locator(`[data-testid=runs] tr[data-run="${runId}"]`);
      await manual.waitFor({ timeout: WAIT });
      assertEq((await manual.locator('[data-testid=run-pods]').textContent()).trim(), agentPod.id, 'a manual run lists its pod');
      assertEq(await manual.locator('[data-testid=run-rollout] a').count(), 0, 'a manual run has no rollout');
    }
    await op.goto(`${srv.url}/#/runs`);
    await op.locator(`[data-testid=runs] tr[data-run="${run}"]`).waitFor({ timeout: WAIT });
    await shot(op, '73-runs-list-pod-rollout');
    await admin.post(`/rollouts/${ro.id}/abort`, { reason: 'live-work test done' });
    assert(hosts.length > 0, 'pod hosts');
    await op.context().close();
    setCurrentPage(page);
  });
}
