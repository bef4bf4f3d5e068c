import { EvidenceStatus as EvidenceStatusValues } from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";

export const EvidenceStatus = builder.enumType(EvidenceStatusValues, {
  name: "EvidenceStatus",
  description: "Where an evidence item stands in its review",
  values: {
    submitted: { description: "Waiting for review: sent by an outside party or by a control's owner without `control:update`" },
    accepted: { description: "Counts toward readiness" },
    rejected: { description: "Refused by a reviewer, with a reason" },
  },
});

export const Evidence = builder.prismaObject("Evidence", {
  description: "A file that shows a control works, or a document about a vendor.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "Evidence id (evd_...)" }),
    controlId: t.exposeID("controlId", { nullable: true, description: "The control it is evidence of; null for a vendor's" }),
    vendorId: t.exposeID("vendorId", { nullable: true, description: "The vendor it is about; null for a control's" }),
    description: t.exposeString("description", { nullable: true, description: "What the file shows; null when not set" }),
    collectedAt: t.expose("collectedAt", { type: "DateTime", description: "When the evidence was produced" }),
    validUntil: t.expose("validUntil", {
      type: "DateTime",
      nullable: true,
      description:
        "Until when it counts: given, or collectedAt plus the control's evidenceEveryDays; null when it does not expire",
    }),
    status: t.expose("status", { type: EvidenceStatus, description: "Where it stands in its review" }),
    submittedById: t.exposeID("submittedById", {
      nullable: true,
      description: "Member id of who added it; null for an API key or an outside party",
    }),
    submittedByEmail: t.exposeString("submittedByEmail", {
      nullable: true,
      description: "The outside party's e-mail, when it came through an evidence request",
    }),
    reviewedById: t.exposeID("reviewedById", { nullable: true, description: "Member id of who accepted or rejected it" }),
    reviewedAt: t.expose("reviewedAt", { type: "DateTime", nullable: true, description: "When it was accepted or rejected" }),
    rejectionReason: t.exposeString("rejectionReason", { nullable: true, description: "Why it was rejected; null otherwise" }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When it was added" }),
  }),
});
