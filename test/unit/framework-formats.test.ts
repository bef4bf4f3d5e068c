import { describe, expect, it } from "vitest";
import { MAX_REQUIREMENTS } from "../../src/modules/frameworks/formats/catalog.js";
import { readCsv } from "../../src/modules/frameworks/formats/csv.js";
import { readOscal } from "../../src/modules/frameworks/formats/oscal.js";
import { readPlainJson } from "../../src/modules/frameworks/formats/plain-json.js";
import { BadUserInputError } from "../../src/platform/errors.js";
import { oscalCatalog } from "../helpers/oscal.js";

/** The 400 a reader throws, as [path, message]. */
async function refusal(read: () => unknown): Promise<[string, string]> {
  try {
    await read();
  } catch (error) {
    expect(error).toBeInstanceOf(BadUserInputError);
    const detail = (error as BadUserInputError).details?.[0];
    return [detail?.path ?? "", detail?.message ?? ""];
  }
  throw new Error("the document was accepted");
}

const plain = (requirements: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ key: "acme-policy", name: "Acme policy", version: "1", requirements, ...extra });

describe("plain JSON", () => {
  it("reads the framework's facts and its requirements in order, parents by ref", () => {
    const catalog = readPlainJson(
      plain(
        [
          { ref: "A", title: " Access ", assessable: false },
          { ref: "A.1", title: "Accounts", description: "Text the team bought", parent: "A" },
          { ref: "A.1.a", title: "Reviews", parent: "A.1", assessable: true },
        ],
        { source: "Acme, https://acme.example", license: "Licensed to Acme" },
      ),
    );
    expect(catalog).toEqual({
      key: "acme-policy",
      name: "Acme policy",
      version: "1",
      source: "Acme, https://acme.example",
      license: "Licensed to Acme",
      requirements: [
        { ref: "A", title: "Access", description: null, parentRef: null, assessable: false, position: 1 },
        { ref: "A.1", title: "Accounts", description: "Text the team bought", parentRef: "A", assessable: true, position: 2 },
        { ref: "A.1.a", title: "Reviews", description: null, parentRef: "A.1", assessable: true, position: 3 },
      ],
    });
  });

  it("takes a parent that comes after its child: order is the catalog's, not the tree's", () => {
    const catalog = readPlainJson(
      plain([
        { ref: "A.1", title: "Child", parent: "A" },
        { ref: "A", title: "Group" },
      ]),
    );
    expect(catalog.requirements.map((r) => [r.ref, r.parentRef])).toEqual([
      ["A.1", "A"],
      ["A", null],
    ]);
  });

  it("names the first bad place with a JSON pointer", async () => {
    const cases: [string, [string, RegExp]][] = [
      ["{", ["/", /not JSON/]],
      [
        plain([
          { ref: "A", title: "x" },
          { ref: "A", title: "y" },
        ]),
        ["/requirements/1/ref", /already the ref of \/requirements\/0/],
      ],
      [plain([{ ref: "A", title: "x", parent: "B" }]), ["/requirements/0/parent", /"B" is the ref of no requirement/]],
      [plain([{ ref: "A", title: "   " }]), ["/requirements/0/title", /empty/]],
      [plain([{ ref: "", title: "x" }]), ["/requirements/0/ref", /empty/]],
      [plain([{ ref: "A", title: "x", colour: "red" }]), ["/requirements/0", /colour/]],
      [plain([{ ref: "A", title: 7 }]), ["/requirements/0/title", /string/]],
      [plain([{ ref: "A", title: "x" }], { key: "Not A Key" }), ["/key", /lowercase letters/]],
      [plain([]), ["requirements", /at least one/]],
      [
        plain([
          { ref: "A", title: "a", parent: "C" },
          { ref: "B", title: "b", parent: "A" },
          { ref: "C", title: "c", parent: "B" },
        ]),
        ["/requirements/0/parent", /cycle: A -> C -> B -> A/],
      ],
      [plain([{ ref: "A", title: "a", parent: "A" }]), ["/requirements/0/parent", /cycle: A -> A/]],
    ];
    for (const [document, [path, message]] of cases) {
      const [gotPath, gotMessage] = await refusal(() => readPlainJson(document));
      expect(gotPath, document.slice(0, 80)).toBe(path);
      expect(gotMessage, document.slice(0, 80)).toMatch(message);
    }
  });

  it(`takes at most ${MAX_REQUIREMENTS} requirements`, async () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ ref: `R-${i}`, title: "t" }));
    expect(readPlainJson(plain(many(MAX_REQUIREMENTS))).requirements).toHaveLength(MAX_REQUIREMENTS);
    const [path, message] = await refusal(() => readPlainJson(plain(many(MAX_REQUIREMENTS + 1))));
    expect(path).toBe("/requirements");
    expect(message).toMatch(/at most 20000/);
  });
});

