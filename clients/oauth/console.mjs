// The operator's console (docs/console.md) in headless Chromium, against the broker and
// provider clients/oauth.sh starts (after hub.mjs, so the audit holds alice's key
// changes). The provider gives olive the admin role, audrey the auditor role, nina none.
//   1. /admin without a session: the sign-in page; signed in at the provider as olive,
//      back on the overview;
//   2. every page (overview, catalog, a tool, users and keys, approvals, an approval,
//      jobs and tasks, audit, configuration), in light and dark,
//      checked by axe-core (no serious or critical violation) and written as a
//      screenshot under SCREENS;
//   3. the one script runs under the page's CSP nonce: times rewritten for the viewer,
//      a catalog column sorted by its header button; the bar is reached by keyboard;
//   4. the audit filtered by outcome in the form, then exported as JSON Lines and CSV
//      (downloads), holding exactly what the filter selects;
//   5. a write of the agent key AGENT_KEY (confirmation "human") waits: olive, admin
//      and approver, opens it in the console, sees what would be sent and approves it;
//      the agent's repeat runs; the jobs-and-tasks page is looked at;
//   6. audrey reads as an auditor; olive ends audrey's sessions on the users page and
//      audrey's next page asks her to sign in; the audit names olive; nina gets 403;
//      signing out closes the console;
//   7. no page or export holds a secret of the run (SECRETS, comma-separated).
// Env: BROKER_URL, SCREENS, SECRETS, AGENT_KEY.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { launch, providerSignIn } from './sdk.mjs';

const brokerUrl = process.env.BROKER_URL;
const screens = process.env.SCREENS;
const secrets = (process.env.SECRETS ?? '').split(',').filter(Boolean);
const agentKey = process.env.AGENT_KEY;
const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
fs.mkdirSync(screens, { recursive: true });
const seen = [];

