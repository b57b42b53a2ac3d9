// What the OAuth checks share (flow.mjs, hub.mjs): Debian's headless Chromium with the
// flags that keep it off the network, the provider's own login and consent pages driven
// in it, and the official MCP TypeScript SDK client authorized as a user through the
// whole flow (401, metadata, dynamic registration, code + PKCE + resource).
import assert from 'node:assert/strict';
import http from 'node:http';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

/** Debian's chromium, headless, kept off the network. */
export function launch() {
  return chromium.launch({
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
}

/** Signs `login` in on the provider's own pages (when it asks) and consents, until the
 * browser reaches a URL `done` accepts. Nothing is clicked on a page of `notAt` (an
 * origin: the broker's own pages have buttons of their own, which a redirect still on
 * its way must not meet). */
export async function providerSignIn(page, login, done, notAt = null) {
  const arrived = page.waitForURL(done, { timeout: 20000 });
  for (let i = 0; i < 40; i++) {
    if (done(new URL(page.url()))) break;
    if (notAt && new URL(page.url()).origin === notAt) {
      await page.waitForTimeout(200);
      continue;
    }
    if (await page.locator('input[name="login"]').count()) {
      await page.fill('input[name="login"]', login);
      await page.fill('input[name="password"]', 'any');
    }
    const button = page.locator('button[type="submit"]');
    if (!(await button.count())) break;
    await Promise.all([page.waitForLoadState(), button.first().click()]);
    await page.waitForLoadState();
  }
  await arrived;
}

class MemoryProvider {
  constructor(redirectUrl) {
    this.saved = {};
    this.redirect = redirectUrl;
  }
  get redirectUrl() {
    return this.redirect;
  }
  get clientMetadata() {
    return {
      client_name: 'tool-broker oauth check',
      redirect_uris: [this.redirect],
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

/** An MCP SDK client of `mcpUrl` authorized as `login` in `browserContext`: the first
 * connection is refused (401), the SDK discovers and registers, the person signs in and
 * consents in the browser, the code is exchanged. `seen` lists every request the SDK
 * made ([method, url, status]); `headers` go on every request. */
export async function authorizedClient({ mcpUrl, browserContext, login, headers = {} }) {
  const seen = [];
  const recordingFetch = async (url, init) => {
    const response = await fetch(url, init);
    seen.push([init?.method ?? 'GET', String(url), response.status]);
    return response;
  };
  const callback = http.createServer((req, res) => res.end('signed in; you can close this window'));
  await new Promise((resolve) => callback.listen(0, '127.0.0.1', resolve));
  const redirectUrl = `http://127.0.0.1:${callback.address().port}/callback`;
  const auth = new MemoryProvider(redirectUrl);
  const transport = () =>
    new StreamableHTTPClientTransport(mcpUrl, { authProvider: auth, fetch: recordingFetch, requestInit: { headers } });
  const first = transport();
  let refused = false;
  try {
    await new Client({ name: 'oauth-check', version: '1.0.0' }).connect(first);
  } catch (e) {
    refused = e instanceof UnauthorizedError;
    if (!refused) throw e;
  }
  assert.ok(refused, 'the first connection must be refused for authorization');
  const authorization = auth.authorizationUrl;
  assert.ok(authorization, 'the SDK asked for no authorization');
  const page = await browserContext.newPage();
  let code;
  try {
    await page.goto(authorization.href);
    await providerSignIn(page, login, (url) => url.href.startsWith(redirectUrl));
    code = new URL(page.url()).searchParams.get('code');
    assert.ok(code, `no code in ${page.url()}`);
  } finally {
    await page.close();
    callback.close();
  }
  await first.finishAuth(code);
  const client = new Client({ name: 'oauth-check', version: '1.0.0' });
  await client.connect(transport());
  return { client, auth, seen, authorization, token: auth.tokens()?.access_token };
}
