// The client guide, run: every snippet of docs/clients.md against a started broker
// (clients/agents.sh), with the pinned clients of package.json. A snippet is a code
// block whose info string's second word names it; its local address
// (http://127.0.0.1:8080) and its OAuth address (https://broker.example.com) are
// replaced by the broker's. Each client runs with a HOME of its own, so nothing of the
// machine's own configs is read or written.
//
// Env: BROKER_URL, TOOLSET ("discovery" | "all"), TOOL_BROKER_API_KEY, VENV (a Python
// with clients/requirements.txt), WORK (an empty folder). Exits non-zero on the first
// failure; prints one line per check.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { launch, providerSignIn } from '../oauth/sdk.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = path.join(here, 'node_modules', '.bin');
const brokerUrl = process.env.BROKER_URL;
const mcpUrl = `${brokerUrl}/mcp`;
const toolset = process.env.TOOLSET;
const key = process.env.TOOL_BROKER_API_KEY;
const work = process.env.WORK;
const all = toolset === 'all';

/** The doc's snippets by name, with the broker's address put in. */
function snippets() {
  const text = fs.readFileSync(path.join(here, '..', '..', 'docs', 'clients.md'), 'utf8');
  const found = new Map();
  for (const [, , name, body] of text.matchAll(/```(\w+) ([\w-]+)\n([\s\S]*?)```/g)) {
    found.set(
      name,
      body.replaceAll('http://127.0.0.1:8080', brokerUrl).replaceAll('https://broker.example.com', brokerUrl),
    );
  }
  return found;
}
const doc = snippets();
function snippet(name) {
  assert.ok(doc.has(name), `docs/clients.md has no snippet named ${name}`);
  return doc.get(name);
}

function ok(label) {
  console.log(`ok   [${toolset}] ${label}`);
}

/** A HOME of its own for one client, and a project folder in it. */
function home(name) {
  const dir = path.join(work, `${toolset}-${name}`);
  fs.mkdirSync(path.join(dir, 'project'), { recursive: true });
  return dir;
}

/** The environment a client runs in: its HOME, the pinned binaries first on PATH, no
 * telemetry or update checks, and `extra`. */
function clientEnv(homeDir, extra = {}) {
  return {
    PATH: `${bin}:${process.env.PATH}`,
    HOME: homeDir,
    TOOL_BROKER_API_KEY: key,
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    GEMINI_CLI_NO_RELAUNCH: 'true',
    NO_BROWSER: 'true',
    BROWSER: 'true',
    ...extra,
  };
}

/** Runs `command` (a shell line or argv) to its end; its output, or a failure naming it. */
function run(command, { env, cwd, expectFail = false }) {
  const argv = Array.isArray(command) ? command : ['bash', '-euo', 'pipefail', '-c', command];
  const done = spawnSync(argv[0], argv.slice(1), { env, cwd, encoding: 'utf8', timeout: 120_000 });
  const out = `${done.stdout ?? ''}${done.stderr ?? ''}`;
  if (!expectFail) {
    assert.equal(done.status, 0, `${argv.join(' ')} failed (${done.status ?? done.signal}): ${out.slice(-2000)}`);
  }
  return out;
}

/** `tools/list` (every page under "all", else the first) and `portal_check_connection`
 * through a connected SDK client. */
async function listAndCall(client, label) {
  let tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools = tools.concat(page.tools);
    cursor = all ? page.nextCursor : undefined;
  } while (cursor);
  const names = tools.map((t) => t.name);
  if (all) {
    assert.ok(tools.length > 1000, `${label}: ${tools.length} tools under "all"`);
    assert.equal(new Set(names).size, names.length, `${label}: a tool listed twice`);
  } else {
    assert.deepEqual(names, ['find_tools', 'get_tool_reference', 'call_tool'], label);
  }
  const checked = await client.callTool({ name: 'portal_check_connection', arguments: {} });
  assert.ok(!checked.isError, `${label}: ${JSON.stringify(checked).slice(0, 500)}`);
  assert.equal(checked.structuredContent.data.authenticated, true, label);
  return { tools: tools.length, identity: checked.structuredContent.data.identity };
}

// --- Claude Code -----------------------------------------------------------------------

function claudeList(env, cwd) {
  return run(['claude', 'mcp', 'list'], { env, cwd });
}

