// Browser tests of the console's phase 3 (run by console.test.mjs after its own, on the same
// kilnd and fleet): the fleet coloured by compliance and health; a rollout planned, created,
// started, paused, resumed and aborted from the UI (no agent runs, so the canary stays in
// flight and the other pods wait: the page says why); a viewer offered no rollout control; the
// reliability report after interruptions recorded through the API and the form, a lemon sent
// to quarantine.
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './lib/harness.mjs';

const PASTED_BUNDLE = [
  'name: gb300-driver-test',
  'version: "1.0.0"',
  'platforms: [clemente]',
  'workflow: firmware-upgrade',
  'components:',
  '  - kind: driver',
  '    version: 580.65.06',
  '    artifact: https://firmware.example/driver/NVIDIA-Linux-aarch64-580.65.06.run',
  '    sha256: 9f2c4b1e7a3d5c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60',
  '',
].join('\n');

// A bundle OLDER than what the demo's catalina pods run (nic 28.43.2026): a rollout of it is a
// downgrade (issue 18), never offered as an upgrade.
const OLDER_BUNDLE = [
  'name: gb200-nic-older-test',
  'version: "0.9.0"',
  'platforms: [catalina]',
  'workflow: firmware-upgrade',
  'components:',
  '  - kind: nic',
  '    version: 28.40.1000',
  '    artifact: https://firmware.example/cx7/fw-ConnectX7-rel-28_40_1000-MCX755106AS-HEA_Ax.bin',
  '    sha256: 9f2c4b1e7a3d5c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60',
  '',
].join('\n');

