// Issue 18 browser tests: the hosts view, top-bar shortcuts, out-of-service heatmap colouring, host search and actions by state.
// ctx: see console.test.mjs (test, assert, assertEq, shot, newPage, setCurrentPage, WAIT, srv,
// admin, operatorToken, viewerToken, page).
//
// Every host these tests change is in pods tst01-b04-p0201..p0206 (the generated fleet), set up
// here through the admin client, so they rely on no other module's tests.
export async function hostsViewTests(ctx) {
  const { test, assert, assertEq, shot, newPage, setCurrentPage, WAIT, srv, admin, operatorToken } = ctx;

  const POD = 'tst01-b04-p0201';
  const act = (host, action, reason) => admin.post(`/hosts/${host}/actions`, { action, reason });

  // A new page signed in with `token`, straight on `hash`.
  const openAs = async (token, hash) => {
    const p = await newPage();
    await p.context().addInitScript((t) => sessionStorage.setItem('kiln.token', t), token);
    await p.goto(`${srv.url}/#${hash}`);
    await p.locator('[data-testid=role]').waitFor({ timeout: WAIT });
    setCurrentPage(p);
    return p;
  };
  const rowIds = (p) => p.$$eval('[data-testid=hosts] tbody tr', (rows) => rows.map((r) => r.dataset.host));
  // Waits until the hosts table shows exactly `ids` in this order.
  const waitForRows = async (p, ids, what) => {
    try {
      await p.waitForFunction(
        (want) => JSON.stringify([...document.querySelectorAll('[data-testid=hosts] tbody tr')].map((r) => r.dataset.host)) === want,
        JSON.stringify(ids),
        { timeout: WAIT },
      );
    } catch {
      throw new Error(`${what}: expected rows ${JSON.stringify(ids)}, got ${JSON.stringify(await rowIds(p))}`);
    }
  };

  // Three failed hosts with reasons, one draining, in one pod; changed in this order.
  await act(`${POD}-h02`, 'fail', 'hv-test XID 79 on GPU 0');
  await act(`${POD}-h05`, 'fail', 'hv-test xid 48 double-bit ECC');
  await act(`${POD}-h09`, 'fail', 'hv-test NVLink flap');
  await act(`${POD}-h11`, 'drain', 'hv-test firmware prep');

  await test('hosts view: filters by state, pod, label and reason, sorts by a column, pages with keyset cursors', async () => {
    const p = await openAs(operatorToken, `/hosts?pod=${POD}`);
    const all = (await admin.all(`/hosts?pod=${POD}`)).map((h) => h.id);
    assertEq(all.length, 18, 'hosts of the pod in the API');
    await waitForRows(p, all, 'the pod filter');
    assertEq(await p.locator('nav[aria-label=Views] a.active').textContent(), 'Hosts', 'the Hosts view is the active one');

    await p.locator('#h-state').selectOption('failed');
    await waitForRows(p, [`${POD}-h02`, `${POD}-h05`, `${POD}-h09`], 'pod + state=failed');
    assert(p.url().includes('state=failed'), `filters in the URL: ${p.url()}`);
    assertEq(await p.locator('[data-testid=hosts] tbody tr[data-state=failed]').count(), 3, 'rows in state failed');

    await p.locator('#h-reason').fill('XID');
    await p.locator('#h-reason').press('Enter');
    await waitForRows(p, [`${POD}-h02`, `${POD}-h05`], 'reason contains "XID" in any case');
    await shot(p, '40-hosts-filtered');

    // The pod's label (the generated fleet labels p0201 row=f), with the reason filter left on.
    const podLabel = (await admin.get(`/pods/${POD}`)).labels.row;
    await p.locator('#h-state').selectOption('');
    await p.locator('#h-label').fill(`row=${podLabel}`);
    await p.locator('#h-label').press('Enter');
    const labelled = (await admin.all(`/hosts?label=${encodeURIComponent(`row=${podLabel}`)}&reason=xid&pod=${POD}`)).map((h) => h.id);
    assertEq(labelled.length, 2, 'the API agrees');
    await waitForRows(p, labelled, 'label + reason + pod');
    await p.locator('#h-label').fill('row=zz');
    await p.locator('#h-label').press('Enter');
    await p.getByText('No host matches these filters.').waitFor({ timeout: WAIT });
    await p.getByRole('button', { name: 'Clear filters' }).click();
    await p.waitForFunction(() => !location.hash.includes('pod='), null, { timeout: WAIT });

    // Sorting: "Since" starts with the newest change; "Reason" ascending, as the API sorts.
    await p.goto(`${srv.url}/#/hosts?pod=${POD}`);
    await waitForRows(p, all, 'back to the pod');
    await p.locator('button.sort[data-sort=state_since]').click();
    const bySince = (await admin.all(`/hosts?pod=${POD}&sort=-state_since`)).map((h) => h.id);
    assertEq(bySince.slice(0, 4).join(','), [`${POD}-h11`, `${POD}-h09`, `${POD}-h05`, `${POD}-h02`].join(','), 'newest change first in the API');
    await waitForRows(p, bySince, 'sorted by since, newest first');
    assertEq(await p.locator('th[aria-sort=descending] button[data-sort=state_since]').count(), 1, 'aria-sort on the column');
    await p.locator('button.sort[data-sort=reason]').click();
    const byReason = (await admin.all(`/hosts?pod=${POD}&sort=reason`)).map((h) => h.id);
    await waitForRows(p, byReason, 'sorted by reason');
    assert(p.url().includes('sort=reason'), `sort in the URL: ${p.url()}`);
    await p.locator('button.sort[data-sort=reason]').click();
    await waitForRows(p, [...byReason].reverse(), 'reason, descending (ids descending too)');
    await shot(p, '41-hosts-sorted');

    // Keyset pages of 50 over a building (288 pods x 18 hosts), sorted by pod descending.
    await p.goto(`${srv.url}/#/hosts?building=tst01-b04&sort=-pod`);
    const first = await admin.get('/hosts?building=tst01-b04&sort=-pod&limit=50');
    const second = await admin.get(`/hosts?building=tst01-b04&sort=-pod&limit=50&cursor=${encodeURIComponent(first.next_cursor)}`);
    assertEq(second.items.length, 50, 'a full second page in the API');
    await waitForRows(p, first.items.map((h) => h.id), 'page 1');
    assertEq(first.items[0].pod, 'tst01-b04-p0288', 'the last pod first');
    await p.locator('button[data-page=next]').click();
    await waitForRows(p, second.items.map((h) => h.id), 'page 2');
    assertEq((await p.locator('[data-testid=hosts-page]').textContent()).trim(), 'page 2', 'page number');
    await shot(p, '42-hosts-page-2');
    await p.locator('button[data-page=prev]').click();
    await waitForRows(p, first.items.map((h) => h.id), 'back on page 1');
    assertEq(await p.locator('button[data-page=prev]').isDisabled(), true, 'no page before the first');
    await p.context().close();
    setCurrentPage(ctx.page);
  });

  await test('header shortcuts: the failed count rises when a host fails, and links to the hosts view filtered by state', async () => {
    const p = await openAs(operatorToken, '/runs');
    const before = (await admin.get('/hosts/counts')).by_state;
    await p.waitForFunction((n) => document.querySelector('[data-shortcut=failed]')?.dataset.count === String(n), before.failed, { timeout: WAIT });
    for (const s of ['repair', 'quarantine', 'draining'])
      await p.waitForFunction((state) => /^\d+$/.test(document.querySelector(`[data-shortcut=${state}]`)?.dataset.count || ''), s, { timeout: WAIT });
    const host = 'tst01-b04-p0202-h03';
    await act(host, 'fail', 'hv-test shortcut');
    // Polled every 10 s: the new count comes without a reload.
    await p.waitForFunction((n) => document.querySelector('[data-shortcut=failed]')?.dataset.count === String(n), before.failed + 1, {
      timeout: WAIT,
    });
    const link = p.locator('[data-shortcut=failed]');
    assert((await link.textContent()).includes(String(before.failed + 1)), `the shortcut shows the count: ${await link.textContent()}`);
    assertEq(await link.getAttribute('aria-label'), `Failed hosts: ${before.failed + 1}`, 'accessible name');
    await shot(p, '43-header-shortcuts');
    await link.click();
    await p.locator(`[data-testid=hosts] tr[data-host="${host}"]`).waitFor({ timeout: WAIT });
    assert(p.url().endsWith('#/hosts?state=failed'), `the hosts view filtered by state: ${p.url()}`);
    assertEq(await p.locator('#h-state').inputValue(), 'failed', 'the state filter shows it');
    const rows = await p.locator('[data-testid=hosts] tbody tr').count();
    assertEq(await p.locator('[data-testid=hosts] tbody tr[data-state=failed]').count(), rows, 'only failed hosts');
    assertEq(rows, Math.min(50, before.failed + 1), 'every failed host (one page)');
    await p.context().close();
    setCurrentPage(ctx.page);
  });

  await test('the heatmap marks an in-service pod with a failed host, with its own legend entry', async () => {
    const pod = 'tst01-b04-p0203';
    await act(`${pod}-h04`, 'fail', 'hv-test heatmap');
    assertEq((await admin.get(`/pods/${pod}`)).state, 'in_service', 'the spares cover the host: the pod stays in service');
    const heat = await admin.get('/fleet/heatmap');
    const col = heat.columns.indexOf('hosts_out');
    assert(col >= 0, `hosts_out column in ${heat.columns}`);
    const marked = heat.rows.filter((r) => r[col] > 0 && r[heat.columns.indexOf('building')] === 'tst01-b04').map((r) => r[0]).sort();
    assert(marked.includes(pod), `${pod} has hosts out in the API`);

    const p = await openAs(operatorToken, '/fleet?building=tst01-b04');
    const legend = p.locator('.legend button[data-state=in_service_hosts_out]');
    await legend.waitFor({ timeout: WAIT });
    assert((await legend.textContent()).includes('In service, hosts out'), `legend entry: ${await legend.textContent()}`);
    const inService = heat.rows.filter((r) => r[col] > 0 && r[4] === 'in_service' && r[2] === 'tst01-b04').length;
    await p.waitForFunction((n) => document.querySelector('.legend button[data-state=in_service_hosts_out] .count')?.textContent === String(n), inService, {
      timeout: WAIT,
    });
    // The legend entry filters the heatmap to the pods with hosts out.
    await legend.click();
    await p.waitForFunction((n) => document.querySelector('[data-testid=heatmap]')?.dataset.pods === String(n), marked.length, { timeout: WAIT });
    assert(p.url().includes('out=1'), `the filter is in the URL: ${p.url()}`);
    // The pod's cell: orange (#d9480f), not the green of "in service", where the notch is not.
    const i = marked.indexOf(pod);
    const canvas = p.locator('canvas[data-building="tst01-b04"]');
    const pixel = await canvas.evaluate((c, idx) => {
      const { size, gap, cols } = c.dataset;
      const s = Number(size);
      const g = Number(gap);
      const x = g + (idx % Number(cols)) * (s + g) + 2;
      const y = g + Math.floor(idx / Number(cols)) * (s + g) + s - 2;
      const dpr = window.devicePixelRatio || 1;
      return Array.from(c.getContext('2d').getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data);
    }, i);
    const [r, g, b] = pixel;
    assert(Math.abs(r - 0xd9) < 12 && Math.abs(g - 0x48) < 12 && Math.abs(b - 0x0f) < 12, `cell colour rgb(${r},${g},${b}) is the hosts-out orange`);
    await shot(p, '44-heatmap-hosts-out');
    // Hovering names the class.
    const box = await canvas.boundingBox();
    const d = await canvas.evaluate((c) => ({ ...c.dataset }));
    const s = Number(d.size);
    const gp = Number(d.gap);
    await p.mouse.move(box.x + gp + (i % Number(d.cols)) * (s + gp) + s / 2, box.y + gp + Math.floor(i / Number(d.cols)) * (s + gp) + s / 2);
    await p.waitForFunction((id) => (document.querySelector('canvas[data-building="tst01-b04"]').title || '').startsWith(`${id}: In service, hosts out`), pod, {
      timeout: WAIT,
    });
    await p.context().close();
    setCurrentPage(ctx.page);
  });

  await test('the header search finds hosts by id prefix in any case, from any view, and pods as before', async () => {
    const p = await openAs(operatorToken, '/runs');
    await p.keyboard.press('/');
    assertEq(await p.evaluate(() => document.activeElement.id), 'find', '"/" focuses the header search');
    await p.keyboard.type(`${POD}-H0`.toUpperCase());
    await p.keyboard.press('Enter');
    const matches = p.locator('[data-testid=find-matches] li[data-kind=host]');
    await matches.first().waitFor({ timeout: WAIT });
    const ids = await matches.evaluateAll((li) => li.map((x) => x.dataset.id));
    assertEq(ids.join(','), Array.from({ length: 9 }, (_, k) => `${POD}-h0${k + 1}`).join(','), 'hosts h01..h09 listed');
    assertEq(await p.locator('[data-testid=find-matches] li[data-kind=pod]').count(), 0, 'no pod listed');
    await shot(p, '45-search-hosts');
    await p.locator(`[data-testid=find-matches] li[data-id="${POD}-h05"] button`).click();
    await p.locator('h1', { hasText: `${POD}-h05` }).waitFor({ timeout: WAIT });
    await p.locator('h1 [data-testid=host-state][data-state=failed]').waitFor({ timeout: WAIT });

    // A whole host id in upper case opens the host at once.
    await p.locator('#find').fill(`${POD}-h11`.toUpperCase());
    await p.locator('#find').press('Enter');
    await p.locator('h1', { hasText: `${POD}-h11` }).waitFor({ timeout: WAIT });
    assert(p.url().endsWith(`#/hosts/${POD}-h11`), `host page: ${p.url()}`);
    // A pod id still opens the pod's panel on the fleet view, from another view too.
    await p.locator('#find').fill(POD.toUpperCase());
    await p.locator('#find').press('Enter');
    await p.locator('[data-testid=pod-panel] #pod-title', { hasText: POD }).waitFor({ timeout: WAIT });
    // Nothing found says so.
    await p.locator('#find').fill('no-such-thing-xyz');
    await p.locator('#find').press('Enter');
    await p.locator('.header-find [role=alert]', { hasText: 'No pod or host matches' }).waitFor({ timeout: WAIT });
    await p.context().close();
    setCurrentPage(ctx.page);
  });

  await test('the host page offers every action the host state allows, allocate and quarantine included', async () => {
    const pod = 'tst01-b04-p0204';
    await act(`${pod}-h03`, 'fail', 'hv-test actions');
    const p = await openAs(operatorToken, `/hosts/${pod}-h02`);
    const offered = async () => (await p.locator('[data-testid=host-actions] [data-action]').evaluateAll((b) => b.map((x) => x.dataset.action))).sort();
    const expect = async (host, state) => {
      await p.locator(`h1 [data-testid=host-state][data-state=${state}]`).waitFor({ timeout: WAIT });
      const allowed = (await admin.get(`/hosts/${host}`)).allowed_actions.filter((a) => a !== 'override').sort();
      await p.waitForFunction(
        (want) => JSON.stringify([...document.querySelectorAll('[data-testid=host-actions] [data-action]')].map((x) => x.dataset.action).sort()) === want,
        JSON.stringify(allowed),
        { timeout: WAIT },
      ).catch(async () => {
        throw new Error(`${host} (${state}): offered ${JSON.stringify(await offered())}, the API allows ${JSON.stringify(allowed)}`);
      });
      return allowed;
    };
    const avail = await expect(`${pod}-h02`, 'available');
    for (const a of ['allocate', 'drain', 'fail', 'quarantine', 'retire']) assert(avail.includes(a), `${a} allowed from available (${avail})`);
    await shot(p, '46-host-actions-available');
    // Allocate from the console, then the allocated host's actions.
    await p.locator('[data-action=allocate]').click();
    await p.locator('#dlg-reason').fill('hv-test: job 1234');
    await p.locator('[data-confirm]').click();
    const allocated = await expect(`${pod}-h02`, 'allocated');
    assert(allocated.includes('release') && !allocated.includes('allocate'), `release, not allocate, from allocated (${allocated})`);
    // A failed host: repair, quarantine, retire.
    await p.goto(`${srv.url}/#/hosts/${pod}-h03`);
    const failed = await expect(`${pod}-h03`, 'failed');
    assertEq(failed.join(','), ['quarantine', 'repair', 'retire'].join(','), 'actions of a failed host');
    await shot(p, '47-host-actions-failed');
    await p.context().close();
    setCurrentPage(ctx.page);
  });

  await test('starting a quarantine validation warns when one is already running on the host', async () => {
    const host = 'tst01-b04-p0205-h06';
    const q = await act(host, 'quarantine', 'hv-test lemon');
    assert(q.quarantine_run, `quarantining started a validation run: ${JSON.stringify(q)}`);
    const running = await admin.get(`/workflow-runs?host=${host}&workflow=quarantine-validation&state=running`);
    assertEq(running.items.map((r) => r.id).join(','), q.quarantine_run, 'the run is running (no agent takes it)');

    const p = await openAs(operatorToken, `/hosts/${host}`);
    const banner = p.locator('[data-testid=validation-running]');
    await banner.waitFor({ timeout: WAIT });
    assert((await banner.textContent()).includes(q.quarantine_run), `banner names the run: ${await banner.textContent()}`);
    await p.locator('[data-start-run=quarantine]').click();
    const warning = p.locator('[role=dialog] [data-testid=validation-warning]');
    await warning.waitFor({ timeout: WAIT });
    assert((await warning.textContent()).includes(q.quarantine_run), `the warning names the running run: ${await warning.textContent()}`);
    assert(p.url().endsWith(`#/hosts/${host}`), `still on the host page: ${p.url()}`);
    await shot(p, '48-validation-already-running');
    await p.getByRole('button', { name: 'Back' }).click();
    await p.locator('[role=dialog]').waitFor({ state: 'detached', timeout: WAIT });
    // Going on anyway opens the start form for this host.
    await p.locator('[data-start-run=quarantine]').click();
    await p.getByRole('button', { name: 'Start another anyway' }).click();
    await p.waitForFunction(() => location.hash.startsWith('#/runs/new'), null, { timeout: WAIT });
    assert(p.url().includes('workflow=quarantine-validation') && p.url().includes(host), `start form for the host: ${p.url()}`);

    // With the run cancelled, no warning: the button goes straight to the form.
    await admin.post(`/workflow-runs/${q.quarantine_run}/cancel`);
    await p.goto(`${srv.url}/#/hosts/${host}`);
    await p.locator('h1 [data-testid=host-state][data-state=quarantine]').waitFor({ timeout: WAIT });
    await p.locator('[data-testid=host-runs] table').waitFor({ timeout: WAIT });
    await p.waitForTimeout(1000);
    assertEq(await banner.count(), 0, 'no banner without a running validation');
    await p.locator('[data-start-run=quarantine]').click();
    await p.waitForFunction(() => location.hash.startsWith('#/runs/new'), null, { timeout: WAIT });
    assertEq(await p.locator('[data-testid=validation-warning]').count(), 0, 'no warning');
    await p.context().close();
    setCurrentPage(ctx.page);
  });
}
