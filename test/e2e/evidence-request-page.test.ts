import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { PutBucketCorsCommand } from "@aws-sdk/client-s3";
import { type Browser, chromium, firefox, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeedResult } from "../../src/admin/seed.js";
import { createTestApp, type TestApp } from "../helpers/test-app.js";

/**
 * The evidence request page (contract section 17) in real browsers, the same scenario in each:
 * Debian's Chromium and Debian's Firefox ESR driven by Playwright (playwright-core, no browser
 * download), the app served on a real port, its files in an S3 bucket on another origin (a real
 * S3-compatible server, the bucket's CORS rule as docs/attachments.md gives it). The recipient opens
 * the link, picks a file, writes a note and submits with the keyboard; a failed connection to the
 * store says so and lets them try again; the file is in the bucket with its SHA-256, and the team
 * accepts it. `.ci/run` installs both browsers when they are missing; elsewhere a missing
 * browser's tests are skipped with a warning.
 */
type BrowserUnderTest = {
  name: string;
  executable: string;
  /** Debian's package that installs it. */
  package: string;
  launch(executable: string): Promise<Browser>;
};

const browsers: BrowserUnderTest[] = [
  {
    name: "Chromium",
    executable: "/usr/bin/chromium",
    package: "chromium",
    launch: (executable) => chromium.launch({ executablePath: executable, args: ["--no-sandbox", "--disable-dev-shm-usage"] }),
  },
  { name: "Firefox", executable: "/usr/bin/firefox-esr", package: "firefox-esr", launch: launchFirefox },
];
const missing = new Map(
  browsers.map((b) => [b.name, existsSync(b.executable) ? null : `no ${b.executable} (apt-get install -y ${b.package})`]),
);
for (const [name, reason] of missing) {
  if (reason) console.warn(`skipping the browser test of the evidence request page in ${name}: ${reason}`);
}

type BidiSession = { send(method: string, params: unknown): Promise<unknown> };

/**
 * Debian's Firefox ESR through WebDriver BiDi: playwright-core's `moz-firefox` channel drives a
 * stock Firefox (its own `firefox` needs Playwright's patched build). Playwright 1.65 sets every new
 * context's `prefers-color-scheme` with `emulation.setMediaFeaturesOverride`, which Firefox 153 ESR
 * does not have ("unknown command"), so no page could open. That one command, when Firefox does not
 * know it, is answered as done (this test emulates no media feature); every other command, and
 * that one once Firefox knows it, goes through unchanged. Runs as root with HOME=/root as is.
 */
async function launchFirefox(executable: string): Promise<Browser> {
  const browser = await firefox.launch({ channel: "moz-firefox", executablePath: executable });
  // The browser's server side, in this process (playwright-core's in-process hook).
  const connection = (browser as unknown as { _connection?: { toImpl?: (object: unknown) => unknown } })._connection;
  const session = (connection?.toImpl?.(browser) as { _browserSession?: BidiSession } | undefined)?._browserSession;
  if (!session) {
    await browser.close();
    throw new Error("playwright-core changed: no BiDi session to answer emulation.setMediaFeaturesOverride for Firefox");
  }
  const send = session.send.bind(session);
  session.send = async (method, params) => {
    try {
      return await send(method, params);
    } catch (error) {
      if (method === "emulation.setMediaFeaturesOverride" && String(error).includes("unknown command")) return {};
      throw error;
    }
  };
  return browser;
}

const anyBrowser = browsers.some((b) => !missing.get(b.name));

