// The approval page in a real browser (Debian's headless Chromium driven by
// playwright-core): approve, decline, an expired approval, and a cross-site decision
// without its CSRF token. The agent side is plain fetch against the broker's POST /.
//
//   BROKER_URL=http://127.0.0.1:PORT BROKER_TOKEN=... APPROVER_CREDENTIAL=... \
//   APPROVAL_TTL_SECONDS=8 node clients/browser/approval.mjs
import { chromium } from "playwright-core";

const url = process.env.BROKER_URL;
const token = process.env.BROKER_TOKEN;
const credential = process.env.APPROVER_CREDENTIAL;
const ttl = Number(process.env.APPROVAL_TTL_SECONDS || "8");
let failures = 0;

function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures += 1;
}

/** One agent call of payments.post_customers: [status, envelope]. */
async function call(args) {
  const response = await fetch(`${url}/`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      "x-payments-api-key": "pk_browser_check",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "payments.post_customers", arguments: args },
    }),
  });
  return [response.status, await response.json()];
}

/** Asks for an approval for a customer named `name`: its id and URL. */
async function ask(name) {
  const [status, body] = await call({ name, confirm: true });
  const details = body?.error?.details ?? {};
  check(status === 428 && details.reason === "approval_pending", `a write for ${name} waits for a person (${status})`);
  return { id: details.approvalId, link: details.approvalUrl };
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
});
try {
  const context = await browser.newContext();
  const page = await context.newPage();

  // The expired one is asked first and opened last.
  const expired = await ask("Expired-Customer");
  const expiredAt = Date.now() + ttl * 1000;

  // Approve: sign in, read the exact request, approve; the agent's repeat runs once.
  const first = await ask("Approved-Customer");
  await page.goto(first.link);
  check((await page.title()).includes("Sign in"), "the page asks an approver to sign in");
  await page.fill('input[name="credential"]', credential);
  await page.click('button[type="submit"]');
  await page.waitForLoadState();
  if (!(await page.title()).includes("Review a write")) {
    // Say what the page said instead (the wait below then fails the run).
    console.log(`after sign-in: ${await page.title()}: ${(await page.textContent("body")).slice(0, 300)}`);
  }
  await page.waitForSelector("text=Review a write");
  const shown = await page.textContent("body");
  check(shown.includes("Approved-Customer") && shown.includes("/v1/customers"), "the approver sees the exact request");
  check(!shown.includes(token) && !shown.includes("pk_browser_check"), "no key on the page");
  await page.click('button[value="approve"]');
  await page.waitForSelector("h1:has-text('Approved')");
  let [status, body] = await call({ name: "Approved-Customer", confirm: true, approvalId: first.id });
  check(status === 200 && body.meta?.dryRun === false, `the approved write ran (${status})`);
  [status, body] = await call({ name: "Approved-Customer", confirm: true, approvalId: first.id });
  check(status === 428 && body.error?.details?.reason === "used", "and runs only once");

  // Decline (already signed in): the write never runs.
  const second = await ask("Declined-Customer");
  await page.goto(second.link);
  await page.click('button[value="decline"]');
  await page.waitForSelector("h1:has-text('Declined')");
  [status, body] = await call({ name: "Declined-Customer", confirm: true, approvalId: second.id });
  check(status === 403 && body.error?.classification === "confirmation_declined", `the declined write is refused (${status})`);

  // A decision posted without the page's CSRF token, with the approver's cookie: refused.
  const third = await ask("Csrf-Customer");
  const forged = await context.request.post(`${third.link}/decision`, {
    form: { decision: "approve" },
    maxRedirects: 0,
  });
  check(forged.status() === 403, `a decision without its CSRF token is refused (${forged.status()})`);
  [status, body] = await call({ name: "Csrf-Customer", confirm: true, approvalId: third.id });
  check(status === 428 && body.error?.details?.reason === "approval_pending", "and the approval still waits");

  // Expired: the page offers no decision, and the write is refused.
  const wait = expiredAt - Date.now() + 1000;
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  await page.goto(expired.link);
  const expiredText = await page.textContent("body");
  check(expiredText.includes("expired") && (await page.locator('button[value="approve"]').count()) === 0, "an expired approval offers no decision");
  [status, body] = await call({ name: "Expired-Customer", confirm: true, approvalId: expired.id });
  check(status === 428 && body.error?.details?.reason === "expired", `the expired approval is refused (${status})`);
} finally {
  await browser.close();
}
if (failures > 0) {
  console.log(`approval page: ${failures} check(s) failed`);
  process.exit(1);
}
console.log("approval page: all checks passed");
