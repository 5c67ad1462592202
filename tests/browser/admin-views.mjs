// Issue 18 browser tests: bundles (list, detail, diff, compliance), capacity plan, tokens, the audit feed, actors by name.
// ctx: see console.test.mjs (test, assert, assertEq, shot, newPage, setCurrentPage, WAIT, srv,
// admin, operatorToken, viewerToken, page).
//
// Own state, made through the admin client: an operator token "bundle-smith" that publishes two
// bundles of one name (1.9 and 1.10, so the numeric version order matters), creates a rollout
// and drains a generated host; the views must show "bundle-smith", never its id.
import { client } from './lib/harness.mjs';

const SHA = '9f2c4b1e7a3d5c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60';
const comp = (kind, version) => ({ kind, version, artifact: `https://firmware.example/${kind}/${version}.bin`, sha256: SHA });

// A: driver 580.65.06, nic as the demo's catalina pods run it, gpu_vbios. B: a newer driver,
// an OLDER nic (so catalina pods need a downgrade), a bmc A does not have.
const BUNDLE_A = {
  name: 'adm-test-fw',
  version: '1.9',
  platforms: ['catalina'],
  components: [comp('driver', '580.65.06'), comp('nic', '28.43.2026'), comp('gpu_vbios', '97.00.82.00.5F')],
};
const BUNDLE_B = {
  name: 'adm-test-fw',
  version: '1.10',
  platforms: ['catalina'],
  components: [comp('driver', '580.65.10'), comp('nic', '28.40.1000'), comp('bmc', '25.06-1')],
};