describe("CSV", () => {
  it("reads RFC 4180 quoting: commas, quotes and line breaks inside a quoted cell", () => {
    const catalog = readCsv(
      '\uFEFFref,title,description,parent,assessable\r\nA,"Access, all of it",,,false\r\nA.1,"The ""first""","line one\nline two",A,\r\n',
    );
    expect(catalog.requirements).toEqual([
      { ref: "A", title: "Access, all of it", description: null, parentRef: null, assessable: false, position: 1 },
      { ref: "A.1", title: 'The "first"', description: "line one\nline two", parentRef: "A", assessable: true, position: 2 },
    ]);
    expect(catalog.key).toBeUndefined();
  });

  it("takes the columns in any order, description, parent and assessable optional", () => {
    const catalog = readCsv("title,ref\nAccess,A\n");
    expect(catalog.requirements).toEqual([
      { ref: "A", title: "Access", description: null, parentRef: null, assessable: true, position: 1 },
    ]);
  });

  it("names the first bad line", async () => {
    const header = "ref,title,description,parent,assessable\n";
    const cases: [string, [string, RegExp]][] = [
      ["", ["line 1", /header line is missing/]],
      ["ref,name\nA,x\n", ["line 1", /unknown column "name"/]],
      ["ref,description\nA,x\n", ["line 1", /no title column/]],
      [`${header}A,Access,,,\nB,Other,,,maybe\n`, ["line 3 (assessable)", /true, false/]],
      [`${header}A,Access,,,\nA,Again,,,\n`, ["line 3 (ref)", /already the ref of line 2/]],
      [`${header}A,Access,,Z,\n`, ["line 2 (parent)", /"Z" is the ref of no requirement/]],
      [`${header}A,,,,\n`, ["line 2 (title)", /empty/]],
      [`${header}A,Access,,\n`, ["line 2", /columns|fields/i]],
      [`${header}A,"Access,,,\n`, ["line 2", /quote/i]],
    ];
    for (const [document, [path, message]] of cases) {
      const [gotPath, gotMessage] = await refusal(() => readCsv(document));
      expect(gotPath, JSON.stringify(document)).toBe(path);
      expect(gotMessage, JSON.stringify(document)).toMatch(message);
    }
  });
});

const sample = oscalCatalog({
  title: "Sample Security Catalog",
  version: "5.1.1",
  groups: [
    {
      id: "ac",
      title: "Access Control",
      controls: [
        {
          id: "ac-1",
          label: "AC-1",
          title: "Policy and Procedures",
          statement: "Develop an access control policy.",
          controls: [{ id: "ac-1.1", label: "AC-1(1)", title: "Automated Reviews" }],
        },
        { id: "ac-2", label: "AC-2", title: "Withdrawn control", withdrawn: true },
        { id: "ac-3", title: "No label" },
      ],
    },
  ],
});