async function claudeCode() {
  const h = home('claude-code');
  const cwd = path.join(h, 'project');
  run(snippet('claude-code'), { env: clientEnv(h), cwd });
  const connected = `tool-broker: ${mcpUrl} (HTTP) - ✔ Connected`;
  let listed = claudeList(clientEnv(h), cwd);
  assert.ok(listed.includes(connected), listed);
  assert.ok(!fs.readFileSync(path.join(h, '.claude.json'), 'utf8').includes(key), 'the key was written to the config');
  ok(`Claude Code ${version('claude')}: claude mcp add (user scope, key from the environment), claude mcp list: Connected`);
  listed = claudeList(clientEnv(h, { TOOL_BROKER_API_KEY: 'tbk_wrong_key_for_the_check' }), cwd);
  assert.ok(listed.includes('Failed to connect') && listed.includes('unknown API key'), listed);
  ok('Claude Code with a wrong key: Failed to connect, HTTP 401, "unknown API key"');

  // The project file, before and after the approval Claude Code asks for in the folder.
  const p = home('claude-code-project');
  const project = path.join(p, 'project');
  fs.writeFileSync(path.join(project, '.mcp.json'), snippet('claude-code-project'));
  listed = claudeList(clientEnv(p), project);
  assert.ok(listed.includes('Pending approval'), listed);
  const state = path.join(p, '.claude.json');
  const config = JSON.parse(fs.readFileSync(state, 'utf8'));
  config.projects = { ...config.projects, [project]: { enabledMcpjsonServers: ['tool-broker'], hasTrustDialogAccepted: true } };
  fs.writeFileSync(state, JSON.stringify(config));
  listed = claudeList(clientEnv(p), project);
  assert.ok(listed.includes(connected), listed);
  ok('Claude Code .mcp.json: Pending approval, then Connected once the folder is approved');
}

async function claudeCodeOauth() {
  const h = home('claude-code-oauth');
  const cwd = path.join(h, 'project');
  run(snippet('claude-code-oauth'), { env: clientEnv(h), cwd });
  const listed = claudeList(clientEnv(h), cwd);
  assert.ok(listed.includes(`tool-broker: ${mcpUrl} (HTTP) - `) && /Needs authentication/i.test(listed), listed);
  ok('Claude Code with OAuth: the URL alone, claude mcp list: Needs authentication');
}

// --- mcp-remote (Claude Desktop's stdio bridge) ----------------------------------------

/** An SDK client speaking stdio to the command of a claude_desktop_config.json, started
 * as written in clients/agents (where npx finds the pinned mcp-remote); `onStderr` sees
 * what it prints. */
async function desktopClient(name, configDir, onStderr = () => {}) {
  const server = JSON.parse(snippet(name)).mcpServers['tool-broker'];
  const env = Object.fromEntries(Object.entries(server.env ?? {}).map(([k, v]) => [k, v.replace('<your key>', key)]));
  const transport = new StdioClientTransport({
    command: server.command,
    args: server.args,
    cwd: here,
    env: { ...clientEnv(configDir), MCP_REMOTE_CONFIG_DIR: path.join(configDir, '.mcp-auth'), ...env },
    stderr: 'pipe',
  });
  transport.stderr.on('data', (chunk) => onStderr(String(chunk)));
  const client = new Client({ name: 'claude-desktop-check', version: '1.0.0' });
  return { client, transport };
}

async function claudeDesktop() {
  const h = home('claude-desktop');
  const { client, transport } = await desktopClient('claude-desktop', h);
  await client.connect(transport);
  const { tools } = await listAndCall(client, 'mcp-remote with a key');
  await client.close();
  ok(`Claude Desktop config, mcp-remote ${version('mcp-remote')} with the key header: ${tools} tools listed, a call answered`);
}

/** The URL a client printed for the person to open. */
function authorizationUrl(text) {
  const found = text.match(/(https?:\/\/127\.0\.0\.1:\d+\/auth\?\S+)/);
  return found && found[1];
}

/** Opens `url` in headless Chromium and signs `login` in at the provider, until the
 * browser has been sent to a loopback callback of the client. */
async function signIn(url, login) {
  const browser = await launch();
  try {
    const page = await (await browser.newContext()).newPage();
    await page.goto(url);
    const callback = (u) => /^https?:\/\/(localhost|127\.0\.0\.1):\d+\/.*callback/.test(u.href);
    await providerSignIn(page, login, callback);
    await page.waitForLoadState();
  } finally {
    await browser.close();
  }
}

