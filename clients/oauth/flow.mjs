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
import http from 'node:http';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const brokerUrl = process.env.BROKER_URL;
const mcpUrl = new URL(`${brokerUrl}/mcp`);

// Every request the SDK makes, in order: [method, url, status].
const seen = [];
const recordingFetch = async (url, init) => {
  const response = await fetch(url, init);
  seen.push([init?.method ?? 'GET', String(url), response.status]);
  return response;
};

// The redirect target: a loopback listener the browser is sent to with the code.
const callback = http.createServer((req, res) => {
  res.end('signed in; you can close this window');
});
await new Promise((resolve) => callback.listen(0, '127.0.0.1', resolve));
const redirectUrl = `http://127.0.0.1:${callback.address().port}/callback`;

class MemoryProvider {
  constructor() {
    this.saved = {};
  }
  get redirectUrl() {
    return redirectUrl;
  }
  get clientMetadata() {
    return {
      client_name: 'tool-broker oauth check',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      application_type: 'native',
    };
  }
  clientInformation() {
    return this.saved.client;
  }
  saveClientInformation(info) {
    this.saved.client = info;
  }
  tokens() {
    return this.saved.tokens;
  }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
  }
  redirectToAuthorization(url) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier) {
    this.saved.verifier = verifier;
  }
  codeVerifier() {
    return this.saved.verifier;
  }
}

const auth = new MemoryProvider();
const headers = { 'x-payments-api-key': process.env.PAYMENTS_KEY };
const transport = () =>
  new StreamableHTTPClientTransport(mcpUrl, {
    authProvider: auth,
    fetch: recordingFetch,
    requestInit: { headers },
  });

// Steps 1-4: the first connection is refused and the SDK discovers and registers.
const first = transport();
let refused = false;
try {
  await new Client({ name: 'oauth-check', version: '1.0.0' }).connect(first);
} catch (e) {
  refused = e instanceof UnauthorizedError;
  if (!refused) throw e;
}
assert.ok(refused, 'the first connection must be refused for authorization');
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

// Step 5: the authorization request carries PKCE and the resource.
const authorization = auth.authorizationUrl;
assert.ok(authorization, 'the SDK asked for no authorization');
assert.equal(authorization.searchParams.get('code_challenge_method'), 'S256');
assert.ok(authorization.searchParams.get('code_challenge'));
assert.equal(authorization.searchParams.get('resource'), mcpUrl.href);
console.log(`authorization request: scope="${authorization.searchParams.get('scope')}", resource=${mcpUrl.href}`);

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
});
let code;
try {
  const page = await browser.newPage();
  await page.goto(authorization.href);
  // The provider's own login page, then its consent page.
  await page.fill('input[name="login"]', 'alice');
  await page.fill('input[name="password"]', 'any');
  await Promise.all([page.waitForLoadState(), page.click('button[type="submit"]')]);
  const arrived = page.waitForURL((url) => url.href.startsWith(redirectUrl), { timeout: 15000 });
  await page.click('button[type="submit"]');
  await arrived;
  const back = new URL(page.url());
  code = back.searchParams.get('code');
  assert.ok(code, `no code in ${back.href}`);
} finally {
  await browser.close();
}
await first.finishAuth(code);
const token = auth.tokens()?.access_token;
assert.ok(token && token.split('.').length === 3, 'the access token must be a JWT');
const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
assert.equal(claims.aud, mcpUrl.href, 'the token names the broker as audience');
console.log(`token: ${JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()).alg}, scope="${claims.scope}"`);

// Step 6: connected as alice.
const client = new Client({ name: 'oauth-check', version: '1.0.0' });
await client.connect(transport());
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
callback.close();
console.log(`oauth flow: 6 steps passed (${seen.length} requests), tools/list ${listed.tools.length} tools, identity ${identity.subject} at ${identity.issuer}`);
