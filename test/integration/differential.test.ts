/**
 * The read path against its reference (issue 46): every read document of the test suite, the docs
 * and the client tests, and generated documents, answer the same bytes through today's path and
 * through the reference (the page selection planned for every parent), for every role and for keys
 * with single scopes. The long form (`node scripts/differential.mjs [documents]`) runs this file
 * with DIFFERENTIAL_DOCUMENTS set: that many generated documents, each with every credential.
 */
import { describe, expect, it } from "vitest";
import { collectedCases, credentialsOf, differences, generatedCase, generatedRoots, idsOf } from "../helpers/differential.js";
import { openFixture } from "../helpers/fixtures.js";
import { adopt, makeControl, makeFramework, makeTask } from "../helpers/frameworks.js";

const { t, org } = await openFixture({ organizations: 1 });
const longForm = Number(process.env.DIFFERENTIAL_DOCUMENTS ?? 0);

describe("the read path answers as its reference", () => {
  // About 1,800 requests: 15 to 25 s alone on the shared machine, more beside other suites.
  it("for the documents of the tests, the docs and the clients, and generated ones, for every credential", {
    timeout: 240_000,
  }, async () => {
    // Comments on two tasks and a vendor, by two authors, one with an attachment: nested pages with rows.
    const commentIds: string[] = [];
    for (const [i, entityId] of [org.taskIds[0], org.taskIds[1], org.vendorIds[0], org.taskIds[0]].entries()) {
      const created = await t.rest("POST", "/v1/comments", {
        key: org.apiKey,
        body: {
          content: `Differential note ${i}`,
          entityId,
          entityType: entityId?.startsWith("vnd_") ? "vendor" : "task",
          userId: org.userIds[i % 2],
          ...(i === 0 ? { attachments: [{ fileName: "a.txt", fileType: "text/plain", fileData: "YQ==" }] } : {}),
        },
      });
      expect(created.status).toBe(201);
      commentIds.push(created.body.id);
    }
    // An adopted framework whose requirements have controls, states and an applicability line.
    const framework = await makeFramework(t.db, { groups: 1, perGroup: 3 });
    await adopt(t.db, org.organizationId, framework.id);
    const done = await makeTask(t.db, org.organizationId, "done");
    await makeControl(t.db, org.organizationId, { requirementIds: framework.requirements.slice(0, 2), taskIds: [done] });
    await makeControl(t.db, org.organizationId, {
      requirementIds: framework.requirements.slice(1),
      policyIds: [org.policyIds[0] as string],
    });
    const ids = idsOf(org, commentIds[0], { id: framework.id, requirement: framework.requirements[0] as string });
    const collected = collectedCases(ids);
    // Each root field once, and the graph's screens a second time.
    const generated = Array.from({ length: generatedRoots() }, (_, seed) => generatedCase(seed, ids)).filter((c) => c !== null);
    // The generated documents reach the frameworks' roots (and through them readiness), with the framework's id.
    expect(generated.filter((c) => /\bframework(Requirements)?\(/.test(c.query)).map((c) => Object.values(c.variables))).toEqual([
      expect.arrayContaining([ids.framework]),
      expect.arrayContaining([ids.framework]),
    ]);
    const credentials = await credentialsOf(t, org);
    expect(collected.length).toBeGreaterThan(50);
    // Every document with the full key, an employee and an auditor; the generated ones also with
    // the single scopes that refuse parts of the graph's screens (the long form takes every credential).
    const few = credentials.filter((c) => ["key: every scope", "jwt: employee", "jwt: auditor"].includes(c.name));
    const a = await differences(t, collected, few);
    const b = await differences(t, generated, [
      ...few,
      ...credentials.filter((c) => /comment:read|task:read|member:read/.test(c.name)),
    ]);
    expect(
      [...a.found, ...b.found].map((d) => ({
        source: d.case.source,
        credential: d.credential,
        reference: d.reference,
        current: d.current,
      })),
    ).toEqual([]);
    // Most answers carry data: the comparison is not of refusals alone.
    expect(a.withData).toBeGreaterThan(a.answers / 2);
    expect(b.withData).toBeGreaterThan(b.answers / 4);
    expect(a.answers + b.answers).toBeGreaterThan(500);
  });
});

describe.runIf(longForm > 0)("the long form", () => {
  it(`answers ${longForm} generated documents alike, each with every credential`, { timeout: 0 }, async () => {
    const created = await t.rest("POST", "/v1/comments", {
      key: org.apiKey,
      body: { content: "Long form", entityId: org.vendorIds[0], entityType: "vendor", userId: org.userIds[2] },
    });
    const ids = idsOf(org, created.body.id);
    const credentials = await credentialsOf(t, org);
    const cases = Array.from({ length: longForm }, (_, seed) => generatedCase(seed, ids)).filter((c) => c !== null);
    const { found, answers, withData } = await differences(t, cases, credentials);
    console.log(`${answers} answers (${withData} with data), ${found.length} differences`);
    expect(
      found.map((d) => ({
        source: d.case.source,
        query: d.case.query,
        credential: d.credential,
        reference: d.reference,
        current: d.current,
      })),
    ).toEqual([]);
  });
});
