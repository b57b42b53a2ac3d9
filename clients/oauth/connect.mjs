// Accounts connected by OAuth with real parts (decision 020, docs/hub.md "Connecting an
// account by OAuth"), against the broker, its identity provider and the hosting
// service's own authorization server (service_provider.mjs) that clients/oauth.sh starts:
//   1. alice calls a hosting read with no connection: URL elicitation required, the
//      link the hub's connect page, nothing sent upstream;
//   2. in her browser: sign in to the hub, the page lists the scopes asked, Connect
//      takes her to the service's provider (login and consent there), and back to the
//      hub, connected;
//   3. the retried call carries the service's access token (not hers to the broker);
//   4. once the token is within the refresh skew, the next call refreshes it: one
//      refresh reaches the provider, the upstream receives the new token, the call
//      after uses it without another refresh;
//   5. a forged callback stores nothing;
//   6. Disconnect on the hub page revokes at the provider and the call asks again;
//   7. an on-behalf-of service (imagegen): alice's own access token exchanged at the
//      broker's provider (RFC 8693), the exchanged token sent, reused while it lives.
// Env: BROKER_URL, STUB_URL, SERVICE_PROVIDER_URL, IDP_URL, WAIT_FOR_REFRESH_MS.
import assert from 'node:assert/strict';
import { UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import { authorizedClient, launch, providerSignIn } from './sdk.mjs';

const brokerUrl = process.env.BROKER_URL;
const mcpUrl = new URL(`${brokerUrl}/mcp`);
const stubKeys = async () => (await fetch(`${process.env.STUB_URL}/__stub/keys`)).json();
const counts = async () => (await fetch(`${process.env.SERVICE_PROVIDER_URL}/__counts`)).json();
const read = (client) =>
  client.callTool({ name: 'hosting_agency_hosting_list_agency_plan_websites_v1', arguments: {} });

async function urlRequired(client, what) {
  const sent = (await stubKeys()).length;
  try {
    await read(client);
  } catch (e) {
    if (!(e instanceof UrlElicitationRequiredError)) throw e;
    assert.equal((await stubKeys()).length, sent, `${what}: nothing may reach the upstream`);
    const [elicitation] = e.elicitations;
    assert.equal(elicitation.mode, 'url');
    assert.ok(elicitation.url.startsWith(`${brokerUrl}/hub/connect/hosting?state=`), elicitation.url);
    assert.match(elicitation.message, /sign in at/);
    return elicitation;
  }
  assert.fail(`${what}: expected URL elicitation required`);
}

/** Signs in and consents at a provider, never clicking on the broker's own pages; a
 * failure shows where the browser stopped and what the page said. */
async function signIn(page, login, done) {
  try {
    await providerSignIn(page, login, done, new URL(brokerUrl).origin);
  } catch (e) {
    console.error(`stopped at ${page.url()}: ${(await page.textContent('body')).slice(0, 400)}`);
    throw e;
  }
}

async function ok(client) {
  const answer = await read(client);
  assert.ok(!answer.isError, JSON.stringify(answer).slice(0, 400));
  return (await stubKeys()).at(-1);
}

const browser = await launch();
try {
  const context = await browser.newContext();
  const alice = await authorizedClient({ mcpUrl, browserContext: context, login: 'alice' });

  // 1.
  const first = await urlRequired(alice.client, 'alice without a connection');
  console.log(`1. -32042 with ${new URL(first.url).pathname}`);

  // 2.
  const page = await context.newPage();
  await page.goto(first.url);
  await Promise.all([page.waitForLoadState(), page.click('a[href^="/hub/login"]')]);
  await signIn(page, 'alice', (url) => url.pathname === '/hub/connect/hosting');
  const consent = await page.textContent('body');
  assert.match(consent, /It asks for: .*sites\.read/s);
  const before = await counts();
  await Promise.all([page.waitForLoadState(), page.click('form[action="/hub/connect/hosting"] button')]);
  await signIn(page, 'alice-at-hosting', (url) => url.href === `${brokerUrl}/hub`);
  const hub = await page.textContent('body');
  assert.match(hub, /connected as alice-at-hosting@hosting\.example since/);
  assert.equal((await counts()).authorization_code, before.authorization_code + 1);
  console.log('2. consented at the service provider; the hub lists the account as connected');

  // 3.
  const firstToken = await ok(alice.client);
  assert.match(firstToken, /^Bearer \S+$/);
  assert.notEqual(firstToken, `Bearer ${alice.token}`, "the service got the broker's own token");
  const listed = await (
    await fetch(`${brokerUrl}/hub/keys`, { headers: { authorization: `Bearer ${alice.token}` } })
  ).text();
  assert.ok(!listed.includes(firstToken.slice(7)), 'the hub answered a token');
  assert.ok(!(await page.content()).includes(firstToken.slice(7)), 'the hub page shows a token');
  console.log('3. the call carried the service access token');

  // 4.
  await new Promise((resolve) => setTimeout(resolve, Number(process.env.WAIT_FOR_REFRESH_MS ?? 11000)));
  const refreshes = (await counts()).refresh_token;
  const secondToken = await ok(alice.client);
  assert.notEqual(secondToken, firstToken, 'the token near its expiry was refreshed');
  assert.equal((await counts()).refresh_token, refreshes + 1);
  assert.equal(await ok(alice.client), secondToken);
  assert.equal((await counts()).refresh_token, refreshes + 1, 'a fresh token is not refreshed again');
  console.log('4. refreshed once near expiry, the rotated token stored and used');

  // 5.
  const forged = await page.goto(`${brokerUrl}/hub/oauth/hosting/callback?code=stolen&state=forged`);
  assert.equal(forged.status(), 400);
  console.log('5. a forged callback stored nothing');

  // 6.
  const revoked = (await counts()).revoked;
  await page.goto(`${brokerUrl}/hub`);
  await Promise.all([page.waitForLoadState(), page.click('form[action="/hub/delete/hosting"] button')]);
  assert.match(await page.textContent('body'), /Hosting[\s\S]*not connected/);
  assert.equal((await counts()).revoked, revoked + 1, 'the provider saw the revocation');
  await urlRequired(alice.client, 'alice after disconnecting');
  console.log('6. disconnected: revoked at the provider, the call asks again');

  // 7.
  const exchanges = async () => (await (await fetch(`${process.env.IDP_URL}/__exchanges`)).json()).exchanges;
  const before7 = await exchanges();
  const self = () => alice.client.callTool({ name: 'imagegen_get_user_self', arguments: {} });
  const first7 = await self();
  assert.ok(!first7.isError, JSON.stringify(first7).slice(0, 400));
  const exchanged = (await stubKeys()).at(-1);
  assert.match(exchanged, /^Bearer obo-alice-[0-9a-f]+$/);
  assert.equal(await exchanges(), before7 + 1);
  assert.ok(!(await self()).isError);
  assert.equal((await stubKeys()).at(-1), exchanged, 'the exchanged token is reused while it lives');
  assert.equal(await exchanges(), before7 + 1);
  await page.goto(`${brokerUrl}/hub`);
  assert.match(await page.textContent('body'), /called on your behalf/);
  console.log('7. on behalf of alice: her token exchanged once, the exchanged token sent twice');
  await alice.client.close();
} finally {
  await browser.close();
}
console.log('connected accounts: 7 steps passed');
