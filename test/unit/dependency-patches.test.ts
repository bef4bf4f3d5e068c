import { spawnSync } from "node:child_process";
import path from "node:path";
import { execute } from "@graphql-tools/executor";
import { fakePromise, handleMaybePromise, iterateAsync } from "@whatwg-node/promise-helpers";
import { buildSchema, type GraphQLResolveInfo, parse } from "graphql";
import { describe, expect, it } from "vitest";

type PatchResult = { patch: string; file: string; state: "applied" | "unpatched" | "changed" | "missing" };
const script = "../../scripts/patch-dependencies.mjs";
const { fileState, patchDependencies } = (await import(script)) as {
  fileState: (text: string, replacements: [string, string][]) => PatchResult["state"];
  patchDependencies: (options: { apply: boolean }) => PatchResult[];
};

const root = path.resolve(import.meta.dirname, "../..");

// scripts/patch-dependencies.mjs (postinstall): docs/performance.md, "Patched packages".
describe("patched packages", () => {
  it("every patch is in effect in the installed packages (an upgrade that changed a file fails here)", () => {
    const off = patchDependencies({ apply: false }).filter((r) => r.state !== "applied");
    expect(off).toEqual([]);
  });

  it("patches a file only when every text it replaces is there once, and only once", () => {
    const replacements: [string, string][] = [
      ["o={}", "o=new Map"],
      ["o[a]=S", "o.set(a,S)"],
    ];
    expect(fileState("x;o={};y;o[a]=S;", replacements)).toBe("unpatched");
    expect(fileState("x;o=new Map;y;o.set(a,S);", replacements)).toBe("applied");
    // A new version that kept one text and not the other is left alone, not half-patched.
    expect(fileState("x;o={};y;o[a]=T;", replacements)).toBe("changed");
    expect(fileState("o={};o={};o[a]=S", replacements)).toBe("changed");
  });

  it("Prisma's parameter graph no longer holds 15 MB of holes: constructing the client grows the heap by a few MB", () => {
    // A child process with --expose-gc: the heap in use after a full collection, before and after a
    // PrismaClient is constructed (its constructor reads the graph; no connection is made).
    const source = `
      import v8 from "node:v8";
      import pg from "pg";
      import { PrismaPg } from "@prisma/adapter-pg";
      import { PrismaClient } from "./src/generated/prisma/client.ts";
      const used = () => { globalThis.gc(); globalThis.gc(); return v8.getHeapStatistics().used_heap_size; };
      const pool = new pg.Pool({ connectionString: "postgresql://nobody@127.0.0.1:1/none" });
      const adapter = new PrismaPg(pool);
      const before = used();
      const client = new PrismaClient({ adapter });
      const after = used();
      process.stdout.write(JSON.stringify({ grewMb: (after - before) / 1048576, alive: typeof client.$connect }));
    `;
    const child = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", "--input-type=module", "-e", source], {
      cwd: root,
      encoding: "utf8",
    });
    expect(child.stderr).toBe("");
    const { grewMb, alive } = JSON.parse(child.stdout);
    expect(alive).toBe("function");
    // Unpatched: 16 to 17 MB here. Patched: the graph's Maps and the rest of the client, 2 to 3 MB.
    expect(grewMb).toBeLessThan(8);
  });

  it("the executor's shared resolve info: each item's info is whole, with its own path; argumentless fields get their own empty object", async () => {
    const schema = buildSchema(`
      type Query { items(n: Int!): [Item!]! }
      type Item { name: String! label(prefix: String = "#"): String! }
    `);
    const seen: { info: GraphQLResolveInfo; args: Record<string, unknown> }[] = [];
    const labels: unknown[] = [];
    const root = {
      items: ({ n }: { n: number }) => Array.from({ length: n }, (_, i) => ({ i })),
    };
    const resolvers = schema.getType("Item") as unknown as {
      getFields(): Record<string, { resolve?: (...args: unknown[]) => unknown }>;
    };
    const fields = resolvers.getFields();
    (fields.name as { resolve?: unknown }).resolve = (
      item: { i: number },
      args: Record<string, unknown>,
      _ctx: unknown,
      info: GraphQLResolveInfo,
    ) => {
      seen.push({ info, args });
      return `item ${item.i}`;
    };
    (fields.label as { resolve?: unknown }).resolve = (item: { i: number }, args: { prefix: string }) => {
      labels.push(args);
      return `${args.prefix}${item.i}`;
    };
    const document = parse("query Q($n: Int!) { items(n: $n) { ...F label } } fragment F on Item { name }");
    const signal = new AbortController().signal;
    const result = await execute({ schema, document, rootValue: root, variableValues: { n: 3 }, contextValue: {}, signal });
    expect(result).toEqual({
      data: { items: [0, 1, 2].map((i) => ({ name: `item ${i}`, label: `#${i}` })) },
    });
    expect(seen).toHaveLength(3);
    seen.forEach(({ info, args }, i) => {
      expect(info.fieldName).toBe("name");
      expect(info.fieldNodes[0]?.name.value).toBe("name");
      expect(String(info.returnType)).toBe("String!");
      expect(info.parentType.name).toBe("Item");
      expect(info.path).toEqual({
        prev: { prev: { prev: undefined, key: "items", typename: "Query" }, key: i, typename: undefined },
        key: "name",
        typename: "Item",
      });
      expect(info.schema).toBe(schema);
      expect(Object.keys(info.fragments)).toEqual(["F"]);
      expect(info.rootValue).toBe(root);
      expect(info.operation.name?.value).toBe("Q");
      expect(info.variableValues).toEqual({ n: 3 });
      expect((info as unknown as { getAbortSignal(): AbortSignal }).getAbortSignal()).toBe(signal);
      expect(typeof (info as unknown as { getAsyncHelpers(): { promiseAll: unknown } }).getAsyncHelpers().promiseAll).toBe(
        "function",
      );
      // A resolver may keep or change its arguments: every execution of a field gets an object of its own.
      expect(args).toEqual({});
      if (i > 0) expect(args).not.toBe(seen[i - 1]?.args);
    });
    // A field that defines arguments still gets its default.
    expect(labels).toEqual([{ prefix: "#" }, { prefix: "#" }, { prefix: "#" }]);
  });

  it("the executor's result objects inherit no key: aliases such as __proto__ and constructor are the answer's own, in order", async () => {
    const schema = buildSchema("type Query { item: Item } type Item { name: String }");
    const document = parse("{ item { __proto__: name constructor: name toString: name hasOwnProperty: name name } }");
    const result = (await execute({ schema, document, rootValue: { item: { name: "n" } } })) as { data: { item: object } };
    const item = result.data.item;
    expect(Object.keys(item)).toEqual(["__proto__", "constructor", "toString", "hasOwnProperty", "name"]);
    expect(JSON.stringify(result)).toBe(
      '{"data":{"item":{"__proto__":"n","constructor":"n","toString":"n","hasOwnProperty":"n","name":"n"}}}',
    );
    // Nothing up the prototype chain: Object.prototype's keys are not there to be read by mistake.
    expect("valueOf" in item).toBe(false);
    expect("isPrototypeOf" in item).toBe(false);
  });

  describe("promise-helpers: values at hand go straight through, everything else as before", () => {
    const boom = new Error("boom");
    const thrower = () => {
      throw boom;
    };
    // Called as the packages call it, also in the ways its typings leave out (no success step).
    const handle = handleMaybePromise as unknown as (...steps: (((value?: unknown) => unknown) | undefined)[]) => unknown;

    it("handleMaybePromise answers a value at hand at once, and throws at once", () => {
      expect(
        handleMaybePromise(
          () => 2,
          (v) => v * 10,
        ),
      ).toBe(20);
      expect(handle(() => 2)).toBe(2);
      expect(
        handleMaybePromise(
          () => 0,
          (v) => v,
        ),
      ).toBe(0);
      expect(() => handleMaybePromise(thrower, (v) => v)).toThrow(boom);
      expect(
        handleMaybePromise(
          thrower,
          (v) => v,
          (e) => `caught ${(e as Error).message}`,
        ),
      ).toBe("caught boom");
      expect(() => handleMaybePromise(() => 1, thrower)).toThrow(boom);
      expect(() => handle(thrower, undefined, thrower)).toThrow(boom);
      // A fake promise (what other helpers hand on) is a value at hand too.
      expect(
        handleMaybePromise(
          () => fakePromise(3),
          (v) => v + 1,
        ),
      ).toBe(4);
      const order: string[] = [];
      expect(
        handle(
          () => order.push("input"),
          () => order.push("output"),
          undefined,
          () => order.push("finally"),
        ),
      ).toBe(2);
      expect(order).toEqual(["input", "output", "finally"]);
    });

    it("handleMaybePromise answers a promise for a promise, and settles it as before", async () => {
      const doubled = handleMaybePromise(
        () => Promise.resolve(2),
        (v) => v * 2,
      );
      expect(doubled).toBeInstanceOf(Promise);
      await expect(doubled).resolves.toBe(4);
      await expect(
        handleMaybePromise(
          () => 1,
          (v) => Promise.resolve(v + 1),
        ),
      ).resolves.toBe(2);
      await expect(
        handleMaybePromise(
          () => Promise.reject(boom),
          (v) => v,
        ),
      ).rejects.toBe(boom);
      await expect(
        handleMaybePromise(
          () => Promise.reject(boom),
          (v) => v,
          () => "recovered",
        ),
      ).resolves.toBe("recovered");
      await expect(handleMaybePromise(() => Promise.resolve(1), thrower)).rejects.toBe(boom);
    });

    it("iterateAsync loops over callbacks that answer at once, waits for one that answers a promise, stops early when asked", async () => {
      const seen: [string, number][] = [];
      const results: string[] = [];
      expect(
        iterateAsync(
          ["a", "b", "c"],
          (v, _endEarly, i) => {
            seen.push([v, i]);
            return v.toUpperCase();
          },
          results,
        ),
      ).toBeUndefined();
      expect(seen).toEqual([
        ["a", 0],
        ["b", 1],
        ["c", 2],
      ]);
      expect(results).toEqual(["A", "B", "C"]);

      const stopped: string[] = [];
      iterateAsync(["a", "b", "c"], (v, endEarly) => {
        stopped.push(v);
        if (v === "b") endEarly();
      });
      expect(stopped).toEqual(["a", "b"]);

      const mixed: string[] = [];
      const pending = iterateAsync(
        ["a", "b", "c"],
        (v) => (v === "b" ? new Promise<string>((resolve) => setTimeout(() => resolve("B"), 5)) : v.toUpperCase()),
        mixed,
      );
      expect(pending).toBeInstanceOf(Promise);
      expect(mixed).toEqual(["A"]);
      await pending;
      expect(mixed).toEqual(["A", "B", "C"]);

      expect(() => iterateAsync(["a"], thrower)).toThrow(boom);
      await expect(iterateAsync(["a", "b"], (v) => (v === "b" ? Promise.reject(boom) : undefined))).rejects.toBe(boom);
      expect(iterateAsync([], thrower)).toBeUndefined();
    });
  });
});
