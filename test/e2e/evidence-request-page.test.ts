import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

/**
 * The evidence request page (contract section 17) in a real browser: Debian's Chromium driven by
 * Playwright (playwright-core, no browser download), one browser for the file, the app served on a
 * real port. The recipient opens the link, picks a file, writes a note and submits with the
 * keyboard; the file is in the store with its SHA-256, and the team accepts it. `.ci/run` installs
 * chromium when it is missing; elsewhere the file is skipped with a warning.
 */
const CHROMIUM = "/usr/bin/chromium";
const missing = existsSync(CHROMIUM) ? null : `no ${CHROMIUM} (apt-get install -y chromium)`;
if (missing) console.warn(`skipping the browser test of the evidence request page: ${missing}`);

describe.skipIf(missing)("the evidence request page in Chromium", () => {
  let t: TestApp;
  let org: SeedResult;
  let server: Server;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    t = await createTestApp();
    org = await t.seedOrg();
    server = createServer((req, res) => t.app.yoga(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    await t?.close();
  });

  /** A request made over the real port, so that its link points at it. */
  async function createRequest(): Promise<{ id: string; url: string }> {
    const response = await fetch(`${base}/v1/evidence-requests`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": org.apiKey },
      body: JSON.stringify({
        vendorId: org.vendorIds[0],
        title: "SOC 2 Type II report",
        instructions: "The 2026 report and its bridge letter.",
        recipientEmail: "security@vendor.example",
        dueAt: new Date(Date.now() + 10 * 86_400_000).toISOString(),
      }),
    });
    const body = (await response.json()) as { id: string; url: string };
    expect(response.status).toBe(201);
    return body;
  }

  /** A page that records what the browser refused (a CSP violation, a failed script) or logged as an error. */
  async function openPage(): Promise<{ page: Page; problems: string[] }> {
    const page = await browser.newPage();
    const problems: string[] = [];
    // A refused resource is reported by its response below (the browser's own favicon.ico request aside).
    page.on("console", (message) => {
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));
    page.on("response", (response) => {
      const { pathname } = new URL(response.url());
      if (response.status() >= 400 && pathname !== "/favicon.ico" && !pathname.startsWith("/requests/"))
        problems.push(`${response.status()} ${pathname}`);
    });
    return { page, problems };
  }

  it("takes a file and a note with the keyboard alone, stores the file with its SHA-256, and the team accepts it", async () => {
    const { id, url } = await createRequest();
    const { page, problems } = await openPage();
    const response = await page.goto(url);
    expect(response?.status()).toBe(200);
    const organization = await t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
    expect(await page.locator("h1").textContent()).toBe("SOC 2 Type II report");
    expect(await page.locator("main").textContent()).toContain(`${organization.name} asks you for evidence`);
    expect(await page.locator("main").textContent()).toContain("The 2026 report and its bridge letter.");
    // Every control has its label, as a screen reader announces it.
    const files = page.getByLabel("Files");
    const note = page.getByLabel(/^Note for/);
    expect(await files.count()).toBe(1);
    expect(await note.count()).toBe(1);

    const bytes = Buffer.from(`%PDF-1.7\n${"evidence ".repeat(2_000)}\n%%EOF\n`);
    await files.setInputFiles({ name: "soc2-2026.pdf", mimeType: "application/pdf", buffer: bytes });
    // The keyboard alone from here: focus moves from the file picker to the note, then the button.
    await files.focus();
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("note");
    await page.keyboard.type("The report and its bridge letter.");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("submit");
    await page.keyboard.press("Enter");
    await page.getByText("Thank you: your files were sent").waitFor({ timeout: 15_000 });
    expect(problems).toEqual([]);

    // The object is in the store, and its bytes hash to what the evidence records.
    const evidence = await t.db.evidence.findFirstOrThrow({ where: { evidenceRequestId: id }, include: { attachment: true } });
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    expect(evidence).toMatchObject({ status: "submitted", submittedByEmail: "security@vendor.example" });
    expect(evidence.attachment).toMatchObject({ name: "soc2-2026.pdf", size: bytes.length, sha256 });
    const stored = await t.attachmentStores
      .storeOf(evidence.attachment.store as "filesystem")
      ?.digest(evidence.attachment.objectKey);
    expect(stored).toEqual({ size: bytes.length, sha256 });
    const request = await t.db.evidenceRequest.findUniqueOrThrow({ where: { id } });
    expect(request).toMatchObject({ status: "submitted", note: "The report and its bridge letter." });

    // Opened again, the page says the files await review and offers no form.
    await page.reload();
    expect(await page.locator("main").textContent()).toContain("Your files await review");
    expect(await page.locator("form").count()).toBe(0);

    // The team accepts the request through the API: its evidence is accepted and the link is dead.
    const accepted = await fetch(`${base}/v1/evidence-requests/${id}/accept`, {
      method: "POST",
      headers: { "x-api-key": org.apiKey },
    });
    expect(accepted.status).toBe(200);
    expect((await t.db.evidence.findUniqueOrThrow({ where: { id: evidence.id } })).status).toBe("accepted");
    const gone = await page.goto(url);
    expect(gone?.status()).toBe(410);
    await page.close();
  });

  it("shows the 410 page for an expired link, saying only that it no longer works", async () => {
    const { id, url } = await createRequest();
    await t.db.evidenceRequest.update({ where: { id }, data: { expiresAt: new Date(Date.now() - 1_000) } });
    const { page, problems } = await openPage();
    const response = await page.goto(url);
    expect(response?.status()).toBe(410);
    expect(await page.locator("h1").textContent()).toBe("This link no longer works");
    expect(await page.locator("body").textContent()).not.toContain("SOC 2");
    expect(problems).toEqual([]);
    await page.close();
  });
});
