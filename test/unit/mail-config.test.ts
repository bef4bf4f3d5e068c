import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/platform/config.js";

const complete = {
  SMTP_URL: "smtp://mail.internal:587",
  MAIL_FROM: "Workspace <notify@example.com>",
  PUBLIC_URL: "https://api.example.com/",
  MAIL_UNSUBSCRIBE_SECRET: "0123456789abcdef0123456789abcdef",
};

describe("e-mail configuration", () => {
  it("is off without SMTP_URL, MAIL_FROM and PUBLIC_URL", () => {
    expect(loadConfig({}).mail).toBeUndefined();
  });

  it("reads the three together, with retry defaults, and drops a trailing slash of PUBLIC_URL", () => {
    expect(loadConfig(complete).mail).toEqual({
      smtpUrl: "smtp://mail.internal:587",
      from: "Workspace <notify@example.com>",
      publicUrl: "https://api.example.com",
      unsubscribeSecret: complete.MAIL_UNSUBSCRIBE_SECRET,
      retryLimit: 10,
      retryDelaySeconds: 30,
      retryDelayMaxSeconds: 3_600,
      pollIntervalSeconds: 2,
      worker: true,
    });
    expect(loadConfig({ ...complete, MAIL_WORKER: "false" }).mail?.worker).toBe(false);
    expect(
      loadConfig({ ...complete, SMTP_URL: "smtps://u:p@mail.example.com", MAIL_FROM: "notify@example.com" }).mail,
    ).toMatchObject({
      smtpUrl: "smtps://u:p@mail.example.com",
      from: "notify@example.com",
    });
  });

  it("refuses a partial set, naming what is set and what is missing", () => {
    const { SMTP_URL, MAIL_FROM: _, PUBLIC_URL: __, ...rest } = complete;
    expect(() => loadConfig({ ...rest, SMTP_URL })).toThrow(
      /e-mail needs SMTP_URL, MAIL_FROM and PUBLIC_URL together: SMTP_URL is set, MAIL_FROM and PUBLIC_URL are not/,
    );
    const { PUBLIC_URL: ___, ...twoOfThree } = complete;
    expect(() => loadConfig(twoOfThree)).toThrow(/SMTP_URL, MAIL_FROM are set, PUBLIC_URL is not/);
  });

  it("refuses mail without an unsubscribe secret, and values of the wrong form", () => {
    const { MAIL_UNSUBSCRIBE_SECRET: _, ...noSecret } = complete;
    expect(() => loadConfig(noSecret)).toThrow(/MAIL_UNSUBSCRIBE_SECRET/);
    expect(() => loadConfig({ ...complete, MAIL_UNSUBSCRIBE_SECRET: "short" })).toThrow(/at least 32 characters/);
    expect(() => loadConfig({ ...complete, SMTP_URL: "http://mail.internal" })).toThrow(
      /SMTP_URL: must be an smtp:\/\/ or smtps:\/\/ URL/,
    );
    expect(() => loadConfig({ ...complete, MAIL_FROM: "Workspace" })).toThrow(/MAIL_FROM: must be an address/);
    expect(() => loadConfig({ ...complete, PUBLIC_URL: "https://api.example.com/?x=1" })).toThrow(/PUBLIC_URL/);
    expect(() => loadConfig({ ...complete, MAIL_RETRY_DELAY_SECONDS: "60", MAIL_RETRY_DELAY_MAX_SECONDS: "30" })).toThrow(
      /MAIL_RETRY_DELAY_MAX_SECONDS must be at least MAIL_RETRY_DELAY_SECONDS/,
    );
    expect(() => loadConfig({ ...complete, MAIL_POLL_INTERVAL_SECONDS: "0.1" })).toThrow(/MAIL_POLL_INTERVAL_SECONDS/);
    expect(() => loadConfig({ ...complete, MAIL_WORKER: "no" })).toThrow(/MAIL_WORKER/);
  });
});
