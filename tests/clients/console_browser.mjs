// The web console in headless Chromium, driven by playwright-core: sign in, open each page,
// approve the held call whose arguments name ALLOW_ME and deny the one naming DENY_ME, open the
// diff of fx__weather (which the server changed since it was pinned) and approve its contract
// with the keyboard, open the sessions page, and run axe-core on every page. Screenshots go to
// ARTEFACTS. Prints a JSON report; exits 1 on a failure.
//
// Usage: node console_browser.mjs CHROMIUM ADMIN_URL TOKEN ARTEFACTS

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

// The packages are in tests/deps/npm, the working directory the test starts this in.
const require = createRequire(join(process.cwd(), "package.json"));
const { chromium } = require("playwright-core");
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

const [chromiumPath, admin, token, artefacts] = process.argv.slice(2);
const report = { pages: {}, violations: {} };

const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(30_000);

  // Each page: a screenshot, and axe-core's serious and critical findings.
  const check = async (name) => {
    await page.screenshot({ path: join(artefacts, `${name}.png`), fullPage: true });
    // Evaluated through the devtools protocol, which the page's CSP does not govern.
    await page.evaluate(axeSource);
    const results = await page.evaluate(() => window.axe.run());
    const serious = results.violations.filter((v) => ["serious", "critical"].includes(v.impact));
    report.violations[name] = serious.map((v) => `${v.id}: ${v.help}`);
    report.pages[name] = await page.title();
  };

  await page.goto(`${admin}/console/servers`);
  if (!page.url().endsWith("/console/login")) throw new Error(`not sent to login: ${page.url()}`);
  await check("login");
  await page.getByLabel("Admin token or credential").fill(token);
  await Promise.all([
    page.waitForNavigation(),
    page.getByRole("button", { name: "Sign in" }).click(),
  ]);
  if (!page.url().endsWith("/console/servers")) {
    throw new Error(`after signing in: ${page.url()}\n${await page.locator("body").innerText()}`);
  }
  if (!(await page.content()).includes("fx")) throw new Error("the servers page does not list fx");
  await check("servers");

  await page.goto(`${admin}/console/approvals`);
  const row = (text) => page.locator("tr", { hasText: text });
  await row("ALLOW_ME").waitFor();
  await row("DENY_ME").waitFor();
  await check("approvals");
  await row("ALLOW_ME").getByRole("button", { name: /approve/i }).click();
  await page.waitForURL("**/console/approvals**");
  await row("DENY_ME").getByRole("textbox").fill("not from the browser");
  await row("DENY_ME").getByRole("button", { name: /deny/i }).click();
  await page.waitForURL("**/console/approvals**");
  report.after = await page.locator("main").innerText();

  await page.goto(`${admin}/console/pins`);
  await check("pins");
  await Promise.all([
    page.waitForURL("**/console/pins/fx__weather"),
    page.getByRole("link", { name: "Review and approve fx__weather" }).click(),
  ]);
  await page.locator("table.diff").first().waitFor();
  await check("pin-diff");
  // With the keyboard: the button takes focus and Enter submits its form.
  await page.getByRole("button", { name: "Approve this contract" }).focus();
  await Promise.all([page.waitForURL("**/console/pins?approved=*"), page.keyboard.press("Enter")]);
  report.pinState = await page.locator("#pin-fx__weather").innerText();

  await page.goto(`${admin}/console/sessions`);
  await check("sessions");
  report.sessions = await page.locator("#sessions caption").innerText();

  for (const name of ["inventory", "events", "audit"]) {
    await page.goto(`${admin}/console/${name}`);
    await check(name);
  }
  report.audit = await page.locator("main").innerText();
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
