// Opens a crl run report in a real headless Chromium (Debian's package,
// driven by playwright-core), waits for it to load, and checks what a person
// would see: every plot decoded and drawn at a real size, nothing logged to
// the console as an error, no failed request (the report must open offline).
// Writes a full-page screenshot and prints a JSON verdict; exit 1 on failure.
//
//   node report_check.mjs REPORT.html SCREENSHOT.png [MIN_IMAGES]
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";

const [report, screenshot, minImages = "6"] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const problems = [];
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on("console", (m) => { if (m.type() === "error") problems.push(`console: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url().slice(0, 80)}`));
  page.on("request", (r) => {
    if (!r.url().startsWith("file:") && !r.url().startsWith("data:")) problems.push(`network request: ${r.url()}`);
  });
  await page.goto(pathToFileURL(report).href, { waitUntil: "load" });
  const images = await page.evaluate(() =>
    Array.from(document.images).map((i) => ({ alt: i.alt, complete: i.complete, w: i.naturalWidth,
                                              h: i.naturalHeight, shown: i.getBoundingClientRect().width })));
  for (const i of images) {
    if (!i.complete || i.w < 100 || i.h < 100 || i.shown < 100) problems.push(`plot not drawn: ${JSON.stringify(i)}`);
  }
  if (images.length < Number(minImages)) problems.push(`${images.length} plots, expected ${minImages}`);
  const title = await page.title();
  const tables = await page.evaluate(() => document.querySelectorAll("table").length);
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(JSON.stringify({ title, images: images.length, tables, problems }));
} finally {
  await browser.close();
}
process.exit(problems.length ? 1 : 0);
