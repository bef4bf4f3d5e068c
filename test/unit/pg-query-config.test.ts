import pg from "pg";
import { describe, expect, it } from "vitest";
import "../../src/platform/db/database.js";
import { queryConfigCopiedPlainly } from "../../src/platform/db/pg-query-config.js";

type Seen = { text?: string; values?: unknown[]; name?: string; callback?: unknown; _rowMode?: string };

describe("pg's statement configs, copied plainly (pg-query-config.ts)", () => {
  it("is installed with the database module, on the function pg's Query calls", () => {
    expect(queryConfigCopiedPlainly()).toBe(true);
  });

  it("copies a plain config as pg did: its fields, values and callback, the caller's object untouched", () => {
    const config = { name: "prisma_x", text: "SELECT $1::int", values: [1], rowMode: "array" };
    const query = new pg.Query(config) as unknown as Seen;
    expect([query.name, query.text, query.values, query._rowMode]).toEqual(["prisma_x", "SELECT $1::int", [1], "array"]);
    const callback = () => {};
    const withValues = new pg.Query({ text: "SELECT $1::int" }, [2], callback) as unknown as Seen;
    expect([withValues.values, withValues.callback]).toEqual([[2], callback]);
    const valuesAsCallback = new pg.Query({ text: "SELECT 1" }, callback as never) as unknown as Seen;
    expect(valuesAsCallback.callback).toBe(callback);
    expect(config).toEqual({ name: "prisma_x", text: "SELECT $1::int", values: [1], rowMode: "array" });
  });

  it("leaves any other config to pg's own copy (an accessor is read through its getter)", () => {
    class Statement {
      get text() {
        return "SELECT 2";
      }
    }
    expect((new pg.Query(new Statement() as never) as unknown as Seen).text).toBe("SELECT 2");
    expect((new pg.Query("SELECT 3") as unknown as Seen).text).toBe("SELECT 3");
  });
});
