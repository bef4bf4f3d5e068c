import { authenticated, authorize } from "../../auth/actor.js";
import { EvidenceStatus as EvidenceStatusValues } from "../../generated/prisma/enums.js";
import { builder } from "../../graphql/builder.js";
import { anyOf, dateBounds, defineConnection, itemsQuery, listArgs } from "../../graphql/page.schema.js";
import { commonLimits, limited } from "../../platform/limits.js";
import { graphOnly } from "../../rest/rest-schema.js";
import { uploadLimits } from "../comments/attachments.service.js";
import { AttachmentDownloadUrl, originOf } from "../comments/comments.schema.js";
import { controlEvidenceList, type DeletedEvidence, evidenceLimits } from "./evidence.service.js";

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
    attachment: t.relation("attachment", {
      description:
        "The file: name, media type, size and SHA-256 (the evidence's audit events record it too). Its bytes: downloadUrl, or GET /v1/attachments/{id} and /v1/attachments/{id}/download-url with a credential that reads the evidence",
    }),
    downloadUrl: t.field({
      type: AttachmentDownloadUrl,
      ...graphOnly,
      description:
        "A credential-free URL for the file's bytes, valid a few minutes (section 15), generated on demand. Not in REST answers: GET /v1/attachments/{id}/download-url",
      select: { attachment: { select: { name: true, type: true, store: true, objectKey: true } } },
      resolve: (evidence, _args, ctx) => ctx.services.evidence.downloadUrl(evidence.attachment, originOf(ctx)),
    }),
    control: t.relation("control", {
      nullable: true,
      ...graphOnly,
      description: "The control it is evidence of; null for a vendor's. Not in REST answers",
    }),
    submittedBy: t.relation("submittedBy", {
      nullable: true,
      ...graphOnly,
      description:
        "The member who added it; null for an API key or an outside party. Any credential reads its id and name; its other fields need `member:read`",
    }),
    reviewedBy: t.relation("reviewedBy", {
      nullable: true,
      ...graphOnly,
      description:
        "The member who accepted or rejected it; null before that. Any credential reads its id and name; its other fields need `member:read`",
    }),
  }),
});

const EvidenceConnection = defineConnection("Evidence", Evidence);

const evidenceListArgs = listArgs("Evidence", controlEvidenceList, {
  description: "Which evidence a list shows.",
  fields: (t) => ({
    status: t.field({
      type: [EvidenceStatus],
      required: { list: false, items: true },
      ...anyOf("Only evidence in these statuses"),
    }),
    validAfter: t.field({
      type: "DateTime",
      description: "Only evidence valid until strictly after this instant (evidence that does not expire never matches)",
    }),
    validBefore: t.field({
      type: "DateTime",
      description: "Only evidence valid until strictly before this instant (evidence that does not expire never matches)",
    }),
    ...dateBounds(t, "evidence", false),
  }),
});

builder.prismaObjectField("Control", "evidence", (t) =>
  t.field({
    type: EvidenceConnection,
    ...graphOnly,
    description: "The control's evidence, filtered and sorted (default newest first), as the `controlEvidence` query",
    args: evidenceListArgs,
    resolve: (control, args, ctx, info) =>
      ctx.loaders.evidence.controlPages.load({ ...args, parent: [control.id], query: itemsQuery(ctx, info, "Evidence") }),
  }),
);

builder.prismaObjectField("Vendor", "evidence", (t) =>
  t.field({
    type: EvidenceConnection,
    ...graphOnly,
    description:
      "Evidence about the vendor (a SOC 2 report, an insurance certificate), filtered and sorted (default newest first), as the `vendorEvidence` query",
    args: evidenceListArgs,
    resolve: (vendor, args, ctx, info) =>
      ctx.loaders.evidence.vendorPages.load({ ...args, parent: [vendor.id], query: itemsQuery(ctx, info, "Evidence") }),
  }),
);

const readers =
  "A control's evidence needs `control:read`, or owning the control (anyone else: 404); a vendor's needs `vendor:read`.";

builder.queryField("evidence", (t) =>
  t.prismaField({
    type: "Evidence",
    nullable: true,
    description: `Get an evidence item by id. ${readers} Over GraphQL a missing or refused item is null with its error; REST answers 404 or 403.`,
    args: { id: t.arg.id({ required: true, description: "The evidence id" }) },
    resolve: (query, _root, args, ctx) => ctx.services.evidence.get(authenticated(ctx), args.id, query),
  }),
);

builder.queryField("controlEvidence", (t) =>
  t.field({
    type: EvidenceConnection,
    nullable: true,
    description: `A control's evidence, filtered and sorted (default newest first), with its totalCount. Needs \`control:read\`, or owning the control (anyone else: 404). Over GraphQL a refused list is null with its error; REST answers 403 or 404.`,
    args: { controlId: t.arg.id({ required: true, description: "The control id" }), ...evidenceListArgs },
    resolve: (_root, { controlId, ...args }, ctx, info) =>
      ctx.services.evidence.listForControl(authenticated(ctx), controlId, args, itemsQuery(ctx, info, "Evidence")),
  }),
);

