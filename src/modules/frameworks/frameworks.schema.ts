import { builder } from "../../graphql/builder.js";
import { graphOnly } from "../../rest/rest-schema.js";

export const Framework = builder.prismaObject("Framework", {
  description:
    "A catalog of requirements the organization can work toward: shipped with the service (the same for every organization) or the organization's own.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Framework id (fw_...)" }),
    key: t.exposeString("key", { description: "Unique among the frameworks an organization sees, e.g. nist-sp-800-53-rev5" }),
    name: t.exposeString("name", { description: "The framework's name" }),
    version: t.exposeString("version", { description: "The catalog's version; a new version is a new framework" }),
    source: t.exposeString("source", { nullable: true, description: "Who publishes it, with a URL" }),
    license: t.exposeString("license", { nullable: true, description: "The licence of the catalog's content" }),
    custom: t.boolean({
      description: "True for the organization's own framework; false for one shipped with the service",
      select: { organizationId: true },
      resolve: (framework) => framework.organizationId !== null,
    }),
    requirementCount: t.exposeInt("requirementCount", { description: "How many requirements it has, groups included" }),
  }),
});

export const Requirement = builder.prismaObject("Requirement", {
  description: "One requirement of a framework, or a group of them (a family, a category).",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Requirement id (req_...)" }),
    frameworkId: t.exposeID("frameworkId", { description: "The framework it belongs to" }),
    ref: t.exposeString("ref", { description: "The catalog's own id: AC-2, AC-2(1), A.5.15, CC6.1, GV.OC-01" }),
    title: t.exposeString("title", { description: "A short title" }),
    description: t.exposeString("description", {
      nullable: true,
      description: "The standard's text; null in a shipped outline until an operator imports the full catalog",
    }),
    parentId: t.exposeID("parentId", { nullable: true, description: "The group or control it belongs to; null at the top" }),
    assessable: t.exposeBoolean("assessable", { description: "False for groups and families, which are not assessed" }),
    position: t.exposeInt("position", { description: "Its place in the catalog's order" }),
    framework: t.relation("framework", { ...graphOnly, description: "The framework it belongs to. Not in REST answers." }),
  }),
});