describe.skipIf(!anyBrowser)("the evidence request page in a browser", () => {
  let t: TestApp;
  let org: SeedResult;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp({ attachmentStore: "s3" });
    org = await t.seedOrg();
    server = createServer((req, res) => t.app.yoga(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // The bucket's CORS rule of docs/attachments.md, the service's own origin listed for this page.
    const s3 = t.s3 as NonNullable<TestApp["s3"]>;
    await s3.client.send(
      new PutBucketCorsCommand({
        Bucket: s3.bucket,
        CORSConfiguration: {
          CORSRules: [
            {
              AllowedOrigins: [base],
              AllowedMethods: ["PUT", "GET"],
              AllowedHeaders: ["content-type", "x-amz-checksum-sha256", "if-none-match"],
              ExposeHeaders: ["ETag"],
              MaxAgeSeconds: 3600,
            },
          ],
        },
      }),
    );
  });
  afterAll(async () => {
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

  describe.each(browsers)("in $name", ({ name, executable, launch }) => {
    const skip = missing.get(name) !== null;
    let browser: Browser;

    beforeAll(async () => {
      if (!skip) browser = await launch(executable);
    });
    afterAll(async () => {
      await browser?.close();
    });

    /**
     * A page that records what the browser refused (a CSP violation, a failed script), logged as an
     * error, or got a 4xx or 5xx for. Both browsers log a CSP refusal as a console error.
     */
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

    it.skipIf(skip)(
      "takes a file and a note with the keyboard alone, stores the file with its SHA-256, and the team accepts it",
      async () => {
        const { id, url } = await createRequest();
        const { page, problems } = await openPage();
        // What the page sent: its calls to the service with the link's token, the bytes to the bucket without.
        const sent: string[] = [];
        const tokens: (string | undefined)[] = [];
        page.on("request", (request) => {
          const { origin, pathname } = new URL(request.url());
          if (request.method() === "OPTIONS" || !(pathname.startsWith("/v1/") || request.method() === "PUT")) return;
          sent.push(`${request.method()} ${origin === base ? pathname : origin}`);
          tokens.push(request.headers()["x-evidence-request-token"]);
        });
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
        expect(await page.getByRole("button", { name: "Send files" }).count()).toBe(1);

        const bytes = Buffer.from(`%PDF-1.7\n${"evidence ".repeat(2_000)}\n%%EOF\n`);
        await files.setInputFiles({ name: "soc2-2026.pdf", mimeType: "application/pdf", buffer: bytes });
        // The keyboard alone from here: focus moves from the file picker to the note, then the button.
        await files.focus();
        await page.keyboard.press("Tab");
        expect(await page.evaluate(() => document.activeElement?.id)).toBe("note");
        await page.keyboard.type("The report and its bridge letter.");
        await page.keyboard.press("Tab");
        expect(await page.evaluate(() => document.activeElement?.id)).toBe("submit");
        // The store cannot be reached at first: the page says so in its own words (not the browser's
        // "Failed to fetch" or "NetworkError when attempting to fetch resource."), keeps the form,
        // and Enter again sends.
        const bucket = new URL((t.s3 as NonNullable<TestApp["s3"]>).endpoint).origin;
        await page.route(`${bucket}/**`, (route) => route.abort());
        await page.keyboard.press("Enter");
        await page.getByText("Nothing was submitted").waitFor({ timeout: 15_000 });
        expect(await page.getByRole("status").textContent()).toBe(
          "Nothing was submitted: soc2-2026.pdf could not be sent: the connection to the store failed. You can try again.",
        );
        expect(await page.evaluate(() => document.activeElement?.id)).toBe("submit");
        await page.unroute(`${bucket}/**`);
        problems.length = 0; // the refused PUT's own report
        await page.keyboard.press("Enter");
        await page.getByText("Thank you: your files were sent").waitFor({ timeout: 15_000 });
        // The confirmation has the focus, so a screen reader reads it out.
        expect(await page.evaluate(() => document.activeElement?.id)).toBe("done");
        expect(problems).toEqual([]);
        expect(sent).toEqual([
          "POST /v1/attachment-uploads",
          `PUT ${bucket}`,
          "POST /v1/attachment-uploads",
          `PUT ${bucket}`,
          "POST /v1/evidence-requests/current/submission",
        ]);
        const token = decodeURIComponent(new URL(url).pathname.split("/").pop() ?? "");
        expect(tokens).toEqual([token, undefined, token, undefined, token]);

        // The object is in the bucket, and its bytes hash to what the evidence records.
        const evidence = await t.db.evidence.findFirstOrThrow({
          where: { evidenceRequestId: id },
          include: { attachment: true },
        });
        const sha256 = createHash("sha256").update(bytes).digest("hex");
        expect(evidence).toMatchObject({ status: "submitted", submittedByEmail: "security@vendor.example" });
        expect(evidence.attachment).toMatchObject({ name: "soc2-2026.pdf", size: bytes.length, sha256 });
        const stored = await t.attachmentStores.storeOf(evidence.attachment.store as "s3")?.digest(evidence.attachment.objectKey);
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
      },
    );

    it.skipIf(skip)("shows the 410 page for an expired link, saying only that it no longer works", async () => {
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
});