/** axe-core on the page as it is: fails on a serious or critical violation. */
async function accessible(page, name) {
  // Evaluated through the DevTools protocol: the page's CSP does not apply to it.
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(
    bad.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join('; ')}`),
    [],
    `${name}: axe-core violations`,
  );
}

/** Checks a page in light and dark, keeps its HTML, writes both screenshots. */
async function look(page, name) {
  seen.push(await page.content());
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    await accessible(page, `${name} (${scheme})`);
    await page.screenshot({ path: path.join(screens, `${name}-${scheme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

async function signedIn(browser, login) {
  const context = await browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  await page.goto(`${brokerUrl}/admin`);
  assert.match(await page.textContent('h1'), /Sign in to the console/);
  await Promise.all([page.waitForLoadState(), page.click('a[href^="/hub/login"]')]);
  await providerSignIn(page, login, (url) => url.pathname === '/admin');
  return { context, page };
}

const browser = await launch();
try {
  // 1.
  const probe = await browser.newPage();
  const refused = await probe.goto(`${brokerUrl}/admin`);
  assert.equal(refused.status(), 401);
  await look(probe, 'sign-in');
  const { page } = await signedIn(browser, 'olive');
  assert.match(await page.textContent('h1'), /Overview/);
  assert.match(await page.textContent('.who'), /olive\s*admin/);
  console.log('1. signed in at the provider as olive (admin); back on the overview');

  // 2. and 3.
  await look(page, 'overview');
  const time = page.locator('main time').first();
  assert.ok(!(await time.textContent()).includes('UTC'), 'the script wrote the time for the viewer');
  assert.match(await time.getAttribute('title'), /\(UTC\)$/);
  await page.goto(`${brokerUrl}/admin/tools?q=refund&service=payments`);
  await look(page, 'catalog');
  const firstTool = await page.locator('tbody tr td:first-child').first().textContent();
  assert.match(firstTool, /^payments\..*refund/);
  await page.click('th button:has-text("Tool")');
  assert.equal(await page.getAttribute('th:has(button:has-text("Tool"))', 'aria-sort'), 'ascending');
  const names = await page.locator('tbody tr td:first-child').allTextContents();
  assert.deepEqual(names, [...names].sort((a, b) => a.localeCompare(b)), 'sorted by the header button');
  await Promise.all([page.waitForLoadState(), page.click(`a:has-text("${firstTool}")`)]);
  assert.equal((await page.textContent('h1')).trim(), firstTool);
  await look(page, 'tool');
  await page.goto(`${brokerUrl}/admin/config`);
  await look(page, 'config');
  const config = await page.textContent('main');
  assert.match(config, /TOOL_BROKER_VAULT_KEY\s*set/);
  // The bar by keyboard: Tab from the top reaches the Audit link, Enter opens it.
  await page.keyboard.press('Tab');
  for (let i = 0; i < 8 && (await page.evaluate(() => document.activeElement?.textContent)) !== 'Audit'; i++) {
    await page.keyboard.press('Tab');
  }
  await Promise.all([page.waitForURL(/\/admin\/audit$/), page.keyboard.press('Enter')]);
  console.log('2-3. every page passes axe-core in light and dark; the script sorts and writes times; the bar works by keyboard');

  // 4.
  await look(page, 'audit');
  await page.selectOption('select[name="outcome"]', 'key_stored');
  await Promise.all([page.waitForLoadState(), page.click('form.filters button[type="submit"]')]);
  assert.match(page.url(), /outcome=key_stored/);
  const outcomes = await page.locator('tbody td span.tag').allTextContents();
  assert.ok(outcomes.length > 0 && outcomes.every((o) => o === 'key_stored'), outcomes.join(','));
  await look(page, 'audit-filtered');
  const download = async (label) => {
    const [file] = await Promise.all([page.waitForEvent('download'), page.click(`a:has-text("${label}")`)]);
    return fs.readFileSync(await file.path(), 'utf8');
  };
  const jsonl = (await download('JSON Lines')).trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(jsonl.length, outcomes.length);
  assert.ok(jsonl.every((r) => r.outcome === 'key_stored' && r.tool === 'hub/keys/payments'));
  const csv = (await download('CSV')).trim().split('\n');
  assert.ok(csv[0].startsWith('seq,at,principal,tool,outcome'), csv[0]);
  assert.equal(csv.length, outcomes.length + 1);
  seen.push(JSON.stringify(jsonl), csv.join('\n'));
  console.log(`4. the audit filtered to ${outcomes.length} key_stored record(s); JSON Lines and CSV exports hold the same`);

  // 5.
  const create = async (extra) => {
    const response = await fetch(`${brokerUrl}/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json', 'x-payments-api-key': 'pk_console_flow_7' },
      body: JSON.stringify({
        jsonrpc: '2.0', id: 1, method: 'tools/call',
        params: { name: 'payments.post_customers', arguments: { email: 'console-flow@example.com', confirm: true, ...extra } },
      }),
    });
    return { status: response.status, body: await response.json() };
  };
  const asked = await create({});
  assert.equal(asked.status, 428, JSON.stringify(asked.body));
  const approvalId = asked.body.error.details.approvalId;
  await page.goto(`${brokerUrl}/admin/approvals?state=pending`);
  await look(page, 'approvals');
  await Promise.all([page.waitForLoadState(), page.click(`a[href="/admin/approvals/${approvalId}"]`)]);
  assert.match(await page.textContent('main'), /What would be sent[\s\S]*console-flow@example\.com/);
  await look(page, 'approval');
  await Promise.all([page.waitForURL(/done=decided/), page.click('button:has-text("Approve")')]);
  assert.match(await page.textContent('main'), /Decided; the audit records who decided/);
  assert.match(await page.textContent('main dl'), /approved/);
  const repeated = await create({ approvalId });
  assert.equal(repeated.status, 200, JSON.stringify(repeated.body));
  await page.goto(`${brokerUrl}/admin/tasks`);
  await look(page, 'tasks');
  console.log('5. a pending write approved in the console by olive; the agent\'s repeat ran');

  // 6.
  const auditor = await signedIn(browser, 'audrey');
  assert.match(await auditor.page.textContent('.who'), /auditor, read only/);
  assert.equal(await auditor.page.locator('form[action^="/admin/users/"]').count(), 0);
  await page.goto(`${brokerUrl}/admin/users?q=audrey`);
  await look(page, 'users');
  const audreyRow = page.locator('tr', { hasText: '#audrey' });
  await Promise.all([page.waitForURL(/done=sessions/), audreyRow.locator('button:has-text("End sessions")').click()]);
  assert.match(await page.textContent('main'), /The sessions ended/);
  const ended = await auditor.page.goto(`${brokerUrl}/admin/audit`);
  assert.equal(ended.status(), 401, 'audrey\'s session ended');
  await page.goto(`${brokerUrl}/admin/audit?outcome=sessions_ended`);
  const endedRow = await page.textContent('tbody tr');
  assert.ok(endedRow.includes('audrey') && /console:http:\/\/127\.0\.0\.1:\d+#olive/.test(endedRow), endedRow);
  const nobody = await browser.newContext();
  const nina = await nobody.newPage();
  await nina.goto(`${brokerUrl}/admin`);
  await Promise.all([nina.waitForLoadState(), nina.click('a[href^="/hub/login"]')]);
  await providerSignIn(nina, 'nina', (url) => url.pathname === '/admin');
  assert.match(await nina.textContent('h1'), /Not allowed/);
  await look(nina, 'forbidden');
  await Promise.all([page.waitForLoadState(), page.click('button:has-text("Sign out")')]);
  assert.match(await page.textContent('h1'), /Signed out/);
  const after = await page.goto(`${brokerUrl}/admin`);
  assert.equal(after.status(), 401);
  console.log('6. audrey reads as an auditor until olive ends her sessions (audited); nina is refused with 403; signing out closes the console');

  // 7.
  for (const secret of secrets) {
    assert.ok(!seen.some((text) => text.includes(secret)), 'a secret of the run is on a console page or export');
  }
  console.log(`7. none of the run's ${secrets.length} secrets on ${seen.length} pages and exports; screenshots in ${screens}`);
} finally {
  await browser.close();
}