/** Resolves with the first authorization URL `watch` is handed. */
function waitForUrl(register, what) {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`${what} printed no authorization URL: ${seen.slice(-1500)}`)), 60_000);
    register((text) => {
      seen += text;
      const url = authorizationUrl(seen);
      if (url) {
        clearTimeout(timer);
        resolve(url);
      }
    });
  });
}

async function claudeDesktopOauth() {
  const h = home('claude-desktop-oauth');
  let listener = () => {};
  const { client, transport } = await desktopClient('claude-desktop-oauth', h, (text) => listener(text));
  const url = waitForUrl((f) => (listener = f), 'mcp-remote');
  const connected = client.connect(transport);
  await signIn(await url, 'dana');
  await connected;
  const { tools, identity } = await listAndCall(client, 'mcp-remote with OAuth');
  assert.equal(identity.kind, 'user', JSON.stringify(identity));
  assert.equal(identity.subject, 'dana', JSON.stringify(identity));
  await client.close();
  ok(`Claude Desktop config with OAuth: mcp-remote signed dana in (registration, PKCE, consent in Chromium), ${tools} tools, a call as dana`);
}

// --- Cursor and VS Code: their files, resolved as the editor does -------------------------

async function editorFile(name, servers, resolve) {
  const server = JSON.parse(snippet(name))[servers]['tool-broker'];
  const headers = Object.fromEntries(Object.entries(server.headers).map(([k, v]) => [k, resolve(v)]));
  const client = new Client({ name: `${name}-check`, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers } }));
  const { tools } = await listAndCall(client, name);
  await client.close();
  return tools;
}

async function editors() {
  let tools = await editorFile('cursor', 'mcpServers', (v) => v.replace('${env:TOOL_BROKER_API_KEY}', key));
  ok(`Cursor mcp.json: its url and headers (\${env:} replaced) connect, ${tools} tools, a call answered`);
  const config = JSON.parse(snippet('vscode'));
  assert.equal(config.inputs[0].id, 'tool-broker-key');
  assert.equal(config.servers['tool-broker'].type, 'http');
  tools = await editorFile('vscode', 'servers', (v) => v.replace('${input:tool-broker-key}', key));
  ok(`VS Code mcp.json: its url and headers (\${input:} answered) connect, ${tools} tools, a call answered`);
}

// --- Codex -------------------------------------------------------------------------------

function codexServer(h) {
  const listed = JSON.parse(run(['codex', 'mcp', 'list', '--json'], { env: clientEnv(h), cwd: path.join(h, 'project') }).replace(/^WARNING.*\n/gm, ''));
  const server = listed.find((s) => s.name === 'tool-broker');
  assert.ok(server, JSON.stringify(listed));
  return server;
}

async function codex() {
  let h = home('codex');
  run(snippet('codex'), { env: clientEnv(h), cwd: path.join(h, 'project') });
  let server = codexServer(h);
  assert.equal(server.transport.url, mcpUrl);
  assert.equal(server.transport.bearer_token_env_var, 'TOOL_BROKER_API_KEY');
  assert.ok(server.enabled);
  ok(`Codex ${version('codex')}: codex mcp add, codex mcp list: the URL and the key's variable, enabled`);
  h = home('codex-config');
  fs.mkdirSync(path.join(h, '.codex'), { recursive: true });
  fs.writeFileSync(path.join(h, '.codex', 'config.toml'), snippet('codex-config'));
  server = codexServer(h);
  assert.equal(server.transport.url, mcpUrl);
  assert.equal(server.transport.bearer_token_env_var, 'TOOL_BROKER_API_KEY');
  ok('Codex config.toml: read as written');
}

async function codexOauth() {
  const h = home('codex-oauth');
  fs.mkdirSync(path.join(h, '.codex'), { recursive: true });
  // No keyring on a CI machine: the tokens go to a file under CODEX_HOME.
  fs.writeFileSync(path.join(h, '.codex', 'config.toml'), 'mcp_oauth_credentials_store = "file"\n');
  const child = spawn('bash', ['-euo', 'pipefail', '-c', snippet('codex-oauth')], {
    env: clientEnv(h),
    cwd: path.join(h, 'project'),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = waitForUrl((f) => {
    const take = (chunk) => {
      output += chunk;
      f(String(chunk));
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
  }, 'codex mcp add');
  const exited = new Promise((resolve) => child.on('exit', resolve));
  await signIn(await url, 'erin');
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 60_000))]);
  assert.equal(code, 0, `codex mcp add: ${output.slice(-1500)}`);
  const server = codexServer(h);
  assert.equal(server.auth_status, 'o_auth', JSON.stringify(server));
  ok('Codex with OAuth: codex mcp add signed erin in (Chromium), codex mcp list: OAuth');
}

