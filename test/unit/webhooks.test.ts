import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { filtersMatching, isKnownTypeFilter } from "../../src/modules/webhooks/webhooks.events.js";
import { refusedAddress, sign, urlProblem } from "../../src/modules/webhooks/webhooks.http.js";
import { buildMessage } from "../../src/modules/webhooks/webhooks.message.js";
import { newSecret } from "../../src/modules/webhooks/webhooks.service.js";
import { nextDelaySeconds } from "../../src/modules/webhooks/webhooks.worker.js";
import { loadConfig } from "../../src/platform/config.js";

const answer = (status: number | null, retryAfterSeconds: number | null = null) => ({
  status,
  body: null,
  retryAfterSeconds,
  durationMs: 1,
  error: null,
});

describe("webhook target rules", () => {
  it("refuses every address that is not public unicast, unless it is inside an allowed CIDR", () => {
    for (const address of [
      "127.0.0.1",
      "10.0.0.1",
      "172.16.5.4",
      "192.168.0.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "::1",
      "::",
      "fe80::1",
      "fd00::1",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:8.8.8.8",
    ]) {
      expect(refusedAddress(address, []), address).not.toBeNull();
    }
    expect(refusedAddress("169.254.169.254", [])).toMatch(/linkLocal/);
    for (const address of ["8.8.8.8", "93.184.215.14", "2606:4700:4700::1111"]) {
      expect(refusedAddress(address, []), address).toBeNull();
    }
    expect(refusedAddress("10.20.1.2", ["10.20.0.0/16"])).toBeNull();
    expect(refusedAddress("10.21.1.2", ["10.20.0.0/16"])).not.toBeNull();
    expect(refusedAddress("fd00:1::5", ["fd00:1::/64"])).toBeNull();
  });

  it("refuses at create a URL that is not http(s), carries credentials, names localhost or a refused literal; https only in production", () => {
    const open = { allowedCidrs: [], httpsOnly: false };
    expect(urlProblem("https://hooks.example.com/x", open)).toBeNull();
    expect(urlProblem("http://hooks.example.com/x", open)).toBeNull();
    for (const url of [
      "ftp://a.example/x",
      "https://u:p@a.example/x",
      "http://localhost/x",
      "http://a.LOCALHOST./x",
      "http://[::1]/x",
      "http://10.1.1.1/x",
      "not a url",
    ]) {
      expect(urlProblem(url, open), url).not.toBeNull();
    }
    const production = { allowedCidrs: ["10.1.0.0/16"], httpsOnly: true };
    expect(urlProblem("http://hooks.example.com/x", production)).toMatch(/https/);
    expect(urlProblem("https://hooks.example.com/x", production)).toBeNull();
    expect(urlProblem("http://10.1.1.1/x", production)).toBeNull();
  });
});

describe("event types", () => {
  it("knows the audit actions and families ending in .*, and nothing else", () => {
    expect(isKnownTypeFilter("comment.created")).toBe(true);
    expect(isKnownTypeFilter("policy.*")).toBe(true);
    expect(isKnownTypeFilter("webhook.test")).toBe(true);
    for (const filter of ["comment.exploded", "nothing.*", "*", ".*", "comment.", "policy.**", "__proto__"]) {
      expect(isKnownTypeFilter(filter), filter).toBe(false);
    }
    expect(filtersMatching("policy.version_approved")).toEqual(["policy.version_approved", "policy.*"]);
  });
});

describe("signing", () => {
  it("signs as the official library verifies, with the old secret beside the new during a rotation", () => {
    const [current, previous] = [newSecret(), newSecret()];
    expect(current).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = JSON.stringify({ type: "webhook.test" });
    const now = new Date();
    const { headers } = buildMessage(
      { secret: current, previousSecret: previous, previousSecretUntil: new Date(Date.now() + 1000) },
      "aud_1",
      body,
      now,
    );
    expect(headers["webhook-signature"].split(" ")).toEqual([
      sign(current, "aud_1", Math.floor(now.getTime() / 1000), body),
      sign(previous, "aud_1", Math.floor(now.getTime() / 1000), body),
    ]);
    expect(new Webhook(current).verify(body, headers)).toEqual({ type: "webhook.test" });
    expect(new Webhook(previous).verify(body, headers)).toEqual({ type: "webhook.test" });
    const later = buildMessage(
      { secret: current, previousSecret: previous, previousSecretUntil: new Date(Date.now() - 1) },
      "aud_1",
      body,
    );
    expect(later.headers["webhook-signature"].split(" ")).toHaveLength(1);
    expect(() => new Webhook(previous).verify(body, later.headers)).toThrow();
  });
});

describe("retry schedule", () => {
  const schedule = [5, 300, 1800];
  it("waits the schedule's delay with up to 10 % jitter, and stops after its last", () => {
    expect(nextDelaySeconds(schedule, 1, answer(500), () => 0)).toBe(5);
    expect(nextDelaySeconds(schedule, 1, answer(500), () => 0.999)).toBeCloseTo(5.4995);
    expect(nextDelaySeconds(schedule, 3, answer(null), () => 0.5)).toBe(1890);
    expect(nextDelaySeconds(schedule, 4, answer(500))).toBeNull();
  });
  it("honours a longer Retry-After on 429 and 503 up to an hour, and never retries a 410", () => {
    expect(nextDelaySeconds(schedule, 1, answer(429, 60), () => 0)).toBe(60);
    expect(nextDelaySeconds(schedule, 1, answer(503, 86_400), () => 0)).toBe(3600);
    expect(nextDelaySeconds(schedule, 2, answer(503, 10), () => 0)).toBe(300);
    expect(nextDelaySeconds(schedule, 1, answer(500, 60), () => 0)).toBe(5);
    expect(nextDelaySeconds(schedule, 1, answer(410))).toBeNull();
  });
});

describe("configuration", () => {
  it("has the contract's defaults and refuses a CIDR that is not one", () => {
    const config = loadConfig({});
    expect(config.webhooks).toMatchObject({
      timeoutMs: 15_000,
      retrySchedule: [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400],
      disableAfterHours: 120,
      allowedCidrs: [],
      retentionDays: 30,
      httpsOnly: false,
    });
    expect(loadConfig({ NODE_ENV: "production" }).webhooks.httpsOnly).toBe(true);
    expect(loadConfig({ WEBHOOK_ALLOWED_CIDRS: "127.0.0.1/32, fd00::/8" }).webhooks.allowedCidrs).toEqual([
      "127.0.0.1/32",
      "fd00::/8",
    ]);
    expect(() => loadConfig({ WEBHOOK_ALLOWED_CIDRS: "10.0.0.1" })).toThrow(/WEBHOOK_ALLOWED_CIDRS/);
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: "5,soon" })).toThrow(/WEBHOOK_RETRY_SCHEDULE/);
  });
});
