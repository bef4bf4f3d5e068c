import { describe, expect, it } from "vitest";
import { checkLabel, documentEntries } from "../../src/admin/trusted-documents.js";
import { loadConfig } from "../../src/platform/config.js";
import { documentIdOf, normalizeDocumentId } from "../../src/platform/document-ids.js";

const hex = documentIdOf("{ __typename }");

describe("trusted document ids", () => {
  it("reads sha256:<hex> and bare hex, in either case, as the lower-case hex; anything else is no id", () => {
    expect(hex).toMatch(/^[0-9a-f]{64}$/);
    expect(normalizeDocumentId(`sha256:${hex}`)).toBe(hex);
    expect(normalizeDocumentId(hex.toUpperCase())).toBe(hex);
    for (const bad of [`sha1:${hex}`, hex.slice(1), `${hex}0`, `sha256:${hex.slice(0, 63)}g`, "", 7, null, undefined]) {
      expect(normalizeDocumentId(bad)).toBeNull();
    }
  });
});

describe("document files", () => {
  it("reads an id-to-document map (codegen, Relay) and Apollo's manifest", () => {
    expect(documentEntries(JSON.stringify({ [`sha256:${hex}`]: "{ __typename }" }))).toEqual([
      { id: `sha256:${hex}`, text: "{ __typename }" },
    ]);
    const manifest = { format: "apollo-persisted-query-manifest", version: 1, operations: [{ id: hex, body: "{ __typename }" }] };
    expect(documentEntries(JSON.stringify(manifest))).toEqual([{ id: hex, text: "{ __typename }" }]);
  });

  it("refuses what is not such a file", () => {
    for (const content of ["not json", "[]", "{}", '"text"', JSON.stringify({ format: "apollo-persisted-query-manifest" })]) {
      expect(() => documentEntries(content), content).toThrow(/JSON|object|no documents|no operations/);
    }
  });

  it("takes short plain app names and versions only (they become metric labels)", () => {
    expect(checkLabel("app", "web")).toBe("web");
    expect(checkLabel("version", "2026.11.26+build-7")).toBe("2026.11.26+build-7");
    for (const bad of ["", "web app", "a".repeat(65), 'x"y', "ünï"])
      expect(() => checkLabel("app", bad)).toThrow(/--app must be/);
  });
});

describe("TRUSTED_DOCUMENTS", () => {
  it("is allow by default, takes sessions and all, and refuses anything else at start", () => {
    expect(loadConfig({}).trustedDocuments).toBe("allow");
    expect(loadConfig({ TRUSTED_DOCUMENTS: "sessions" }).trustedDocuments).toBe("sessions");
    expect(loadConfig({ TRUSTED_DOCUMENTS: "all" }).trustedDocuments).toBe("all");
    expect(() => loadConfig({ TRUSTED_DOCUMENTS: "none" })).toThrow(/TRUSTED_DOCUMENTS/);
  });
});