describe("OSCAL", () => {
  it("reads groups as groups, controls and enhancements as assessable, statements as descriptions", async () => {
    const catalog = await readOscal(JSON.stringify(sample));
    expect(catalog).toMatchObject({ key: "sample-security-catalog", name: "Sample Security Catalog", version: "5.1.1" });
    expect(catalog.requirements).toEqual([
      { ref: "AC", title: "Access Control", description: null, parentRef: null, assessable: false, position: 1 },
      {
        ref: "AC-1",
        title: "Policy and Procedures",
        description: "Develop an access control policy.\n  a. Review it [organization-defined frequency].",
        parentRef: "AC",
        assessable: true,
        position: 2,
      },
      { ref: "AC-1(1)", title: "Automated Reviews", description: null, parentRef: "AC-1", assessable: true, position: 3 },
      { ref: "ac-3", title: "No label", description: null, parentRef: "AC", assessable: true, position: 4 },
    ]);
  });

  it("validates against NIST's schema and names the first bad path", async () => {
    const broken = structuredClone(sample) as { catalog: { groups: { controls: Record<string, unknown>[] }[] } };
    delete broken.catalog.groups[0]!.controls[0]!.title;
    expect(await refusal(() => readOscal(JSON.stringify(broken)))).toEqual([
      "/catalog/groups/0/controls/0",
      expect.stringMatching(/NIST's schema.*title/),
    ]);
    const extra = structuredClone(sample) as { catalog: Record<string, unknown> };
    extra.catalog.colour = "red";
    expect(await refusal(() => readOscal(JSON.stringify(extra)))).toEqual(["/catalog", expect.stringMatching(/colour/)]);
    expect((await refusal(() => readOscal(JSON.stringify({ requirements: [] }))))[0]).toBe("/");
    expect((await refusal(() => readOscal("not json")))[1]).toMatch(/not JSON/);
  });

  it("takes a catalog written against OSCAL 1.2.2, as NIST's CSF 2.0 file is", async () => {
    // The shapes of NIST_CSF_v2.0_catalog.json (1.2.x): revisions, namespaced props with remarks,
    // withdrawn entries marked with their successors, example parts, back-matter.
    const csf = {
      catalog: {
        uuid: "720a010b-253c-4a94-bb65-cb58400966f5",
        metadata: {
          title: "Electronic Version of NIST Cybersecurity Framework 2.0",
          published: "2026-05-13T12:30:00-00:00",
          "last-modified": "2026-05-11T16:01:09.00000-00:00",
          version: "1.2.0",
          "oscal-version": "v1.2.2",
          revisions: [
            {
              title: "NIST Cybersecurity Framework 2.0",
              "last-modified": "2025-05-14T12:08:20.050176-05:00",
              version: "1.0.0",
              "oscal-version": "v1.1.3",
              links: [{ href: "720a010b-253c-4a94-bb65-cb58400966f5", rel: "version-history" }],
              remarks: "Fixes for withdrawn categories and subcategories.",
            },
          ],
          props: [{ name: "framework-identifier", ns: "https://csrc.nist.gov/ns/cprt", value: "CSF" }],
          roles: [{ id: "publisher", title: "Document converter to OSCAL" }],
        },
        groups: [
          {
            id: "GV",
            class: "function",
            title: "GOVERN",
            props: [{ name: "sort-id", value: "00001" }],
            parts: [{ id: "GV_overview", name: "overview", prose: "Strategy and policy." }],
            controls: [
              {
                id: "GV.OC",
                class: "category",
                title: "Organizational Context",
                parts: [{ id: "GV.OC_statement", name: "statement", prose: "Context is understood" }],
                controls: [
                  {
                    id: "GV.OC-01",
                    class: "subcategory",
                    title: "GV.OC-01",
                    props: [
                      { name: "risk-party", ns: "https://csrc.nist.gov/ns/csf", value: "1st", remarks: "1st Party Risk" },
                      { name: "label", value: "GV.OC-01" },
                    ],
                    parts: [
                      { id: "GV.OC-01_statement", name: "statement", prose: "The mission is understood" },
                      { id: "GV.OC-01.001", name: "example", ns: "https://csrc.nist.gov/ns/csf", prose: "Share the mission" },
                    ],
                  },
                  {
                    id: "ID.BE-02",
                    class: "subcategory",
                    title: "ID.BE-02",
                    props: [{ name: "status", value: "withdrawn" }],
                    links: [{ href: "GV.OC-01", rel: "incorporated_into" }],
                  },
                ],
              },
            ],
          },
        ],
        "back-matter": {
          resources: [
            {
              uuid: "3ab41d8a-66e3-4732-ae28-07405dad5127",
              title: "CSF 2.0",
              rlinks: [{ href: "https://www.nist.gov/cyberframework" }],
            },
          ],
        },
      },
    };
    const catalog = await readOscal(JSON.stringify(csf));
    expect(catalog.version).toBe("1.2.0");
    expect(catalog.requirements.map((r) => [r.ref, r.parentRef, r.assessable, r.description])).toEqual([
      ["GV", null, false, null],
      ["GV.OC", "GV", true, "Context is understood"],
      ["GV.OC-01", "GV.OC", true, "The mission is understood"],
    ]);
  });
});