builder.queryField("vendorEvidence", (t) =>
  t.field({
    type: EvidenceConnection,
    nullable: true,
    description:
      "Evidence about a vendor, filtered and sorted (default newest first), with its totalCount. Needs `vendor:read`. Over GraphQL a refused list is null with its error; REST answers 403 or 404.",
    args: { vendorId: t.arg.id({ required: true, description: "The vendor id" }), ...evidenceListArgs },
    resolve: (_root, { vendorId, ...args }, ctx, info) =>
      ctx.services.evidence.listForVendor(authorize(ctx, "vendor:read"), vendorId, args, itemsQuery(ctx, info, "Evidence")),
  }),
);

const addArgs = (t: Parameters<Parameters<typeof builder.mutationField>[1]>[0]) => ({
  uploadId: t.arg.id({
    required: true,
    ...limited(
      "An upload of this caller (createAttachmentUpload), not expired, not attached yet, whose bytes the store holds exactly as declared",
      uploadLimits.uploadId,
    ),
  }),
  description: t.arg.string(limited("What the file shows", evidenceLimits.description)),
  collectedAt: t.arg({ type: "DateTime", description: "When the evidence was produced; default now; never in the future (400)" }),
  validUntil: t.arg({
    type: "DateTime",
    description:
      "Until when it counts (a certificate's expiry); default collectedAt plus the control's evidenceEveryDays, else none",
  }),
});

builder.mutationField("addEvidence", (t) =>
  t.prismaField({
    type: "Evidence",
    description:
      "Add a file to a control as evidence, from an upload (section 15: the same checks of size and SHA-256). With `control:update` it is accepted at once; the control's owner without it adds evidence that is submitted, for review. Anyone else: 404 when the control is out of their reach, else 403. The audit event records the file's SHA-256.",
    args: { controlId: t.arg.id({ required: true, description: "The control id" }), ...addArgs(t) },
    resolve: (query, _root, { controlId, ...args }, ctx) =>
      ctx.services.evidence.addToControl(authenticated(ctx), controlId, args, query),
  }),
);

builder.mutationField("addVendorEvidence", (t) =>
  t.prismaField({
    type: "Evidence",
    description:
      "Add a file about a vendor as evidence (a SOC 2 report, an insurance certificate), from an upload; accepted at once. The audit event records the file's SHA-256. Needs `vendor:update`.",
    args: { vendorId: t.arg.id({ required: true, description: "The vendor id" }), ...addArgs(t) },
    resolve: (query, _root, { vendorId, ...args }, ctx) =>
      ctx.services.evidence.addToVendor(authorize(ctx, "vendor:update"), vendorId, args, query),
  }),
);

const deciders =
  "Needs `control:update` (a vendor's: `vendor:update`). Only submitted evidence (409 otherwise), never by the member who submitted it (403).";

builder.mutationField("acceptEvidence", (t) =>
  t.prismaField({
    type: "Evidence",
    description: `Accept submitted evidence: it counts toward readiness from now. ${deciders}`,
    args: { id: t.arg.id({ required: true, description: "The evidence id" }) },
    resolve: (query, _root, args, ctx) => ctx.services.evidence.accept(authenticated(ctx), args.id, query),
  }),
);

builder.mutationField("rejectEvidence", (t) =>
  t.prismaField({
    type: "Evidence",
    description: `Reject submitted evidence, with the reason. ${deciders}`,
    args: {
      id: t.arg.id({ required: true, description: "The evidence id" }),
      reason: t.arg.string({ required: true, ...limited("Why it is rejected", evidenceLimits.rejectionReason) }),
    },
    resolve: (query, _root, args, ctx) => ctx.services.evidence.reject(authenticated(ctx), args.id, args.reason, query),
  }),
);

const DeleteEvidencePayload = builder.objectRef<DeletedEvidence>("DeleteEvidencePayload").implement({
  description: "A deleted evidence item: its id, to evict it from a cache, and the control or vendor it was about, to refresh.",
  fields: (t) => ({
    deletedId: t.exposeID("deletedId", { description: "Id of the deleted evidence" }),
    controlId: t.exposeID("controlId", { nullable: true, ...graphOnly, description: "The control it was evidence of" }),
    vendorId: t.exposeID("vendorId", { nullable: true, ...graphOnly, description: "The vendor it was about" }),
  }),
});

builder.mutationField("deleteEvidence", (t) =>
  t.field({
    type: DeleteEvidencePayload,
    description:
      "Delete an evidence item with its file; the file's object is deleted once the deletion has committed. Over REST, 204. Needs `control:update` (a vendor's: `vendor:update`).",
    args: { id: t.arg.id({ required: true, ...limited("The evidence id", commonLimits.id) }) },
    resolve: (_root, args, ctx) => ctx.services.evidence.delete(authenticated(ctx), args.id),
  }),
);
