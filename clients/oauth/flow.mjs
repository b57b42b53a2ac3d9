// The official MCP TypeScript SDK client through the whole OAuth flow against a started
// broker whose [oauth] names the provider of provider.mjs (clients/oauth.sh):
//   1. 401 from /mcp with a resource_metadata challenge;
//   2. the Protected Resource Metadata;
//   3. the authorization server's metadata;
//   4. dynamic client registration;
//   5. authorization code with PKCE and `resource`, login and consent driven in Debian's
//      headless Chromium (playwright-core), the code exchanged for a JWT access token;
//   6. tools/list, then tools/call (check_connection names the user; a payments read
//      reaches the loopback stub upstream).
// Every step is checked; the script exits non-zero on the first failure.
//
// Env: BROKER_URL, PAYMENTS_KEY.
import assert from 'node:assert/strict';
import { authorizedClient, launch } from './sdk.mjs';

const brokerUrl = process.env.BROKER_URL;
const mcpUrl = new URL(`${brokerUrl}/mcp`);
const headers = { 'x-payments-api-key': process.env.PAYMENTS_KEY };

const browser = await launch();
let connected;
try {
  connected = await authorizedClient({ mcpUrl, browserContext: await browser.newContext(), login: 'alice', headers });
} finally {
  await browser.close();
}
const { client, seen, authorization, token } = connected;

// Steps 1-4, in order.
const step = (predicate, what) => {
  const index = seen.findIndex(predicate);
  assert.ok(index >= 0, `${what} not seen in ${JSON.stringify(seen)}`);
  return index;
};
const s401 = step(([, url, status]) => url === mcpUrl.href && status === 401, '1. 401 from /mcp');
const sPrm = step(
  ([, url, status]) => url.includes('/.well-known/oauth-protected-resource') && status === 200,
  '2. protected resource metadata',
);
const sAs = step(
  ([, url, status]) =>
    (url.includes('/.well-known/oauth-authorization-server') || url.includes('/.well-known/openid-configuration')) &&
    status === 200 &&
    !url.startsWith(brokerUrl),
  '3. authorization server metadata',
);
const sReg = step(([method, url, status]) => method === 'POST' && url.endsWith('/reg') && status === 201, '4. client registration');
assert.ok(s401 < sPrm && sPrm < sAs && sAs < sReg, `steps out of order: ${JSON.stringify(seen)}`);

// Step 5: the authorization request carried PKCE and the resource; the token is a JWT
// for the broker.
assert.equal(authorization.searchParams.get('code_challenge_method'), 'S256');
assert.ok(authorization.searchParams.get('code_challenge'));
assert.equal(authorization.searchParams.get('resource'), mcpUrl.href);
console.log(`authorization request: scope="${authorization.searchParams.get('scope')}", resource=${mcpUrl.href}`);
assert.ok(token && token.split('.').length === 3, 'the access token must be a JWT');
const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
assert.equal(claims.aud, mcpUrl.href, 'the token names the broker as audience');
console.log(`token: ${JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()).alg}, scope="${claims.scope}"`);

// Step 6: connected as alice.
const listed = await client.listTools();
assert.ok(listed.tools.some((t) => t.name === 'find_tools'), 'tools/list shows the discovery tools');
const checked = await client.callTool({ name: 'portal_check_connection', arguments: {} });
assert.ok(!checked.isError, JSON.stringify(checked));
const identity = checked.structuredContent.data.identity;
assert.deepEqual(
  { kind: identity.kind, subject: identity.subject },
  { kind: 'user', subject: 'alice' },
  JSON.stringify(identity),
);
assert.ok(!JSON.stringify(checked).includes(token), 'the token came back in an answer');
const read = await client.callTool({ name: 'payments_get_customers', arguments: {} });
assert.ok(!read.isError, JSON.stringify(read).slice(0, 500));
await client.close();
console.log(`oauth flow: 6 steps passed (${seen.length} requests), tools/list ${listed.tools.length} tools, identity ${identity.subject} at ${identity.issuer}`);
