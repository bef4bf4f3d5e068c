import { randomUUID } from "node:crypto";

/** A control of a test catalog: `label` is its ref (AC-2(1)); enhancements nest under it. */
export type TestControl = {
  id: string;
  label?: string;
  title: string;
  statement?: string;
  withdrawn?: boolean;
  controls?: TestControl[];
};
export type TestGroup = { id: string; title: string; controls: TestControl[] };

const props = (c: TestControl) => [
  ...(c.label ? [{ name: "label", value: c.label }] : []),
  { name: "sort-id", value: c.id },
  ...(c.withdrawn ? [{ name: "status", value: "withdrawn" }] : []),
];

function control(c: TestControl): Record<string, unknown> {
  return {
    id: c.id,
    class: "SP800-53",
    title: c.title,
    props: props(c),
    ...(c.statement
      ? {
          params: [{ id: `${c.id}_prm_1`, label: "organization-defined frequency" }],
          parts: [
            {
              id: `${c.id}_smt`,
              name: "statement",
              prose: c.statement,
              parts: [
                {
                  id: `${c.id}_smt.a`,
                  name: "item",
                  props: [{ name: "label", value: "a." }],
                  prose: `Review it {{ insert: param, ${c.id}_prm_1 }}.`,
                },
              ],
            },
            { id: `${c.id}_gdn`, name: "guidance", prose: "Guidance that an import leaves out." },
          ],
        }
      : {}),
    ...(c.controls?.length ? { controls: c.controls.map(control) } : {}),
  };
}

/** An OSCAL 1.1 catalog in JSON, as NIST writes them: families as groups, controls with labels. */
export function oscalCatalog(options: { title: string; version: string; oscalVersion?: string; groups: TestGroup[] }) {
  return {
    catalog: {
      uuid: randomUUID(),
      metadata: {
        title: options.title,
        "last-modified": "2026-12-03T12:00:00.000000-00:00",
        version: options.version,
        "oscal-version": options.oscalVersion ?? "1.1.2",
      },
      groups: options.groups.map((g) => ({ id: g.id, class: "family", title: g.title, controls: g.controls.map(control) })),
    },
  };
}
