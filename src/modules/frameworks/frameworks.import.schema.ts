import { authorize } from "../../auth/actor.js";
import { builder } from "../../graphql/builder.js";
import { limited } from "../../platform/limits.js";
import { MAX_REQUIREMENTS } from "./formats/catalog.js";
import { type FRAMEWORK_FORMATS, importLimits, MAX_MAPPINGS, type MappingSetResult } from "./frameworks.import.js";

export const FrameworkFormat = builder.enumType("FrameworkFormat", {
  description: "The format of a framework document to import",
  values: {
    oscal: {
      description:
        "An OSCAL catalog in JSON (NIST's format; a resolved profile is a catalog), validated against NIST's OSCAL catalog JSON schema",
    },
    json: {
      description:
        "The plain format: {key, name, version, source, license, requirements: [{ref, title, description, parent, assessable}]}",
    },
    csv: { description: "The plain format in CSV (RFC 4180) with the header ref,title,description,parent,assessable" },
  } satisfies Record<(typeof FRAMEWORK_FORMATS)[number], unknown>,
});

builder.mutationField("importFramework", (t) =>
  t.prismaField({
    type: "Framework",
    description: `Import a framework of the organization's own (a custom framework only it sees), all or nothing: a catalog of requirements in OSCAL, or the plain format in JSON or CSV. At most ${MAX_REQUIREMENTS} requirements; refs unique, every parent a ref of the document, no cycle, titles not empty. A bad document is a 400 naming the first bad JSON pointer or CSV line. The key must be unique among the frameworks the organization sees: a shipped framework's key or one of its own is a 409. Needs \`framework:manage\`.`,
    args: {
      format: t.arg({ type: FrameworkFormat, required: true, description: "The document's format" }),
      document: t.arg.string({ required: true, ...limited("The document, as text", importLimits.document) }),
      key: t.arg.string(
        limited(
          "The framework's key; default: the document's (OSCAL: made from the metadata's title). Required for CSV",
          importLimits.key,
        ),
      ),
      name: t.arg.string(limited("The framework's name; default: the document's. Required for CSV", importLimits.name)),
      version: t.arg.string(limited("The framework's version; default: the document's. Required for CSV", importLimits.version)),
      source: t.arg.string(limited("Who publishes it, with a URL; default: the document's", importLimits.source)),
      license: t.arg.string(limited("The licence of its content; default: the document's", importLimits.license)),
    },
    resolve: (query, _root, args, ctx) =>
      ctx.services.frameworkImports.importFramework(authorize(ctx, "framework:manage"), args, query),
  }),
);

const RequirementMappingSet = builder.objectRef<MappingSetResult>("RequirementMappingSet").implement({
  description: "A mapping set as imported: which frameworks it maps, and how many mappings it holds.",
  fields: (t) => ({
    sourceKey: t.exposeString("sourceKey", { description: "The key of the framework the mappings start from" }),
    targetKey: t.exposeString("targetKey", { description: "The key of the framework the mappings lead to" }),
    sourceFrameworkId: t.exposeID("sourceFrameworkId", { description: "The source framework's id" }),
    targetFrameworkId: t.exposeID("targetFrameworkId", { description: "The target framework's id" }),
    mappingCount: t.exposeInt("mappingCount", {
      description: "How many mappings this import wrote (created, or replaced for a pair already mapped)",
    }),
  }),
});

builder.mutationField("importRequirementMapping", (t) =>
  t.field({
    type: RequirementMappingSet,
    description: `Import a mapping set of the organization's own, all or nothing: a JSON document {source, target, mappings: [{sourceRef, targetRef, relationship}]} with the frameworks' keys (shipped or the organization's own) and relationship equal, subset, superset or intersect (NIST's OLIR relationships). At least one of the two frameworks must be the organization's own: a set between two shipped frameworks is the operator's (403). Unknown refs are a 400 naming each. A pair imported again takes the new relationship. At most ${MAX_MAPPINGS} mappings. Needs \`framework:manage\`.`,
    args: {
      document: t.arg.string({ required: true, ...limited("The mapping set, as JSON text", importLimits.document) }),
    },
    resolve: (_root, args, ctx) =>
      ctx.services.frameworkImports.importMappingSet(authorize(ctx, "framework:manage"), args.document),
  }),
);
