// Checks the docs UI of a running fleetapi in a real headless Chromium
// (Debian's chromium, driven by playwright-core from web/node_modules):
//   1. the page renders every operation of the OpenAPI document;
//   2. "Authorize" with a demo token, then "Try it out" / "Execute" on
//      GET /me, reaches the API and shows 200 with the account;
//   3. nothing is loaded from any other origin (every request is checked,
//      and refused), and the page logs no error (CSP violations included).
// It saves two screenshots. Usage (scripts/docs-browser-check.sh runs it):
//   node scripts/docs-browser-check.mjs ORIGIN TOKEN OUTDIR
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, "..", "web", "package.json"));
const { chromium } = require("playwright-core");

const [origin, token, outDir] = process.argv.slice(2);
if (!origin || !token || !outDir) {
  console.error("usage: node scripts/docs-browser-check.mjs ORIGIN TOKEN OUTDIR");
  process.exit(2);
}
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const failures = [];
const fail = (msg) => { failures.push(msg); console.error("FAIL: " + msg); };

const profile = mkdtempSync(join(tmpdir(), "fleetapi-docs-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1280, height: 1600 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  // Only this server may be reached: anything else is refused and reported.
  const foreign = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(origin + "/") || url.startsWith("data:") || url.startsWith("blob:")) {
      return route.continue();
    }
    foreign.push(url);
    return route.abort("blockedbyclient");
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error") problems.push("console: " + m.text()); });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));

  const doc = JSON.parse(readFileSync(join(here, "..", "api", "testdata", "openapi.golden.json"), "utf8"));
  const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ method, path, id: op.operationId, tag: op.tags[0] })));

  const resp = await page.goto(origin + "/api/v2/docs", { waitUntil: "networkidle" });
  if (resp.status() !== 200) fail(`GET /api/v2/docs: ${resp.status()}`);
  await page.waitForSelector(".opblock", { timeout: 20000 });
  const title = await page.textContent(".info .title");
  if (!title.includes("fleetapi client API")) fail(`title ${JSON.stringify(title)}`);

  // 1. Every operation is on the page, with its path and operationId.
  for (const op of operations) {
    const sel = `#operations-${op.tag.replaceAll(" ", "_")}-${op.id}`;
    const block = await page.$(sel);
    if (!block) { fail(`operation ${op.id} (${sel}) is not rendered`); continue; }
    const text = await block.textContent();
    if (!text.includes(op.path) || !text.includes(op.id)) fail(`operation ${op.id}: ${JSON.stringify(text.slice(0, 120))}`);
  }
  console.log(`rendered ${operations.length} operations: ${operations.map((o) => o.id).join(", ")}`);
  await page.screenshot({ path: join(outDir, "docs-overview.png"), fullPage: false });

  // 2. Authorize with the demo token, then try GET /me.
  await page.click(".auth-wrapper .btn.authorize");
  await page.fill(".modal-ux input[type=text]", "Bearer " + token);
  await page.click(".modal-ux .auth-btn-wrapper .btn.authorize");
  await page.click(".modal-ux .btn-done");
  const me = "#operations-Account-get_me";
  await page.click(`${me} .opblock-summary`);
  await page.click(`${me} .try-out__btn`);
  const [apiResp] = await Promise.all([
    page.waitForResponse((r) => r.url() === origin + "/api/v2/me", { timeout: 20000 }),
    page.click(`${me} .execute`),
  ]);
  const sentAuth = await apiResp.request().headerValue("authorization");
  if (sentAuth !== "Bearer " + token) fail(`try it out sent Authorization ${JSON.stringify(sentAuth)}`);
  if (apiResp.status() !== 200) fail(`try it out: GET /api/v2/me answered ${apiResp.status()}`);
  await page.waitForSelector(`${me} .live-responses-table .response-col_status`, { timeout: 20000 });
  const shown = await page.textContent(`${me} .live-responses-table`);
  if (!shown.includes("200") || !shown.includes('"username"')) fail(`try it out shows ${JSON.stringify(shown.slice(0, 200))}`);
  console.log(`try it out: GET /api/v2/me → ${apiResp.status()} (${sentAuth.slice(0, 14)}…)`);
  await page.locator(me).scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(outDir, "docs-try-it.png"), fullPage: false });

  // 3. Nothing from elsewhere, no errors.
  for (const url of foreign) fail(`request to another origin: ${url}`);
  for (const p of problems) fail(p);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
if (failures.length) {
  console.error(`${failures.length} failed, screenshots in ${outDir}`);
  process.exit(1);
}
console.log(`docs UI check passed, screenshots in ${outDir}`);
