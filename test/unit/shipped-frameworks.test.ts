import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  migrationFile,
  readShipped,
  shippedKeys,
  shippedMigrationSql,
  shippedRequirementId,
} from "../../scripts/catalogs/migration.mjs";
import { readPlainJson } from "../../src/modules/frameworks/formats/plain-json.js";

type Shipped = { key: string; requirements: { ref: string; title: string; parent: string | null; assessable: boolean }[] };
const shipped = Object.fromEntries(shippedKeys.map((key: string) => [key, readShipped(key) as Shipped]));
const assessable = (key: string) => shipped[key]!.requirements.filter((r) => r.assessable);

describe("shipped frameworks", () => {
  it("installs exactly what the data files hold: the committed migration is the script's output", () => {
    expect(readFileSync(migrationFile, "utf8")).toBe(shippedMigrationSql());
  });

  it("are plain-format documents an import would take: unique refs, every parent present, no prose", () => {
    for (const key of shippedKeys) {
      const catalog = readPlainJson(
        readFileSync(new URL(`../../src/modules/frameworks/catalogs/${key}.json`, import.meta.url), "utf8"),
      );
      expect(catalog.key).toBe(key);
      expect(catalog.requirements.every((r) => r.description === null)).toBe(true);
      expect(catalog.license).toBeTruthy();
    }
  });

  it("hold the catalogs' known shapes", () => {
    expect(assessable("nist-sp-800-53-rev5")).toHaveLength(1007);
    expect(shipped["nist-sp-800-53-rev5"]!.requirements.filter((r) => !r.assessable)).toHaveLength(20);
    expect(assessable("nist-sp-800-53-rev5-low")).toHaveLength(149);
    expect(assessable("nist-sp-800-53-rev5-moderate")).toHaveLength(287);
    expect(assessable("nist-csf-2.0")).toHaveLength(106);
    expect(shipped["nist-csf-2.0"]!.requirements.filter((r) => !r.assessable)).toHaveLength(6 + 22);
    expect(assessable("iso-iec-27001-2022")).toHaveLength(93);
    expect(assessable("soc2-tsc-2017")).toHaveLength(61);
    const ref = (key: string, r: string) => shipped[key]!.requirements.find((x) => x.ref === r);
    expect(ref("nist-sp-800-53-rev5", "AC-2(1)")).toMatchObject({ parent: "AC-2", assessable: true });
    expect(ref("nist-sp-800-53-rev5", "AC-2")).toMatchObject({ parent: "AC" });
    expect(ref("nist-csf-2.0", "GV.OC-01")).toMatchObject({ parent: "GV.OC" });
    expect(ref("nist-csf-2.0", "ID.AM-06")).toBeUndefined();
    expect(ref("iso-iec-27001-2022", "A.8.34")).toMatchObject({ parent: "A.8" });
    expect(ref("soc2-tsc-2017", "CC6.1")).toMatchObject({ parent: "CC6" });
  });

  it("derive ids from key and ref, so every database holds the same ones", () => {
    expect(shippedRequirementId("nist-sp-800-53-rev5", "AC-2")).toBe(shippedRequirementId("nist-sp-800-53-rev5", "AC-2"));
    expect(shippedRequirementId("nist-sp-800-53-rev5", "AC-2")).not.toBe(shippedRequirementId("nist-sp-800-53-rev5-low", "AC-2"));
    expect(shippedRequirementId("nist-sp-800-53-rev5", "AC-2")).toMatch(/^req_[0-9a-f]{32}$/);
  });
});
