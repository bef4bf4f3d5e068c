import { describe, expect, it } from "vitest";
import { shippedFrameworkId, shippedKeys, shippedRequirementId } from "../../scripts/catalogs/migration.mjs";
import { type Database, openDatabase } from "../../src/platform/db/database.js";
import { cliTestFiles } from "../helpers/cli-process.js";
import { oscalCatalog } from "../helpers/oscal.js";

/** `frameworks import`, `map` and `list` as an operator runs them, on the embedded database or PostgreSQL. */

const { shared, run, file, jsonOf } = cliTestFiles("frameworks-cli-");

/** Reads rows between CLI runs: the embedded database is opened and closed again, as one process at a time holds it. */
async function read<T>(fn: (db: Database["db"]) => Promise<T>): Promise<T> {
  if (shared().env.DATABASE_URL) return fn((await shared().open()).db);
  const database = await openDatabase({ kind: "embedded", dataDir: shared().env.DATA_DIR as string });
  try {
    return await fn(database.db);
  } finally {
    await database.close();
  }
}

describe("frameworks list", () => {
  it("lists the shipped frameworks of a fresh database", async () => {
    const { frameworks } = jsonOf(await run("frameworks", "list", "--json"));
    expect(frameworks.map((f: { key: string }) => f.key).sort()).toEqual([...shippedKeys].sort());
    expect(frameworks.find((f: { key: string }) => f.key === "nist-sp-800-53-rev5")).toMatchObject({
      id: shippedFrameworkId("nist-sp-800-53-rev5"),
      requirementCount: 1027,
      license: expect.stringMatching(/Public domain/),
    });
  });
});

describe("frameworks import", () => {
  it("fills in the descriptions of a shipped framework from NIST's OSCAL file of the same key and version, changing nothing else", async () => {
    // A piece of NIST's catalog as NIST writes it: statements, guidance, a withdrawn control.
    const nist = oscalCatalog({
      title:
        "NIST Special Publication 800-53 Revision 5: Security and Privacy Controls for Information Systems and Organizations",
      version: "5.0.1",
      groups: [
        {
          id: "ac",
          title: "Access Control",
          controls: [
            {
              id: "ac-2",
              label: "AC-2",
              title: "Account Management",
              statement: "Define and document the types of accounts allowed.",
              controls: [
                {
                  id: "ac-2.1",
                  label: "AC-2(1)",
                  title: "Automated System Account Management",
                  statement: "Support account management with automation.",
                },
              ],
            },
            { id: "ac-13", label: "AC-13", title: "Supervision and Review — Access Control", withdrawn: true },
          ],
        },
      ],
    });
    const fileName = file("NIST_SP-800-53_rev5_catalog.json", nist);
    const before = await read((db) =>
      db.requirement.findMany({
        where: { frameworkId: shippedFrameworkId("nist-sp-800-53-rev5") },
        orderBy: { position: "asc" },
      }),
    );
    const result = jsonOf(await run("frameworks", "import", fileName, "--key", "nist-sp-800-53-rev5", "--json"));
    expect(result).toEqual({
      id: shippedFrameworkId("nist-sp-800-53-rev5"),
      key: "nist-sp-800-53-rev5",
      name: "NIST SP 800-53 Rev. 5",
      version: "5.0.1",
      requirementCount: 1027,
      created: false,
      descriptionsFilled: 2,
      unmatched: [],
    });
    const after = await read((db) =>
      db.requirement.findMany({
        where: { frameworkId: shippedFrameworkId("nist-sp-800-53-rev5") },
        orderBy: { position: "asc" },
      }),
    );
    const filled: Record<string, string> = {
      "AC-2": "Define and document the types of accounts allowed.\n  a. Review it [organization-defined frequency].",
      "AC-2(1)": "Support account management with automation.\n  a. Review it [organization-defined frequency].",
    };
    expect(after).toEqual(before.map((r) => (filled[r.ref] ? { ...r, description: filled[r.ref] } : r)));
    expect(after.find((r) => r.id === shippedRequirementId("nist-sp-800-53-rev5", "AC-2"))?.description).toMatch(/^Define/);
  });

  it("creates a shipped framework from CSV, and refuses a bad file with exit 1 naming its line", async () => {
    const csv = file("acme.csv", "ref,title,description,parent,assessable\nG,Group,,,false\nG.1,Item,Text,G,\n");
    const created = jsonOf(
      await run("frameworks", "import", csv, "--key", "acme-operator", "--name", "Acme", "--version", "1", "--json"),
    );
    expect(created).toMatchObject({ key: "acme-operator", created: true, requirementCount: 2, descriptionsFilled: 1 });
    const bad = file("bad.csv", "ref,title,parent\nA,One,\nB,Two,Z\n");
    const refused = await run("frameworks", "import", bad, "--key", "acme-bad", "--name", "Bad", "--version", "1", "--json");
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toMatch(/^error: document: line 3 \(parent\): "Z" is the ref of no requirement/);
    const other = await run(
      "frameworks",
      "import",
      file("other.json", { key: "nist-csf-2.0", name: "CSF", version: "9", requirements: [{ ref: "A", title: "A" }] }),
      "--json",
    );
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/version 1\.0\.0.*--version 1\.0\.0/);
    const usage = await run("frameworks", "import", csv, "--format", "xml", "--json");
    expect(usage.code).toBe(2);
    const { frameworks } = jsonOf(await run("frameworks", "list", "--json"));
    expect(frameworks.map((f: { key: string }) => f.key)).toContain("acme-operator");
    expect(frameworks.map((f: { key: string }) => f.key)).not.toContain("acme-bad");
  });
});

describe("frameworks map", () => {
  it("imports a shipped mapping set, and names unknown refs with exit 1", async () => {
    const set = file("iso-to-soc2.json", {
      source: "iso-iec-27001-2022",
      target: "soc2-tsc-2017",
      mappings: [
        { sourceRef: "A.5.15", targetRef: "CC6.1", relationship: "intersect" },
        { sourceRef: "A.8.15", targetRef: "CC7.2", relationship: "subset" },
      ],
    });
    expect(jsonOf(await run("frameworks", "map", set, "--json"))).toEqual({
      sourceKey: "iso-iec-27001-2022",
      targetKey: "soc2-tsc-2017",
      sourceFrameworkId: shippedFrameworkId("iso-iec-27001-2022"),
      targetFrameworkId: shippedFrameworkId("soc2-tsc-2017"),
      mappingCount: 2,
    });
    const bad = file("bad-map.json", {
      source: "iso-iec-27001-2022",
      target: "soc2-tsc-2017",
      mappings: [{ sourceRef: "A.9.9", targetRef: "CC6.1", relationship: "equal" }],
    });
    const refused = await run("frameworks", "map", bad, "--json");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/\/mappings\/0\/sourceRef: iso-iec-27001-2022 has no requirement A\.9\.9/);
    const rows = await read((db) =>
      db.requirementMapping.count({
        where: { organizationId: null, source: { frameworkId: shippedFrameworkId("iso-iec-27001-2022") } },
      }),
    );
    expect(rows).toBe(2);
  });
});
