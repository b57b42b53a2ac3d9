// The hub with real parts (decision 012, docs/hub.md), against the broker and
// provider clients/oauth.sh starts: two users authorized through the MCP TypeScript SDK,
// each in their own headless Chromium profile.
//   1. alice calls a payments read with no key header: URL elicitation required
//      (-32042, the SDK's UrlElicitationRequiredError), nothing sent upstream;
//   2. the link, opened in her browser: sign in at the provider (the broker as a
//      confidential client, code + PKCE), the connect page stores her key;
//   3. the retried call runs, and the upstream receives the stored key;
//   4. the hub page and the JSON API list it as stored, never its value;
//   5. bob's call sends nothing and answers his own link; opened in alice's browser,
//      it stores nothing;
//   6. alice deletes the key on the hub page; the call asks by URL again.
// Env: BROKER_URL, STUB_URL, HUB_KEY.
import assert from 'node:assert/strict';
import { UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import { authorizedClient, launch, providerSignIn } from './sdk.mjs';

const brokerUrl = process.env.BROKER_URL;
const mcpUrl = new URL(`${brokerUrl}/mcp`);
const key = process.env.HUB_KEY;
const stubKeys = async () => (await fetch(`${process.env.STUB_URL}/__stub/keys`)).json();
const read = (client) => client.callTool({ name: 'payments_get_customers', arguments: {} });

/** The URL elicitation a call without a key answers (and that nothing was sent). */
async function urlRequired(client, what) {
  const sent = (await stubKeys()).length;
  try {
    await read(client);
  } catch (e) {
    if (!(e instanceof UrlElicitationRequiredError)) throw e;
    assert.equal((await stubKeys()).length, sent, `${what}: nothing may reach the upstream`);
    const [elicitation] = e.elicitations;
    assert.equal(elicitation.mode, 'url');
    assert.ok(elicitation.elicitationId, 'an elicitation id');
    assert.ok(elicitation.url.startsWith(`${brokerUrl}/hub/connect/payments?state=`), elicitation.url);
    return elicitation;
  }
  assert.fail(`${what}: expected URL elicitation required`);
}

async function listed(token) {
  const response = await fetch(`${brokerUrl}/hub/keys`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(response.status, 200);
  const text = await response.text();
  assert.ok(!text.includes(key), 'the hub answered the key');
  return JSON.parse(text).find((e) => e.service === 'payments');
}

const browser = await launch();
try {
  const aliceBrowser = await browser.newContext();
  const alice = await authorizedClient({ mcpUrl, browserContext: aliceBrowser, login: 'alice' });
  const bob = await authorizedClient({ mcpUrl, browserContext: await browser.newContext(), login: 'bob' });

  // 1.
  const first = await urlRequired(alice.client, 'alice without a key');
  console.log(`1. -32042 with ${new URL(first.url).pathname}`);

  // 2.
  const page = await aliceBrowser.newPage();
  await page.goto(first.url);
  await Promise.all([page.waitForLoadState(), page.click('a[href^="/hub/login"]')]);
  await providerSignIn(page, 'alice', (url) => url.pathname === '/hub/connect/payments');
  assert.match(await page.textContent('body'), /Signed in as alice/);
  await page.fill('input[name="key"]', key);
  await Promise.all([page.waitForLoadState(), page.click('button[type="submit"]')]);
  assert.match(await page.textContent('h1'), /Connected/);
  console.log('2. signed in at the provider; the connect page stored the key');

  // 3.
  const answer = await read(alice.client);
  assert.ok(!answer.isError, JSON.stringify(answer).slice(0, 400));
  assert.equal((await stubKeys()).at(-1), `Bearer ${key}`, 'the upstream receives the stored key');
  assert.ok(!JSON.stringify(answer).includes(key), 'the key came back in an answer');
  console.log('3. the retried call ran with the stored key');

  // 4.
  await page.goto(`${brokerUrl}/hub`);
  const hubText = await page.textContent('body');
  assert.match(hubText, /Payments[\s\S]*stored 20/);
  assert.ok(!(await page.content()).includes(key), 'the hub page shows the key');
  const entry = await listed(alice.token);
  assert.equal(entry.present, true);
  console.log(`4. listed: ${JSON.stringify(entry)}`);

  // 5.
  const bobs = await urlRequired(bob.client, 'bob, who stored nothing');
  await page.goto(bobs.url);
  assert.match(await page.textContent('h1'), /another account/);
  assert.equal(await page.locator('input[name="key"]').count(), 0);
  assert.equal((await listed(bob.token)).present, false);
  console.log("5. bob's call sent nothing; his link in alice's browser stored nothing");

  // 6.
  await page.goto(`${brokerUrl}/hub`);
  await Promise.all([page.waitForLoadState(), page.click('form[action="/hub/delete/payments"] button')]);
  assert.match(await page.textContent('body'), /no key/);
  assert.equal((await listed(alice.token)).present, false);
  await urlRequired(alice.client, 'alice after the delete');
  console.log('6. deleted on the hub page; the call asks by URL again');
  await alice.client.close();
  await bob.client.close();
} finally {
  await browser.close();
}
console.log('hub flow: 6 steps passed');