// ctx: {test, assert, assertEq, shot, newPage, setCurrentPage, WAIT, srv, admin,
// operatorToken, viewerToken, page}
export async function rolloutAndReliabilityTests(ctx) {
  const { test, assert, assertEq, shot, newPage, setCurrentPage, WAIT, srv, admin, operatorToken, viewerToken, page } = ctx;

  // A new page signed in with `token` straight on `hash` (the sign-in form itself is tested
  // in console.test.mjs; landing on the fleet first would load every pod for nothing).
  const openAs = async (token, hash) => {
    const p = await newPage();
    await p.context().addInitScript((t) => sessionStorage.setItem('kiln.token', t), token);
    await p.goto(`${srv.url}/#${hash}`);
    await p.locator('[data-testid=role]').waitFor({ timeout: WAIT });
    return p;
  };

  // The demo bundle (catalina only): in building prn-b02 the 4 catalina pods need it and the
  // 2 clemente pods are incompatible.
  const bundle = await admin.post('/bundles', fs.readFileSync(path.join(ROOT, 'deploy/demo/bundle.yaml'), 'utf8'), 'application/yaml');
  const selector = { buildings: ['prn-b02'] };
  const plan = (await admin.post('/rollouts', { bundle: bundle.id, selector, dry_run: true })).plan;
  let rolloutId = '';

  await test('the fleet is coloured by compliance with a bundle and by health, with text legends', async () => {
    const compliance = await admin.get(`/bundles/${bundle.id}/compliance`);
    await page.goto(`${srv.url}/#/fleet?colour=compliance&bundle=${bundle.id}`);
    const legend = page.locator('[data-testid=class-legend][data-mode=compliance]');
    await legend.waitFor({ timeout: WAIT });
    for (const [state, n] of Object.entries(compliance.counts)) {
      await page.waitForFunction(
        ([id, want]) => document.querySelector(`[data-class="c:${id}"] .count`)?.textContent === want.toLocaleString('en-US'),
        [state, n],
        { timeout: WAIT },
      );
    }
    const text = await legend.textContent();
    for (const word of ['Compliant', 'Needs upgrade', 'Incompatible']) assert(text.includes(word), `compliance legend has ${word}`);
    const label = await page.locator('canvas[data-building="prn-b02"]').getAttribute('aria-label');
    assert(/4 needs upgrade, 2 incompatible/.test(label), `building prn-b02 summarised by compliance: ${label}`);
    await page.goto(`${srv.url}/#/fleet?colour=compliance&bundle=${bundle.id}&pod=prn-b02-p03`);
    await page.locator('[data-testid=pod-compliance]', { hasText: 'Incompatible: platform clemente' }).waitFor({ timeout: WAIT });
    await shot(page, '20-fleet-compliance');

    // Health: healthy GPUs against 64 (72 with every spare), as GET /pods says.
    const pods = await admin.all('/pods');
    const spares = pods.filter((p) => p.healthy_gpus >= 64 && p.healthy_gpus < 72).length;
    const full = pods.filter((p) => p.healthy_gpus >= 72).length;
    assert(spares >= 1, 'a pod with quarantined hosts runs on its spares');
    await page.goto(`${srv.url}/#/fleet`);
    await page.locator('[data-colour=health]').click();
    await page.locator('[data-testid=class-legend][data-mode=health]').waitFor({ timeout: WAIT });
    assert(page.url().includes('colour=health'), 'the mode is in the URL');
    await page.waitForFunction((n) => document.querySelector('[data-class="h:spares"] .count')?.textContent === n.toLocaleString('en-US'), spares, { timeout: WAIT });
    await page.waitForFunction((n) => document.querySelector('[data-class="h:full"] .count')?.textContent === n.toLocaleString('en-US'), full, { timeout: WAIT });
    await shot(page, '21-fleet-health');
    await page.locator('[data-colour=state]').click();
    await page.locator('.legend button[data-state=in_service]').waitFor({ timeout: WAIT });
  });

  await test('a bundle older than the pods is a downgrade: compliance says so, the form warns and asks for consent and a reason', async () => {
    const older = await admin.post('/bundles', OLDER_BUNDLE, 'application/yaml');
    const sel = { buildings: ['prn-b01'] };
    const compliance = await admin.get(`/bundles/${older.id}/compliance`);
    assert(compliance.counts.needs_downgrade > 0, `compliance counts needs_downgrade: ${JSON.stringify(compliance.counts)}`);
    assertEq(compliance.counts.needs_upgrade || 0, 0, 'no pod "needs upgrade" to an older bundle');
    const downPod = compliance.pods.find((p) => p.state === 'needs_downgrade' && p.pod.startsWith('prn-b01-'));
    assert(downPod, 'a prn-b01 pod needs a downgrade');
    // The fleet, coloured by compliance: its own legend class, and the pod panel names what goes back.
    await page.goto(`${srv.url}/#/fleet?colour=compliance&bundle=${older.id}&pod=${downPod.pod}`);
    await page.waitForFunction(
      (want) => document.querySelector('[data-class="c:needs_downgrade"] .count')?.textContent === want.toLocaleString('en-US'),
      compliance.counts.needs_downgrade,
      { timeout: WAIT },
    );
    await page.locator('[data-testid=pod-compliance]', { hasText: 'Needs downgrade' }).waitFor({ timeout: WAIT });
    await page.locator('[data-testid=pod-compliance]', { hasText: '(older)' }).waitFor({ timeout: WAIT });
    await page.locator('[data-testid=compliance-downgrade]').waitFor({ timeout: WAIT });
    await shot(page, '20b-fleet-compliance-downgrade');

    const dry = await admin.post('/rollouts', { bundle: older.id, selector: sel, dry_run: true });
    const n = dry.plan.downgrades.length;
    assert(n > 0 && dry.warnings.length > 0, `the dry run names downgrades and warns: ${JSON.stringify(dry.warnings)}`);
    const before = (await admin.get('/rollouts')).items.length;
    const op = await openAs(operatorToken, `/rollouts/new?bundle=${encodeURIComponent(older.id)}&buildings=prn-b01`);
    await op.waitForFunction((id) => [...document.querySelectorAll('#ro-bundle option')].some((o) => o.value === id), older.id, { timeout: WAIT });
    await op.locator('[data-testid=preview]').click();
    const plan = op.locator(`[data-testid=plan][data-downgrades="${n}"]`);
    await plan.waitFor({ timeout: WAIT });
    const warning = await plan.locator('[data-testid=plan-warnings][role=alert]').textContent();
    assert(warning.includes(dry.warnings[0]), `the warning is shown: ${warning}`);
    for (const d of dry.plan.downgrades) {
      const reason = await plan.locator(`[data-testid=downgrade-pods] tr[data-pod="${d.pod}"] [data-testid=downgrade-reason]`).textContent();
      assertEq(reason, d.reasons.join('; '), `downgrade reasons of ${d.pod}`);
    }
    const start = plan.locator('[data-testid=create-start-rollout]');
    const create = plan.locator('[data-testid=create-rollout]');
    const label = (await start.textContent()).trim();
    assert(label.startsWith(`Downgrade ${n} pod`) && !/^Create and start/.test(label), `the action is called a downgrade: ${label}`);
    assert(await start.isDisabled(), 'create is disabled until the downgrade is allowed');
    await plan.locator('[data-testid=allow-downgrade]').check();
    assert(await create.isDisabled(), 'create is disabled until a reason is given');
    await plan.locator('[data-testid=downgrade-reason-input]').fill('browser test: NIC 28.43 regression');
    assert(await create.isEnabled(), 'allowed with a reason: create is enabled');
    await shot(op, '21b-rollout-downgrade-preview');

    // If kilnd refuses anyway (here: the request loses allow_downgrade on its way), its 422
    // message and fields are shown beside the buttons.
    await op.route('**/api/v1/rollouts', async (route) => {
      const req = route.request();
      const body = req.method() === 'POST' ? JSON.parse(req.postData() || '{}') : null;
      if (!body || body.dry_run) return route.continue();
      delete body.allow_downgrade;
      return route.continue({ postData: JSON.stringify(body) });
    });
    await create.click();
    await plan.locator('[data-testid=create-error][role=alert]', { hasText: '422' }).waitFor({ timeout: WAIT });
    await plan.locator('[data-testid=create-error-fields] [data-field=allow_downgrade]').waitFor({ timeout: WAIT });
    assertEq((await admin.get('/rollouts')).items.length, before, 'nothing created by the refused request');
    await op.unroute('**/api/v1/rollouts');

    // Allowed with a reason: created (not started), then aborted so its pods are free again.
    await create.click();
    await op.waitForFunction(() => /#\/rollouts\/(?!new)[^/?]+$/.test(location.hash), null, { timeout: WAIT });
    const id = decodeURIComponent(op.url().split('#/rollouts/')[1]);
    await op.locator('h1 [data-testid=rollout-state][data-state=created]').waitFor({ timeout: WAIT });
    await admin.post(`/rollouts/${encodeURIComponent(id)}/abort`, { reason: 'browser test cleanup' });
  });

  await test('an operator previews a rollout (every wave and every excluded pod), then creates and starts it', async () => {
    const rolloutsBefore = (await admin.get('/rollouts')).items.length;
    assertEq(plan.waves.length, 3, 'waves of the API plan');
    assertEq(plan.excluded.length, 2, 'excluded pods of the API plan');
    const op = await openAs(operatorToken, '/rollouts');
    await op.evaluate(() => (window.__noReload = 'still-here'));
    await op.locator('[data-testid=new-rollout]').click();
    await op.locator('#ro-bundle').waitFor({ timeout: WAIT });
    await op.waitForFunction((id) => [...document.querySelectorAll('#ro-bundle option')].some((o) => o.value === id), bundle.id, { timeout: WAIT });
    // A bundle pasted into the form: kilnd's 422 names the bad field; a good one is selected.
    await op.locator('[data-testid=add-bundle]').click();
    await op.locator('#bundle-text').fill(PASTED_BUNDLE.replace('platforms: [clemente]', 'platforms: [hopper]'));
    await op.locator('[data-testid=add-bundle-submit]').click();
    await op.locator('.add-bundle [role=alert]', { hasText: 'platforms' }).waitFor({ timeout: WAIT });
    await op.locator('#bundle-text').fill(PASTED_BUNDLE);
    await op.locator('[data-testid=add-bundle-submit]').click();
    await op.waitForFunction(
      () => {
        const sel = document.querySelector('#ro-bundle');
        return sel && sel.selectedOptions[0] && sel.selectedOptions[0].textContent.includes('gb300-driver-test@1.0.0');
      },
      null,
      { timeout: WAIT },
    );
    const pasted = (await admin.get('/bundles')).items.find((b) => b.name === 'gb300-driver-test');
    assert(pasted && pasted.platforms.join() === 'clemente', 'the pasted bundle is stored');
    assertEq(await op.locator('#ro-bundle').inputValue(), pasted.id, 'the pasted bundle is selected');
    await op.locator('#ro-bundle').selectOption(bundle.id);
    await op.locator('[data-testid=bundle-summary]', { hasText: 'driver 580.65.06' }).waitFor({ timeout: WAIT });
    await op.locator('#ro-buildings').fill('prn-b02');
    // The policy shows kilnd's defaults.
    assertEq(await op.locator('#pol-max_concurrent_pods').inputValue(), '2', 'default max_concurrent_pods');
    assertEq(await op.locator('#pol-waves').inputValue(), '10%, 50%, 100%', 'default waves');
    assertEq(await op.locator('#pol-soak').inputValue(), '10m', 'default soak');
    await op.locator('[data-testid=preview]').click();
    const shown = op.locator('[data-testid=plan]');
    await shown.waitFor({ timeout: WAIT });
    assertEq((await op.locator('[data-testid=plan-summary] strong').textContent()).trim(), '4 eligible pods in 3 waves (1, 1, 2); 2 excluded', 'plan summary');
    for (const w of plan.waves)
      for (const pod of w.pods) await shown.locator(`[data-wave="${w.index}"] [data-pod="${pod}"]`).waitFor({ timeout: WAIT });
    for (const e of plan.excluded) {
      const reason = await shown.locator(`[data-testid=excluded] tr[data-pod="${e.pod}"] [data-testid=exclusion-reason]`).textContent();
      assertEq(reason, e.reason, `exclusion reason of ${e.pod}`);
    }
    assert(plan.excluded.every((e) => e.reason.startsWith('incompatible')), 'clemente pods are incompatible');
    // Nothing started by the preview.
    assertEq((await admin.get('/rollouts')).items.length, rolloutsBefore, 'rollouts after the preview');
    await shot(op, '22-rollout-preview');
    // A changed form needs a new preview.
    await op.locator('#ro-buildings').fill('prn-b02 ');
    await op.locator('#ro-buildings').fill('prn-b02, prn-b01');
    await op.getByText('The form changed since the preview').waitFor({ timeout: WAIT });
    await op.locator('#ro-buildings').fill('prn-b02');
    await op.locator('[data-testid=create-start-rollout]').waitFor({ timeout: WAIT });
    await op.locator('[data-testid=create-start-rollout]').click();
    await op.waitForFunction(() => /#\/rollouts\/(?!new)[^/?]+$/.test(location.hash), null, { timeout: WAIT });
    rolloutId = decodeURIComponent(op.url().split('#/rollouts/')[1]);
    await op.locator('h1 [data-testid=rollout-state][data-state=running]').waitFor({ timeout: WAIT });
    assertEq((await admin.get(`/rollouts/${rolloutId}`)).state, 'running', 'state in the API');

    // The canary is admitted; the other pods wait for their wave, and the page says so.
    const canary = plan.waves[0].pods[0];
    await op.waitForFunction(
      (pod) => ['draining', 'upgrading', 'validating', 'failed'].includes(document.querySelector(`[data-testid=rollout-pods] tr[data-pod="${pod}"]`)?.dataset.phase),
      canary,
      { timeout: WAIT },
    );
    const later = plan.waves[2].pods[0];
    await op.locator(`[data-testid=rollout-pods] tr[data-pod="${later}"][data-phase=pending] [data-wait=wave]`).waitFor({ timeout: WAIT });
    const why = await op.locator(`[data-testid=rollout-pods] tr[data-pod="${later}"] [data-testid=pod-why]`).textContent();
    assert(why.includes('wave 2 starts after wave 0'), `waiting reason: ${why}`);
    await op.locator('[data-testid=waiting] [data-wait=wave]').waitFor({ timeout: WAIT });
    assertEq(await op.locator('[data-testid=waves] tbody tr').count(), 3, 'wave rows');
    await op.locator('[data-testid=waves] tr[data-wave="0"] .tag', { hasText: 'current' }).waitFor({ timeout: WAIT });
    await op.locator(`[data-testid=rollout-pods] tr[data-pod="${canary}"] .gantt-seg`).first().waitFor({ timeout: WAIT });
    assertEq((await op.locator('[data-testid=eta]').textContent()).trim(), 'known once a pod has finished', 'ETA before any pod finished');
    await op.locator('[data-testid=rollout-events] tr[data-kind=admitted]').waitFor({ timeout: WAIT });
    await shot(op, '23-rollout-running');

    // Pause: the state changes without a reload.
    await op.locator('[data-verb=pause]').click();
    await op.locator('[role=dialog] [data-testid=consequence]', { hasText: 'No new pod starts' }).waitFor({ timeout: WAIT });
    await op.locator('[role=dialog] [data-confirm]').click();
    await op.locator('h1 [data-testid=rollout-state][data-state=paused]').waitFor({ timeout: WAIT });
    assertEq(await op.evaluate(() => window.__noReload), 'still-here', 'page was not reloaded');
    assertEq((await admin.get(`/rollouts/${rolloutId}`)).state, 'paused', 'state in the API');
    await op.locator('[data-verb=resume]').waitFor({ timeout: WAIT });
    assertEq(await op.locator('[data-verb=pause]').count(), 0, 'pause offered while paused');
    await shot(op, '24-rollout-paused');
    ctx.operatorPage = op;
  });

  await test('a viewer sees rollouts but no rollout control', async () => {
    const v = await openAs(viewerToken, '/rollouts');
    await v.locator(`[data-testid=rollouts] tr[data-rollout="${rolloutId}"] [data-testid=rollout-state][data-state=paused]`).waitFor({ timeout: WAIT });
    await v.locator(`[data-testid=rollouts] tr[data-rollout="${rolloutId}"] [data-testid=rollout-progress] .progress`).waitFor({ timeout: WAIT });
    assertEq(await v.locator('[data-testid=new-rollout]').count(), 0, 'New rollout for a viewer');
    await v.goto(`${srv.url}/#/rollouts/${rolloutId}`);
    await v.locator('h1 [data-testid=rollout-state][data-state=paused]').waitFor({ timeout: WAIT });
    await v.locator('[data-testid=rollout-pods] tbody tr').first().waitFor({ timeout: WAIT });
    assertEq(await v.locator('[data-testid=rollout-controls]').count(), 0, 'rollout controls for a viewer');
    assertEq(await v.locator('[data-verb]').count(), 0, 'verb buttons for a viewer');
    assertEq(await v.locator('[data-pod-verb]').count(), 0, 'retry/skip for a viewer');
    await shot(v, '25-rollout-viewer');
    await v.goto(`${srv.url}/#/rollouts/new`);
    await v.getByText('Rollouts need the operator role').waitFor({ timeout: WAIT });
    await v.goto(`${srv.url}/#/reliability`);
    await v.locator('[data-testid=rate]').waitFor({ timeout: WAIT });
    assertEq(await v.locator('[data-testid=record-interruption]').count(), 0, 'Record interruption for a viewer');
    await v.context().close();
    setCurrentPage(page);
  });

  await test('an operator resumes, then aborts with a confirmation naming the consequence', async () => {
    const op = ctx.operatorPage;
    assert(op, 'the operator page of the previous test');
    setCurrentPage(op);
    await op.locator('[data-verb=resume]').click();
    await op.locator('[role=dialog] [data-confirm]').click();
    await op.locator('h1 [data-testid=rollout-state][data-state=running]').waitFor({ timeout: WAIT });
    await op.locator('[data-verb=abort]').click();
    const dialog = op.locator('[role=dialog]');
    await dialog.locator('[data-testid=consequence]', { hasText: 'LEFT DRAINED' }).waitFor({ timeout: WAIT });
    assert((await dialog.textContent()).includes(`Abort ${rolloutId}?`), 'dialog names the rollout');
    await dialog.locator('#verb-reason').fill('CX7 28.43 drops links, INC-4411');
    await shot(op, '26-rollout-abort-dialog');
    await dialog.locator('[data-confirm]').click();
    // Aborting until the canary's upgrade stops at a safe point; with no agent to finish the
    // step in flight it stays aborting here.
    await op.waitForFunction(
      () => ['aborting', 'aborted'].includes(document.querySelector('h1 [data-testid=rollout-state]')?.dataset.state),
      null,
      { timeout: WAIT },
    );
    assert(['aborting', 'aborted'].includes((await admin.get(`/rollouts/${rolloutId}`)).state), 'state in the API');
    await op.locator('[data-testid=rollout-events] tr[data-kind=aborting]').waitFor({ timeout: WAIT });
    // The reason typed in the dialog is in the event, after who aborted.
    const abortEvent = (await admin.get(`/rollouts/${rolloutId}/events`)).items.find((e) => e.kind === 'aborting');
    assert(abortEvent && /^aborted by \S+: CX7 28\.43 drops links, INC-4411$/.test(abortEvent.message), `abort event: ${JSON.stringify(abortEvent)}`);
    // Read the state and the offered verbs in one pass (one render): the canary may finish its
    // abort meanwhile, and an aborted rollout that changed a pod offers Roll back, nothing else.
    const { state: shownState, verbs } = await op.evaluate(() => ({
      state: document.querySelector('h1 [data-testid=rollout-state]')?.dataset.state,
      verbs: [...document.querySelectorAll('[data-verb]')].map((b) => b.dataset.verb),
    }));
    if (shownState === 'aborting') assertEq(verbs.length, 0, 'verbs offered while aborting');
    else assert(shownState === 'aborted' && verbs.every((v) => v === 'rollback'), `verbs offered while ${shownState}: ${verbs}`);
    assertEq(await op.evaluate(() => window.__noReload), 'still-here', 'page was not reloaded');
    await shot(op, '27-rollout-aborting');
    await op.context().close();
    setCurrentPage(page);
  });

  // Reliability: two interruptions of one host through the API, one of another through the form.
  const lemonPod = await admin.get('/pods/prn-b01-p05');
  const [lemonHost, otherHost] = lemonPod.hosts.filter((h) => !h.spare && h.state === 'available');
  const at = (agoMs) => new Date(Date.now() - agoMs).toISOString().replace(/\.\d{3}Z$/, 'Z');

  await test('the reliability report shows the rates, weekly chart, causes and lemons; a lemon goes to quarantine', async () => {
    await admin.post('/interruptions', { id: 'browser-1', at: at(120000), cause: 'hbm', hosts: [lemonHost.id], job: 'train-1', job_gpus: 4096 });
    await admin.post('/interruptions', { id: 'browser-2', at: at(60000), cause: 'nvlink_signal_integrity', hosts: [lemonHost.id] });
    const op = await openAs(operatorToken, '/reliability');
    const count = op.locator('[data-testid=interruptions] .big-value');
    await op.waitForFunction(() => document.querySelector('[data-testid=interruptions] .big-value')?.textContent.trim() === '2', null, { timeout: WAIT });
    const rate = (await op.locator('[data-testid=rate] .big-value').textContent()).trim();
    assert(rate !== '—' && Number(rate.replace(/,/g, '')) > 0, `rate shown: ${rate}`);
    assert((await op.locator('[data-testid=rate]').textContent()).includes('north star of 2'), 'rate against the north star');
    assert((await op.locator('[data-testid=mtbi]').textContent()).includes('96,000'), 'MTBI against 96,000');
    const gpuHours = (await op.locator('[data-testid=gpu-hours] .big-value').textContent()).trim();
    assert(Number(gpuHours.replace(/,/g, '')) > 0, `GPU-hours shown: ${gpuHours}`);
    await op.locator('[data-testid=causes] li[data-cause=hbm]', { hasText: '1 · 50%' }).waitFor({ timeout: WAIT });
    await op.locator('[data-testid=causes] li[data-cause=nvlink_signal_integrity]', { hasText: 'NVLink signal integrity' }).waitFor({ timeout: WAIT });
    await op.locator('[data-testid=weekly-chart] [data-testid=north-star-line]').waitFor({ state: 'attached', timeout: WAIT });
    assert((await op.locator('[data-testid=weekly-chart] circle.point').count()) >= 1, 'a weekly point');
    // The 7-day window asks kilnd again.
    await op.locator('[data-window="7"]').click();
    await op.waitForFunction(() => /\(7 days\)/.test(document.querySelector('[data-testid=reliability-window]')?.textContent || ''), null, { timeout: WAIT });
    await op.waitForFunction(() => document.querySelector('[data-testid=interruptions] .big-value')?.textContent.trim() === '2', null, { timeout: WAIT });

    // Recorded through the form: a thermal event on another host.
    await op.locator('[data-testid=record-interruption]').click();
    await op.locator('#int-hosts').fill(otherHost.id);
    await op.locator('#int-cause').selectOption('thermal');
    await op.locator('#int-description').fill('browser test: inlet temperature alarm');
    await op.locator('[data-testid=record-submit]').click();
    await op.locator('.notice[role=status]', { hasText: 'recorded (Thermal)' }).waitFor({ timeout: WAIT });
    await op.waitForFunction(() => document.querySelector('[data-testid=interruptions] .big-value')?.textContent.trim() === '3', null, { timeout: WAIT });
    await op.locator('[data-testid=causes] li[data-cause=thermal]').waitFor({ timeout: WAIT });
    const listed = (await admin.get('/interruptions?cause=thermal')).items;
    assert(listed.some((i) => (i.hosts || []).includes(otherHost.id)), 'the form recorded it in kilnd');

    // The lemon threshold control: above 1, the host interrupted twice is a lemon.
    await op.locator('#rel-lemon').fill('1');
    await op.locator('#rel-lemon').press('Enter');
    await op.waitForFunction(() => location.hash.includes('lemon_threshold=1'), null, { timeout: WAIT });
    const row = op.locator(`[data-testid=lemons] tr[data-host="${lemonHost.id}"]`);
    await row.waitFor({ timeout: WAIT });
    assertEq((await row.locator('[data-testid=lemon-interruptions]').textContent()).trim(), '2', 'lemon interruptions');
    assertEq(await op.locator(`[data-testid=lemons] tr[data-host="${otherHost.id}"]`).count(), 0, 'one interruption is no lemon');
    await shot(op, '28-reliability');
    await row.locator('[data-action=quarantine]').click();
    const dialog = op.locator('[role=dialog]', { hasText: `Send ${lemonHost.id} to quarantine?` });
    await dialog.waitFor({ timeout: WAIT });
    assert((await dialog.textContent()).includes('quarantine-validation'), 'the dialog says how it returns');
    await shot(op, '29-quarantine-lemon-dialog');
    await dialog.locator('[data-confirm]').click();
    await op.locator(`[data-testid=lemons] tr[data-host="${lemonHost.id}"] [data-testid=host-state][data-state=quarantine]`).waitFor({ timeout: WAIT });
    assertEq((await admin.get(`/hosts/${lemonHost.id}`)).state, 'quarantine', 'host state in the API');
    assertEq(await row.locator('[data-action=quarantine]').count(), 0, 'quarantine offered again');
    const q = (await admin.get('/quarantine')).items;
    assert(q.some((x) => x.host === lemonHost.id), 'the lemon is in the quarantine list');
    await count.waitFor({ timeout: WAIT });
    await op.context().close();
    setCurrentPage(page);
  });
}