export async function adminViewTests(ctx) {
  const { test, assert, assertEq, shot, newPage, WAIT, srv, admin, operatorToken, viewerToken } = ctx;

  const openAs = async (token, hash) => {
    const p = await newPage();
    await p.context().addInitScript((t) => sessionStorage.setItem('kiln.token', t), token);
    await p.goto(`${srv.url}/#${hash}`);
    await p.locator('[data-testid=role]').waitFor({ timeout: WAIT });
    return p;
  };

  const smith = await admin.post('/tokens', { role: 'operator', name: 'bundle-smith' });
  const op = client(srv.url, smith.token);
  const a = await op.post('/bundles', BUNDLE_A);
  const b = await op.post('/bundles', BUNDLE_B);

  await test('bundles: the list shows who published each bundle by token name', async () => {
    const p = await openAs(viewerToken, '/bundles');
    for (const x of [a, b]) {
      const row = p.locator(`[data-testid=bundles] tr[data-bundle="${x.id}"]`);
      await row.waitFor({ timeout: WAIT });
      // The names arrive with their own request (GET /actors): wait for them, not for the row.
      await row.locator('[data-testid=created-by]', { hasText: 'bundle-smith' }).waitFor({ timeout: WAIT }).catch(() => {});
      assertEq((await row.locator('[data-testid=created-by]').textContent()).trim(), 'bundle-smith', `created by of ${x.id}`);
      assertEq(await row.locator('[data-actor]').getAttribute('data-actor'), smith.id, 'the id stays in the markup');
    }
    const text = await p.locator('[data-testid=bundles]').textContent();
    assert(!text.includes(smith.id), 'the token id is not shown as the creator');
    await shot(p, '60-bundles-list');
    await p.close();
  });

  await test('bundles: a bundle page shows components, workflow, creator and compliance with needs_downgrade per pod', async () => {
    const compliance = await admin.get(`/bundles/${b.id}/compliance`);
    assert(compliance.counts.needs_downgrade > 0, `the fixture has pods needing a downgrade: ${JSON.stringify(compliance.counts)}`);
    const p = await openAs(viewerToken, `/bundles/${b.id}`);
    await p.locator('[data-testid=bundle-components] tr[data-kind=bmc]').waitFor({ timeout: WAIT });
    assertEq(await p.locator('[data-testid=bundle-components] tbody tr').count(), 3, 'component rows');
    assert((await p.locator('[data-testid=bundle]').textContent()).includes('firmware-upgrade'), 'the workflow is shown');
    await p.locator('[data-testid=bundle-created]', { hasText: 'by bundle-smith' }).waitFor({ timeout: WAIT });
    await p.locator('[data-testid=compliance-pods]').waitFor({ timeout: WAIT });
    for (const [state, n] of Object.entries(compliance.counts)) {
      const btn = p.locator(`[data-count=${state}] strong`);
      assertEq(await btn.textContent(), String(n), `${state} count`);
    }
    await p.locator('[data-count=needs_downgrade]').click();
    await p.waitForFunction(() => location.hash.includes('state=needs_downgrade'), null, { timeout: WAIT });
    const states = await p.locator('[data-testid=compliance-pods] [data-testid=compliance-state]').evaluateAll((els) => els.map((e) => e.dataset.state));
    assertEq(states.length, Math.min(compliance.counts.needs_downgrade, 100), 'rows after filtering by needs_downgrade');
    assert(states.every((s) => s === 'needs_downgrade'), 'only pods needing a downgrade');
    const reason = await p.locator('[data-testid=compliance-pods] tbody tr').first().textContent();
    assert(/nic [^;]*28\.40\.1000[^;]*older/.test(reason), `the reason names the downgrade: ${reason}`);
    await shot(p, '61-bundle-compliance');
    await p.close();
  });

  await test('bundles: picking two in the list compares them per component kind as kilnd orders versions', async () => {
    const p = await openAs(viewerToken, '/bundles');
    await p.locator(`tr[data-bundle="${a.id}"] [data-testid=pick]`).check();
    await p.locator(`tr[data-bundle="${b.id}"] [data-testid=pick]`).check();
    await p.locator('[data-testid=compare]').click();
    await p.locator('[data-testid=diff-rows]').waitFor({ timeout: WAIT });
    const rel = async (kind) => p.locator(`[data-testid=diff-rows] tr[data-kind=${kind}]`).getAttribute('data-relation');
    // The list is newest first, but A and B go in the order picked: B against A.
    assertEq(await rel('driver'), 'newer', 'driver 580.65.06 -> 580.65.10');
    assertEq(await rel('nic'), 'older', 'nic 28.43.2026 -> 28.40.1000');
    assertEq(await rel('gpu_vbios'), 'only_a', 'gpu_vbios only in A');
    assertEq(await rel('bmc'), 'only_b', 'bmc only in B');
    const summary = await p.locator('[data-testid=diff-summary]').textContent();
    assert(summary.includes('adm-test-fw 1.10') && summary.includes('1 newer') && summary.includes('1 older'), summary);
    await shot(p, '62-bundle-diff');
    await p.locator('[data-testid=swap]').click();
    await p.waitForFunction(() => document.querySelector('[data-testid=diff-rows] tr[data-kind=driver]')?.dataset.relation === 'older', null, { timeout: WAIT });
    await p.close();
  });

  await test('capacity plan: inputs for every parameter, the plan and the shortfall against healthy pods', async () => {
    const want = await admin.get('/capacity/plan?active_gpus=32768&reserve_fraction=0.02&platform=clemente');
    const p = await openAs(viewerToken, '/capacity');
    const form = p.locator('[data-testid=capacity-form]');
    await form.locator('input[name=active_gpus]').fill('0');
    await form.getByRole('button', { name: 'Plan' }).click();
    await form.locator('.error', { hasText: 'whole number' }).waitFor({ timeout: WAIT });
    await form.locator('input[name=active_gpus]').fill('32768');
    await form.locator('input[name=reserve_percent]').fill('2');
    await form.locator('select[name=platform]').selectOption('clemente');
    await form.getByRole('button', { name: 'Plan' }).click();
    await p.locator('[data-testid=capacity-plan]').waitFor({ timeout: WAIT });
    assertEq(await p.locator('[data-testid=cap-slices]').textContent(), '512', 'slices');
    assertEq(await p.locator('[data-testid=cap-pods]').textContent(), want.pods.toLocaleString('en-US'), 'pods');
    assertEq(await p.locator('[data-testid=cap-healthy]').textContent(), want.healthy_pods_now.toLocaleString('en-US'), 'healthy now');
    assert(p.url().includes('active_gpus=32768'), 'the query is in the URL');
    await shot(p, '63-capacity-plan');
    await p.close();
  });

  await test('tokens: an admin creates a token, sees its secret once, and revokes it through a confirmation', async () => {
    const p = await openAs(srv.adminToken, '/tokens');
    await p.locator('[data-testid=tokens]').waitFor({ timeout: WAIT });
    const form = p.locator('[data-testid=new-token]');
    await form.locator('input[name=name]').fill('adm-test-ci');
    await form.locator('select[name=role]').selectOption('operator');
    await form.getByRole('button', { name: 'Create token' }).click();
    const secret = (await p.locator('[data-testid=secret]').textContent()).trim();
    assert(/^kiln_[0-9a-f]{12}_[0-9a-f]+$/.test(secret), `a bearer token: ${secret.slice(0, 20)}…`);
    const me = await client(srv.url, secret).get('/whoami');
    assertEq(me.name, 'adm-test-ci', 'the secret shown works');
    assertEq(me.role, 'operator', 'its role');
    const row = p.locator(`[data-testid=tokens] tr[data-token="${me.token_id}"]`);
    await row.waitFor({ timeout: WAIT });
    await row.locator('[data-actor]', { hasText: 'bootstrap admin' }).waitFor({ timeout: WAIT }).catch(() => {});
    assertEq((await row.locator('[data-actor]').textContent()).trim(), 'bootstrap admin', 'created by, by name');
    await shot(p, '64-token-created');
    await p.getByRole('button', { name: 'Done, I have copied it' }).click();
    assertEq(await p.locator('[data-testid=secret]').count(), 0, 'the secret is gone for good');

    await row.locator('[data-testid=revoke]').click();
    const dialog = p.getByRole('dialog');
    await dialog.waitFor({ timeout: WAIT });
    assert((await dialog.textContent()).includes('adm-test-ci'), 'the dialog names the token');
    assert(await dialog.evaluate((d) => d.contains(document.activeElement)), 'focus is inside the dialog');
    await shot(p, '65-token-revoke-confirm');
    await dialog.getByRole('button', { name: 'Back' }).click();
    assertEq(await p.getByRole('dialog').count(), 0, 'Back closes it');
    assertEq(await row.getAttribute('data-revoked'), '0', 'nothing revoked on Back');
    await row.locator('[data-testid=revoke]').click();
    await p.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
    await p.locator(`[data-testid=tokens] tr[data-token="${me.token_id}"][data-revoked="1"]`).waitFor({ timeout: WAIT });
    let refused = '';
    await client(srv.url, secret)
      .get('/whoami')
      .catch((e) => (refused = e.message));
    assert(refused.includes('401'), `the revoked token is refused: ${refused}`);
    await p.close();
  });

  await test('tokens and the audit log are hidden from a viewer and refused politely', async () => {
    const p = await openAs(viewerToken, '/fleet');
    const nav = await p.locator('nav[aria-label=Views]').textContent();
    assert(nav.includes('Bundles') && nav.includes('Capacity'), `viewer nav: ${nav}`);
    assert(!nav.includes('Tokens') && !nav.includes('Audit'), `no Tokens or Audit link for a viewer: ${nav}`);
    await p.goto(`${srv.url}/#/tokens`);
    const refusal = p.locator('[data-testid=tokens-refused]');
    await refusal.waitFor({ timeout: WAIT });
    assert((await refusal.textContent()).includes('viewer'), 'the refusal says which role the viewer has');
    assertEq(await p.locator('[data-testid=tokens]').count(), 0, 'no token list');
    await shot(p, '66-tokens-refused-viewer');
    await p.goto(`${srv.url}/#/audit`);
    await p.locator('[data-testid=audit-refused]').waitFor({ timeout: WAIT });
    await p.close();
    const o = await openAs(operatorToken, '/fleet');
    const opNav = await o.locator('nav[aria-label=Views]').textContent();
    assert(opNav.includes('Audit') && !opNav.includes('Tokens'), `operator nav: ${opNav}`);
    await o.close();
  });

  // A rollout by bundle-smith (created, then aborted) and a drained generated host: their pages
  // name bundle-smith too.
  const catalina = (await admin.all('/pods?platform=catalina')).filter((x) => x.id.startsWith('tst'));
  const pod = catalina[catalina.length - 1].id;
  const ro = await op.post('/rollouts', { bundle: a.id, selector: { pods: [pod] } });
  await op.post(`/rollouts/${ro.id}/abort`, { reason: 'adm-test: named actors' });
  const host = (await admin.get(`/hosts?pod=${pod}&limit=1`)).items[0].id;
  await op.post(`/hosts/${host}/actions`, { action: 'drain', reason: 'adm-test: named actors' });

  await test("actors: a rollout's page and a host's events show token names, not ids", async () => {
    const p = await openAs(viewerToken, `/rollouts/${ro.id}`);
    await p.locator('dd', { hasText: 'by bundle-smith' }).waitFor({ timeout: WAIT });
    await p.locator('[data-testid=rollout-events]', { hasText: 'aborted by bundle-smith' }).waitFor({ timeout: WAIT });
    const events = await p.locator('[data-testid=rollout-events]').textContent();
    assert(!events.includes(smith.id), 'no token id left in the events');
    await shot(p, '67-rollout-by-name');
    await p.goto(`${srv.url}/#/hosts/${host}`);
    const row = p.locator('[data-testid=events] tr', { hasText: 'drain' }).first();
    await row.waitFor({ timeout: WAIT });
    assert((await row.textContent()).includes('bundle-smith'), `host event by name: ${await row.textContent()}`);
    await p.close();
  });

  await test('audit: the feed filters by action prefix and shows who acted by name', async () => {
    const p = await openAs(operatorToken, '/audit?action=bundle.');
    const rows = p.locator('[data-testid=audit] tbody tr');
    await p.locator(`[data-testid=audit] tr[data-action="bundle.create"] [data-actor="${smith.id}"]`).first().waitFor({ timeout: WAIT });
    const actions = await rows.evaluateAll((els) => els.map((e) => e.dataset.action));
    assert(actions.length >= 2 && actions.every((x) => x.startsWith('bundle.')), `only bundle actions: ${actions}`);
    const who = await p.locator(`[data-testid=audit] [data-actor="${smith.id}"]`).first().textContent();
    assertEq(who.trim(), 'bundle-smith', 'the actor by name');

    // Through the form: every token action; the bootstrap admin made them, kilnd made it.
    await p.locator('[data-testid=audit-filters] input[name=action]').fill('token.');
    await p.locator('[data-testid=audit-filters]').getByRole('button', { name: 'Filter' }).click();
    await p.locator('[data-testid=audit] tr[data-action="token.revoke"]').first().waitFor({ timeout: WAIT });
    const tokenActions = await rows.evaluateAll((els) => els.map((e) => e.dataset.action));
    assert(tokenActions.every((x) => x.startsWith('token.')), `only token actions: ${tokenActions}`);
    const creators = await p.locator('[data-testid=audit] tr[data-action="token.create"] [data-testid=audit-actor]').allTextContents();
    assert(creators.includes('bootstrap admin') && creators.includes('kilnd'), `token creators by name: ${[...new Set(creators)]}`);
    assert(!(await p.locator('[data-testid=audit]').textContent()).includes('kiln_'), 'no secret in the feed');
    await shot(p, '68-audit-feed');

    // By actor: the select lists tokens by name.
    await p.locator('[data-testid=audit-filters] input[name=action]').fill('');
    await p.locator('[data-testid=audit-filters] select[name=actor]').selectOption(smith.id);
    await p.locator('[data-testid=audit-filters]').getByRole('button', { name: 'Filter' }).click();
    await p.waitForFunction((id) => location.hash.includes(`actor=${id}`), smith.id, { timeout: WAIT });
    await p.locator('[data-testid=audit] tr[data-action="host.drain"]').waitFor({ timeout: WAIT });
    const actors = await p.locator('[data-testid=audit] [data-testid=audit-actor]').evaluateAll((els) => els.map((e) => e.dataset.actor));
    assert(actors.length >= 4 && actors.every((x) => x === smith.id), `only bundle-smith's records: ${actors.length}`);
    await p.close();
  });
}
