import { builder } from "../../graphql/builder.js";

export const Control = builder.prismaObject("Control", {
  description:
    "One of the organization's own controls: what it does to meet requirements, backed by policies, tasks and evidence.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Control id (ctl_...)" }),
    code: t.exposeString("code", { description: "Unique in the organization, e.g. AC-01" }),
    name: t.exposeString("name", { description: "The control's name" }),
    description: t.exposeString("description", { nullable: true, description: "Longer text; null when not set" }),
    ownerId: t.exposeID("ownerId", { nullable: true, description: "Member id of the control's owner; null when none" }),
    evidenceEveryDays: t.exposeInt("evidenceEveryDays", {
      nullable: true,
      description: "How old, in days, the newest accepted evidence may be; null when no evidence is required",
    }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When the control was created" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime", description: "When the control last changed" }),
  }),
});