// --- Gemini CLI --------------------------------------------------------------------------

function geminiList(h, extra = {}) {
  const cwd = path.join(h, 'project');
  // The folder trusted, as Gemini CLI records it when the person says so.
  fs.writeFileSync(path.join(h, '.gemini', 'trustedFolders.json'), JSON.stringify({ [cwd]: 'TRUST_FOLDER' }));
  return run(['gemini', 'mcp', 'list'], { env: clientEnv(h, extra), cwd });
}

async function gemini() {
  const connected = `✓ tool-broker: ${mcpUrl} (http) - Connected`;
  let h = home('gemini-settings');
  fs.mkdirSync(path.join(h, '.gemini'), { recursive: true });
  fs.writeFileSync(path.join(h, '.gemini', 'settings.json'), snippet('gemini-settings'));
  let listed = geminiList(h);
  assert.ok(listed.includes(connected), listed);
  ok(`Gemini CLI ${version('gemini')}: settings.json, gemini mcp list: Connected`);
  listed = geminiList(h, { TOOL_BROKER_API_KEY: 'tbk_wrong_key_for_the_check' });
  assert.ok(listed.includes(`✗ tool-broker: ${mcpUrl} (http) - Disconnected`), listed);
  ok('Gemini CLI with a wrong key: Disconnected');
  h = home('gemini');
  run(snippet('gemini'), { env: clientEnv(h), cwd: path.join(h, 'project') });
  assert.ok(!fs.readFileSync(path.join(h, '.gemini', 'settings.json'), 'utf8').includes(key), 'the key was written to the settings');
  listed = geminiList(h);
  assert.ok(listed.includes(connected), listed);
  ok('Gemini CLI: gemini mcp add (user scope, key from the environment), gemini mcp list: Connected');
}

// --- The SDKs, their snippets run as written ------------------------------------------------

function expectPrinted(out, label) {
  const tools = Number(out.match(/tools: (\d+)/)?.[1]);
  assert.ok(all ? tools >= 100 : tools === 3, `${label}: ${out.slice(-1500)}`);
  assert.match(out, /authenticated: (True|true)/, label);
  return tools;
}

async function sdks() {
  const python = path.join(process.env.VENV, 'bin', 'python');
  for (const name of ['openai-agents', 'mcp-python']) {
    const out = run([python, '-c', snippet(name)], { env: { ...process.env, HOME: home(name) } });
    ok(`${name}: run as written, tools: ${expectPrinted(out, name)}, authenticated`);
  }
  // Beside node_modules, so its imports resolve as in a project that installed the SDK.
  const file = path.join(here, 'node_modules', '.snippets', `mcp-typescript-${toolset}.mjs`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, snippet('mcp-typescript'));
  const out = run(['node', file], { env: process.env });
  ok(`mcp-typescript: run as written, tools: ${expectPrinted(out, 'mcp-typescript')}, authenticated`);
}

const versions = new Map();
function version(pkg) {
  const names = { claude: '@anthropic-ai/claude-code', codex: '@openai/codex', gemini: '@google/gemini-cli', 'mcp-remote': 'mcp-remote' };
  if (!versions.has(pkg)) {
    versions.set(pkg, JSON.parse(fs.readFileSync(path.join(here, 'node_modules', names[pkg], 'package.json'), 'utf8')).version);
  }
  return versions.get(pkg);
}

const only = process.env.ONLY ? new Set(process.env.ONLY.split(',')) : null;
const checks = { claudeCode, claudeCodeOauth, claudeDesktop, claudeDesktopOauth, editors, codex, codexOauth, gemini, sdks };
for (const [name, check] of Object.entries(checks)) {
  if (only && !only.has(name)) continue;
  await check();
}
// Every named snippet of the guide was run by a check above.
const ran = ['claude-code', 'claude-code-project', 'claude-code-oauth', 'claude-desktop', 'claude-desktop-oauth', 'cursor', 'vscode', 'codex', 'codex-config', 'codex-oauth', 'gemini-settings', 'gemini', 'openai-agents', 'mcp-python', 'mcp-typescript'];
assert.deepEqual([...doc.keys()].sort(), [...ran].sort(), 'a snippet of docs/clients.md that no check runs, or a check without its snippet');
